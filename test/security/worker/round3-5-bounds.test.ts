/**
 * Round three, finding 5: nothing bounded what one credential could obtain. Replaying one JWT 300
 * times gave 300 live agent tokens, one agent token registered 500 agents, one capacity-1 agent
 * held 400 long-polls. Now a replayed token is refused while it is valid, exchanges are limited
 * per pool and subject, live agents per token and held polls per agent are capped, with 429s.
 */
import { describe, expect, it, vi } from "vitest";
import { type ErrorBody, request, requestJson } from "../../worker/helpers/api.ts";
import { seedOrg } from "../../worker/helpers/fixtures.ts";
import { addTrust, exchange, TestIssuer } from "../../worker/helpers/oidc.ts";
import { registerAgent, seedPool } from "../../worker/helpers/pools.ts";
import { auditLog, deploymentWith, expectRejected, refusalInAudit } from "./round3.ts";

vi.setConfig({ testTimeout: 60_000 });

const AUDIENCE = "outpost-agents";

async function trusted() {
  const org = await seedOrg();
  const pool = await seedPool(org);
  const issuer = await TestIssuer.create();
  await addTrust(org, pool.poolId, {
    issuer: issuer.url,
    audience: AUDIENCE,
    claims: { sub: "ci:*" },
  });
  return { org, pool, issuer };
}

describe("OIDC exchanges", () => {
  it("refuse a replayed token while it is valid, with or without a jti", async () => {
    const { org, pool, issuer } = await trusted();
    for (const claims of [{}, { jti: undefined }]) {
      const token = await issuer.sign({ aud: AUDIENCE, sub: "ci:a", ...claims });
      expect((await exchange(pool.poolId, token)).status).toBe(200);
      const requestId = expectRejected(await exchange(pool.poolId, token));
      expect((await refusalInAudit(org, pool.poolId, requestId)).reason).toBe("replayed_token");
    }
  });

  it("let an agent's own chain renew with the token it already used (the platform has not rotated it yet)", async () => {
    const { pool, issuer } = await trusted();
    const token = await issuer.sign({ aud: AUDIENCE, sub: "ci:a" });
    const first = await exchange(pool.poolId, token);
    expect(first.status).toBe(200);
    const renewed = await exchange(pool.poolId, token, { previous: first.body.token });
    expect(renewed.status, JSON.stringify(renewed.body)).toBe(200);
    // Without the chain's token, it is a replay.
    expectRejected(await exchange(pool.poolId, token));
  });

  it("are limited to 30 a minute per pool and subject, with a 429 and Retry-After", async () => {
    const { pool, issuer } = await trusted();
    for (let i = 0; i < 30; i++) {
      const res = await exchange(
        pool.poolId,
        await issuer.sign({ aud: AUDIENCE, sub: "ci:flood" }),
      );
      expect(res.status, `exchange ${i}`).toBe(200);
    }
    const token = await issuer.sign({ aud: AUDIENCE, sub: "ci:flood" });
    const res = await request("/agent/v1/oidc/exchange", {
      method: "POST",
      body: { poolId: pool.poolId, oidcToken: token },
    });
    expect(res.status).toBe(429);
    expect(res.headers.get("retry-after")).toBe("60");
    expect(((await res.json()) as ErrorBody).error.code).toBe("RATE_LIMITED");
    // Another subject of the same pool is not held back.
    expect(
      (await exchange(pool.poolId, await issuer.sign({ aud: AUDIENCE, sub: "ci:other" }))).status,
    ).toBe(200);
  });
});

describe("refused exchanges", () => {
  const deployment = deploymentWith({});

  it("are recorded in the pool's audit log at most 30 a minute, and refused all the same", async () => {
    const { org, pool, issuer } = await trusted();
    const requestIds: string[] = [];
    for (let i = 0; i < 35; i++) {
      const res = await exchange(pool.poolId, await issuer.sign({ aud: "wrong", sub: "ci:x" }));
      requestIds.push(expectRejected(res));
    }
    const recorded = await auditLog(org, {
      action: "agent_token.oidc_refused",
      targetId: pool.poolId,
    });
    expect(recorded.map((e) => e.data?.requestId).sort()).toEqual(requestIds.slice(0, 30).sort());

    // A minute later the pool's owners see refusals again.
    deployment.advance(61_000);
    const later = expectRejected(
      await exchange(pool.poolId, await issuer.sign({ aud: "wrong", sub: "ci:x" })),
    );
    expect((await refusalInAudit(org, pool.poolId, later)).message).toMatch(/audience/);
  });
});

describe("one agent token", () => {
  it("registers at most 50 live agents", async () => {
    const org = await seedOrg();
    const pool = await seedPool(org);
    for (let i = 0; i < 50; i++) {
      await registerAgent(pool.token);
    }
    const res = await requestJson<ErrorBody>("/agent/v1/register", {
      method: "POST",
      token: pool.token,
      body: { version: "0.1.0", os: "linux", arch: "amd64" },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(429);
    expect(res.body.error.message).toContain("50 live agents");
  });
});

describe("one agent", () => {
  it("holds at most as many polls as its capacity", async () => {
    const org = await seedOrg();
    const pool = await seedPool(org);
    const agentId = await registerAgent(pool.token, { capacity: 1 });
    const poll = (wait: number) =>
      request(`/agent/v1/jobs/next?wait=${wait}`, {
        method: "POST",
        token: pool.token,
        headers: { "outpost-agent-id": agentId },
      });
    const held = poll(3);
    await expect
      .poll(async () => (await poll(0)).status, { timeout: 2_500, interval: 50 })
      .toBe(429);
    expect((await held).status).toBe(204);
    // Once the held poll has ended, the agent may poll again.
    expect((await poll(0)).status).toBe(204);
  });
});
