/**
 * `/api/v1/pools/:poolId/oidc-trusts`: owners add, list and remove the OIDC issuers a pool
 * trusts; bad input is a 400 that changes nothing; loopback http issuers only with the
 * development flag; another org's pool or trust is 404; every route is in the auth matrix.
 */
import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { newApp } from "../../src/app.ts";
import { systemClock } from "../../src/deps.ts";
import { BASE, type ErrorBody, requestJson } from "./helpers/api.ts";
import { describeAuth } from "./helpers/auth-matrix.ts";
import { snapshotD1 } from "./helpers/d1-snapshot.ts";
import { seedOrg } from "./helpers/fixtures.ts";
import { addTrust, type TrustBody } from "./helpers/oidc.ts";
import { seedPool } from "./helpers/pools.ts";

const GOOD = {
  issuer: "https://token.actions.githubusercontent.com",
  audience: "outpost",
  claims: { sub: "repo:acme/infra:*", repository_owner: "acme" },
};

describe("POST/GET/DELETE /api/v1/pools/:poolId/oidc-trusts", () => {
  it("adds a trust, lists it, removes it, with audit events", async () => {
    const org = await seedOrg();
    const { poolId } = await seedPool(org);
    const trust = await addTrust(org, poolId, { ...GOOD });
    expect(trust).toMatchObject({ ...GOOD, poolId });
    expect(trust.id).toMatch(/^otr_[a-z2-7]{26}$/);
    const listed = await requestJson<{ trusts: TrustBody[] }>(
      `/api/v1/pools/${poolId}/oidc-trusts`,
      {
        token: org.ownerToken,
      },
    );
    expect(listed.body.trusts).toEqual([expect.objectContaining({ id: trust.id, ...GOOD })]);
    const removed = await requestJson(`/api/v1/pools/${poolId}/oidc-trusts/${trust.id}`, {
      method: "DELETE",
      token: org.ownerToken,
    });
    expect(removed.status).toBe(200);
    expect(removed.body).toEqual({ revokedTokenIds: [] });
    const after = await requestJson<{ trusts: TrustBody[] }>(
      `/api/v1/pools/${poolId}/oidc-trusts`,
      {
        token: org.ownerToken,
      },
    );
    expect(after.body.trusts).toEqual([]);
    const audit = await env.DB.prepare(
      "SELECT action FROM audit_events WHERE target_id = ? ORDER BY created_at",
    )
      .bind(trust.id)
      .all<{ action: string }>();
    expect(audit.results.map((r) => r.action)).toEqual(["oidc_trust.create", "oidc_trust.delete"]);
  });

  it("refuses bad input with 400 naming the field, changing nothing", async () => {
    const org = await seedOrg();
    const { poolId } = await seedPool(org);
    const cases: [Record<string, unknown>, string][] = [
      [{ ...GOOD, issuer: "http://issuer.example.com" }, "json.issuer"],
      [{ ...GOOD, issuer: "https://issuer.example.com/?x=1" }, "json.issuer"],
      [{ ...GOOD, issuer: "https://user:pw@issuer.example.com" }, "json.issuer"],
      [{ ...GOOD, issuer: "not a url" }, "json.issuer"],
      [{ ...GOOD, audience: "" }, "json.audience"],
      [{ ...GOOD, claims: {} }, "json.claims"],
      [{ ...GOOD, claims: { sub: "*" } }, "json.claims"],
      [{ ...GOOD, claims: { aud: "x" } }, "json.claims.aud"],
      [{ ...GOOD, claims: { sub: 5 } }, "json.claims.sub"],
      [{ ...GOOD, claims: { "bad name!": "x" } }, "json.claims"],
      [{ issuer: GOOD.issuer, audience: "x" }, "json.claims"],
      [{ ...GOOD, extra: 1 }, "json"],
    ];
    for (const [body, path] of cases) {
      const before = await snapshotD1();
      const res = await requestJson<ErrorBody>(`/api/v1/pools/${poolId}/oidc-trusts`, {
        method: "POST",
        token: org.ownerToken,
        body,
      });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error.issues?.map((i) => i.path).join(" ")).toContain(path);
      expect(await snapshotD1()).toEqual(before);
    }
  });

  it("accepts loopback http issuers only when the deployment sets OIDC_ALLOW_LOOPBACK_ISSUERS", async () => {
    const org = await seedOrg();
    const { poolId } = await seedPool(org);
    const body = { ...GOOD, issuer: "http://127.0.0.1:9999/issuer" };
    const production = { ...env, OIDC_ALLOW_LOOPBACK_ISSUERS: "false" };
    const ctx = createExecutionContext();
    const refused = await newApp(systemClock).fetch(
      new Request(`${BASE}/api/v1/pools/${poolId}/oidc-trusts`, {
        method: "POST",
        headers: { authorization: `Bearer ${org.ownerToken}`, "content-type": "application/json" },
        body: JSON.stringify(body),
      }),
      production,
      ctx,
    );
    await waitOnExecutionContext(ctx);
    expect(refused.status).toBe(400);
    expect(await refused.text()).toContain("OIDC_ALLOW_LOOPBACK_ISSUERS");
    expect((await addTrust(org, poolId, body)).issuer).toBe(body.issuer);
  });

  it("answers 404 for an unknown pool or trust, and 400 for malformed ids", async () => {
    const org = await seedOrg();
    const { poolId } = await seedPool(org);
    const missing = `pool_${"a".repeat(26)}`;
    const res = await requestJson<ErrorBody>(`/api/v1/pools/${missing}/oidc-trusts`, {
      method: "POST",
      token: org.ownerToken,
      body: GOOD,
    });
    expect(res.status).toBe(404);
    const gone = await requestJson(`/api/v1/pools/${poolId}/oidc-trusts/otr_${"a".repeat(26)}`, {
      method: "DELETE",
      token: org.ownerToken,
    });
    expect(gone.status).toBe(404);
    const bad = await requestJson(`/api/v1/pools/${poolId}/oidc-trusts/atok_nope`, {
      method: "DELETE",
      token: org.ownerToken,
    });
    expect(bad.status).toBe(400);
  });

  it("deleting the pool deletes its trusts", async () => {
    const org = await seedOrg();
    const { poolId } = await seedPool(org);
    const trust = await addTrust(org, poolId, GOOD);
    const res = await requestJson(`/api/v1/pools/${poolId}`, {
      method: "DELETE",
      token: org.ownerToken,
    });
    expect(res.status).toBe(204);
    const row = await env.DB.prepare("SELECT id FROM oidc_trusts WHERE id = ?")
      .bind(trust.id)
      .first();
    expect(row).toBeNull();
  });
});

describeAuth("POST /api/v1/pools/:poolId/oidc-trusts", {
  role: "owner",
  target: async (org) => ({
    method: "POST",
    path: `/api/v1/pools/${(await seedPool(org)).poolId}/oidc-trusts`,
    body: GOOD,
  }),
});
describeAuth("GET /api/v1/pools/:poolId/oidc-trusts", {
  role: "owner",
  target: async (org) => ({
    method: "GET",
    path: `/api/v1/pools/${(await seedPool(org)).poolId}/oidc-trusts`,
  }),
});
describeAuth("DELETE /api/v1/pools/:poolId/oidc-trusts/:trustId", {
  role: "owner",
  target: async (org) => {
    const { poolId } = await seedPool(org);
    const trust = await addTrust(org, poolId, GOOD);
    return { method: "DELETE", path: `/api/v1/pools/${poolId}/oidc-trusts/${trust.id}` };
  },
});
