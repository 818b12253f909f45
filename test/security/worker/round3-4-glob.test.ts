/**
 * Round three, finding 4: trust claim patterns compiled `*` to `.*` and backtracked, so one
 * organization's trust (`*a*a*a*a*b`) against a long `sub` stalled the Worker for everyone (five
 * stars against 200 characters did not finish in 120 s). Matching is now linear, a pattern holds
 * at most 8 stars, and a claim over 1024 characters never matches.
 */
import { describe, expect, it, vi } from "vitest";
import { type ErrorBody, requestJson } from "../../worker/helpers/api.ts";
import { seedOrg } from "../../worker/helpers/fixtures.ts";
import { addTrust, exchange, TestIssuer } from "../../worker/helpers/oidc.ts";
import { seedPool } from "../../worker/helpers/pools.ts";
import { expectRejected, refusalInAudit } from "./round3.ts";

// A backtracking matcher never finishes these; a linear one answers in milliseconds.
vi.setConfig({ testTimeout: 20_000 });

const AUDIENCE = "outpost-agents";

async function poolTrusting(claims: Record<string, string>) {
  const org = await seedOrg();
  const pool = await seedPool(org);
  const issuer = await TestIssuer.create();
  await addTrust(org, pool.poolId, { issuer: issuer.url, audience: AUDIENCE, claims });
  return { org, poolId: pool.poolId, issuer };
}

describe("trust claim patterns", () => {
  it("match in linear time: a hostile pattern against a long subject is refused at once, and /healthz never waits", async () => {
    const { org, poolId, issuer } = await poolTrusting({ sub: "*a*a*a*a*a*a*a*b" });
    const token = await issuer.sign({ aud: AUDIENCE, sub: "a".repeat(1000) });
    const [refused, health] = await Promise.all([exchange(poolId, token), requestJson("/healthz")]);
    expect(health.status).toBe(200);
    const requestId = expectRejected(refused);
    expect((await refusalInAudit(org, poolId, requestId)).reason).toBe("claim_mismatch");
  });

  it("still mean what they say: * is any run of characters, parts in order, anchored at both ends", async () => {
    const { poolId, issuer } = await poolTrusting({ sub: "repo:acme/*:ref:refs/heads/*" });
    const sign = (sub: string) => issuer.sign({ aud: AUDIENCE, sub });
    for (const sub of [
      "repo:acme/infra:ref:refs/heads/main",
      "repo:acme/a:ref:refs/heads/:ref:refs/heads/x",
      "repo:acme/:ref:refs/heads/",
    ]) {
      expect((await exchange(poolId, await sign(sub))).status, sub).toBe(200);
    }
    for (const sub of [
      "xrepo:acme/infra:ref:refs/heads/main",
      "repo:acme/infra:ref:refs/tags/v1",
      "repo:acme/infra",
      "repo:other/infra:ref:refs/heads/main",
    ]) {
      expect((await exchange(poolId, await sign(sub))).status, sub).toBe(401);
    }
  });

  it("overlapping parts do not match twice: a*a needs two a's", async () => {
    const { poolId, issuer } = await poolTrusting({ sub: "a*a" });
    expect((await exchange(poolId, await issuer.sign({ aud: AUDIENCE, sub: "a" }))).status).toBe(
      401,
    );
    expect((await exchange(poolId, await issuer.sign({ aud: AUDIENCE, sub: "aa" }))).status).toBe(
      200,
    );
  });

  it("hold at most 8 stars, and a claim over 1024 characters never matches", async () => {
    const org = await seedOrg();
    const pool = await seedPool(org);
    const issuer = await TestIssuer.create();
    const res = await requestJson<ErrorBody>(`/api/v1/pools/${pool.poolId}/oidc-trusts`, {
      method: "POST",
      token: org.ownerToken,
      body: { issuer: issuer.url, audience: AUDIENCE, claims: { sub: "a*b*c*d*e*f*g*h*i*j" } },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(400);
    expect(res.body.error.message).toContain("at most 8 *");

    const wide = await poolTrusting({ sub: "ci:*" });
    const long = await wide.issuer.sign({ aud: AUDIENCE, sub: `ci:${"x".repeat(1100)}` });
    const requestId = expectRejected(await exchange(wide.poolId, long));
    expect((await refusalInAudit(wide.org, wide.poolId, requestId)).reason).toBe("claim_mismatch");
  });
});
