/**
 * Round three, findings 6 and 7: discovery documents and key sets were read whole (a 100 MiB
 * JWKS was fetched, parsed and cached), and an issuer or `jwks_uri` could be an IP literal, a
 * private, link-local or metadata address, which the coordinator then fetched for anyone holding
 * a garbage token. Now both bodies are read with a byte cap (and the key set with a key-count
 * cap), and issuers and endpoints must be https to public host names (loopback only under the
 * development flag these tests run with).
 */
import { describe, expect, it, vi } from "vitest";
import { type ErrorBody, requestJson } from "../../worker/helpers/api.ts";
import { seedOrg } from "../../worker/helpers/fixtures.ts";
import { addTrust, exchange, rsaKey, TestIssuer } from "../../worker/helpers/oidc.ts";
import { seedPool } from "../../worker/helpers/pools.ts";
import { expectRejected, refusalInAudit } from "./round3.ts";

vi.setConfig({ testTimeout: 30_000 });

const AUDIENCE = "outpost-agents";

/** A hostile issuer of the loopback host (`suffix` picks its behaviour), trusted by a new pool. */
async function hostile(suffix: string) {
  const org = await seedOrg();
  const pool = await seedPool(org);
  const issuer = new TestIssuer(
    `h-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 7)}${suffix}`,
  );
  issuer.keys = [await rsaKey("k")];
  await issuer.publish();
  await addTrust(org, pool.poolId, {
    issuer: issuer.url,
    audience: AUDIENCE,
    claims: { sub: "ci" },
  });
  const token = await issuer.sign({ aud: AUDIENCE, sub: "ci" });
  return { org, poolId: pool.poolId, issuer, token };
}

describe("what an issuer serves is read with caps", () => {
  it.each([
    ["-huge", "key set is over 128 KiB"],
    ["-manykeys", "over 32 keys"],
    ["-bigdoc", "discovery document is over 64 KiB"],
    ["-privatejwks", "no usable https jwks_uri"],
  ])("an issuer%s is refused (issuer_unreachable)", async (suffix, why) => {
    const { org, poolId, token } = await hostile(suffix);
    const requestId = expectRejected(await exchange(poolId, token));
    const refusal = await refusalInAudit(org, poolId, requestId);
    expect(refusal.reason).toBe("issuer_unreachable");
    expect(refusal.message).toContain(why);
  });

  it("a key set within the caps still works", async () => {
    const { poolId, token } = await hostile("-plain");
    expect((await exchange(poolId, token)).status).toBe(200);
  });
});

describe("issuer URLs", () => {
  it("must be https to a public host name: no IP literal, private, link-local or metadata name", async () => {
    const org = await seedOrg();
    const pool = await seedPool(org);
    for (const issuer of [
      "https://169.254.169.254/latest",
      "https://10.0.0.5",
      "https://0xa9.254.169.254/",
      "https://167772165/",
      "https://[fd00::1]/",
      "https://metadata.google.internal/computeMetadata",
      "https://printer.local/",
      "https://intranet/",
      "http://token.example.com/",
    ]) {
      const res = await requestJson<ErrorBody>(`/api/v1/pools/${pool.poolId}/oidc-trusts`, {
        method: "POST",
        token: org.ownerToken,
        body: { issuer, audience: AUDIENCE, claims: { sub: "ci" } },
      });
      expect(res.status, `${issuer}: ${JSON.stringify(res.body)}`).toBe(400);
      expect(res.body.error.message, issuer).toMatch(/public host name|https URL|loopback/);
    }
    const fine = await requestJson(`/api/v1/pools/${pool.poolId}/oidc-trusts`, {
      method: "POST",
      token: org.ownerToken,
      body: {
        issuer: "https://token.actions.githubusercontent.com",
        audience: AUDIENCE,
        claims: { sub: "ci" },
      },
    });
    expect(fine.status).toBe(201);
  });
});
