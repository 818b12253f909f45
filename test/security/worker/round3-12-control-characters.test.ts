/**
 * Round three, finding 12: OIDC subjects and agent register fields kept control characters, so
 * `ESC]0;…BEL` travelled to the dashboard, the audit log and the CLI. Both are refused at input.
 */
import { describe, expect, it } from "vitest";
import { type ErrorBody, requestJson } from "../../worker/helpers/api.ts";
import { seedOrg } from "../../worker/helpers/fixtures.ts";
import { addTrust, exchange, TestIssuer } from "../../worker/helpers/oidc.ts";
import { seedPool } from "../../worker/helpers/pools.ts";
import { expectRejected, refusalInAudit } from "./round3.ts";

const ESCAPE = "\u001b]0;pwned\u0007";

describe("control characters at input", () => {
  it("an OIDC token whose sub holds them is refused, and no token named after it is issued", async () => {
    const org = await seedOrg();
    const pool = await seedPool(org);
    const issuer = await TestIssuer.create();
    await addTrust(org, pool.poolId, {
      issuer: issuer.url,
      audience: "outpost-agents",
      claims: { sub: "ci:*" },
    });
    const token = await issuer.sign({ aud: "outpost-agents", sub: `ci:${ESCAPE}` });
    const requestId = expectRejected(await exchange(pool.poolId, token));
    expect(await refusalInAudit(org, pool.poolId, requestId)).toMatchObject({
      reason: "malformed_token",
      message: expect.stringContaining("control characters"),
    });
    const fine = await exchange(
      pool.poolId,
      await issuer.sign({ aud: "outpost-agents", sub: "ci:ok" }),
    );
    expect(fine.status).toBe(200);
  });

  it("an agent registering with them in its name, version, os or arch is refused with 400", async () => {
    const org = await seedOrg();
    const pool = await seedPool(org);
    const base = { name: "dc1", version: "0.1.0", os: "linux", arch: "amd64" };
    for (const field of ["name", "version", "os", "arch"] as const) {
      const res = await requestJson<ErrorBody>("/agent/v1/register", {
        method: "POST",
        token: pool.token,
        body: { ...base, [field]: `x${ESCAPE}` },
      });
      expect(res.status, `${field}: ${JSON.stringify(res.body)}`).toBe(400);
      expect(res.body.error.message).toContain("control characters");
    }
    const ok = await requestJson("/agent/v1/register", {
      method: "POST",
      token: pool.token,
      body: base,
    });
    expect(ok.status).toBe(201);
  });
});
