import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { type ErrorBody, request, requestJson } from "./helpers/api.ts";
import { describeAuth } from "./helpers/auth-matrix.ts";
import { snapshotD1 } from "./helpers/d1-snapshot.ts";
import { seedOrg } from "./helpers/fixtures.ts";

type Token = {
  id: string;
  role: string;
  description: string;
  token?: string;
  lastUsedAt: string | null;
};

describe("POST /api/v1/tokens", () => {
  it("creates a token whose secret is shown once and stored only as a hash", async () => {
    const org = await seedOrg();
    const res = await requestJson<Token>("/api/v1/tokens", {
      method: "POST",
      token: org.ownerToken,
      body: { role: "member", description: "ci pipeline" },
    });
    expect(res.status).toBe(201);
    expect(res.body.token).toMatch(/^op_org_[A-Za-z0-9_-]{43}$/);
    expect(res.body).toMatchObject({ role: "member", description: "ci pipeline" });

    const row = await env.DB.prepare("SELECT * FROM org_tokens WHERE id = ?")
      .bind(res.body.id)
      .first<Record<string, unknown>>();
    expect(JSON.stringify(row)).not.toContain(res.body.token);
    expect(row?.token_hash).toMatch(/^[0-9a-f]{64}$/);

    const me = await requestJson("/api/v1/organization", { token: res.body.token });
    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({ id: org.orgId, role: "member" });

    const audit = await env.DB.prepare("SELECT action, actor FROM audit_events WHERE target_id = ?")
      .bind(res.body.id)
      .all();
    expect(audit.results).toEqual([{ action: "org_token.create", actor: org.ownerTokenId }]);
  });

  it("refuses invalid input with field-level issues and changes nothing", async () => {
    const org = await seedOrg();
    const cases: { body: unknown; field: string }[] = [
      { body: { role: "root", description: "x" }, field: "json.role" },
      { body: { role: "member" }, field: "json.description" },
      { body: { role: "member", description: "" }, field: "json.description" },
      { body: { role: 3, description: "x" }, field: "json.role" },
      { body: { role: "member", description: "x", extra: true }, field: "json" },
      { body: [], field: "json" },
    ];
    for (const { body, field } of cases) {
      const before = await snapshotD1();
      const res = await requestJson<ErrorBody>("/api/v1/tokens", {
        method: "POST",
        token: org.ownerToken,
        body,
      });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error.code).toBe("BAD_REQUEST");
      expect(res.body.error.issues?.some((i) => i.path.startsWith(field))).toBe(true);
      expect(await snapshotD1()).toEqual(before);
    }
  });

  it("refuses malformed JSON, a wrong content type and an oversized body", async () => {
    const org = await seedOrg();
    const before = await snapshotD1();
    const malformed = await requestJson<ErrorBody>("/api/v1/tokens", {
      method: "POST",
      token: org.ownerToken,
      body: "{not json",
      headers: { "content-type": "application/json" },
    });
    expect(malformed.status).toBe(400);
    expect(malformed.body.error.code).toBe("BAD_REQUEST");

    const wrongType = await requestJson<ErrorBody>("/api/v1/tokens", {
      method: "POST",
      token: org.ownerToken,
      body: "role=member",
      headers: { "content-type": "application/x-www-form-urlencoded" },
    });
    expect(wrongType.status).toBe(415);
    expect(wrongType.body.error.code).toBe("UNSUPPORTED_MEDIA_TYPE");

    const oversized = await requestJson<ErrorBody>("/api/v1/tokens", {
      method: "POST",
      token: org.ownerToken,
      body: { role: "member", description: "x".repeat(300 * 1024) },
    });
    expect(oversized.status).toBe(413);
    expect(oversized.body.error.code).toBe("PAYLOAD_TOO_LARGE");

    const missing = await requestJson<ErrorBody>("/api/v1/tokens", {
      method: "POST",
      token: org.ownerToken,
    });
    expect(missing.status).toBe(400);
    expect(await snapshotD1()).toEqual(before);
  });
});

describe("GET /api/v1/tokens", () => {
  it("lists active tokens without secrets or hashes", async () => {
    const org = await seedOrg();
    const res = await requestJson<{ tokens: Token[] }>("/api/v1/tokens", { token: org.ownerToken });
    expect(res.status).toBe(200);
    expect(res.body.tokens.map((t) => t.role).sort()).toEqual([
      "admin",
      "member",
      "owner",
      "reader",
    ]);
    const text = JSON.stringify(res.body);
    for (const secret of Object.values(org.tokens)) {
      expect(text).not.toContain(secret);
    }
    expect(text).not.toMatch(/hash/i);
  });

  it("records last use at most once a minute", async () => {
    const org = await seedOrg();
    await request("/api/v1/organization", { token: org.tokens.reader });
    const first = await env.DB.prepare(
      "SELECT last_used_at FROM org_tokens WHERE org_id = ? AND role = 'reader'",
    )
      .bind(org.orgId)
      .first<{ last_used_at: number }>();
    expect(first?.last_used_at).toEqual(expect.any(Number));
    await request("/api/v1/organization", { token: org.tokens.reader });
    const second = await env.DB.prepare(
      "SELECT last_used_at FROM org_tokens WHERE org_id = ? AND role = 'reader'",
    )
      .bind(org.orgId)
      .first<{ last_used_at: number }>();
    expect(second?.last_used_at).toBe(first?.last_used_at);
  });
});

describe("DELETE /api/v1/tokens/:tokenId", () => {
  it("revokes a token: its very next request gets 401 TOKEN_REVOKED", async () => {
    const org = await seedOrg();
    const created = await requestJson<Token>("/api/v1/tokens", {
      method: "POST",
      token: org.ownerToken,
      body: { role: "admin", description: "to revoke" },
    });
    const secret = created.body.token ?? "";
    expect((await request("/api/v1/organization", { token: secret })).status).toBe(200);
    const revoked = await requestJson(`/api/v1/tokens/${created.body.id}`, {
      method: "DELETE",
      token: org.ownerToken,
    });
    expect(revoked.status).toBe(200);
    const after = await requestJson<ErrorBody>("/api/v1/organization", { token: secret });
    expect(after.status).toBe(401);
    expect(after.body.error.code).toBe("TOKEN_REVOKED");
    const list = await requestJson<{ tokens: Token[] }>("/api/v1/tokens", {
      token: org.ownerToken,
    });
    expect(list.body.tokens.map((t) => t.id)).not.toContain(created.body.id);
    const audit = await env.DB.prepare(
      "SELECT action FROM audit_events WHERE target_id = ? ORDER BY created_at",
    )
      .bind(created.body.id)
      .all();
    expect(audit.results.map((r) => r.action)).toEqual(["org_token.create", "org_token.revoke"]);
  });

  it("refuses to revoke the last owner token (409) and changes nothing", async () => {
    const org = await seedOrg();
    const list = await requestJson<{ tokens: Token[] }>("/api/v1/tokens", {
      token: org.ownerToken,
    });
    const owner = list.body.tokens.find((t) => t.role === "owner");
    const before = await snapshotD1();
    const res = await requestJson<ErrorBody>(`/api/v1/tokens/${owner?.id}`, {
      method: "DELETE",
      token: org.ownerToken,
    });
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe("CONFLICT");
    expect(await snapshotD1()).toEqual(before);
  });

  it("answers 400 for an id that is not a token id and 404 for an unknown one", async () => {
    const org = await seedOrg();
    const bad = await requestJson<ErrorBody>("/api/v1/tokens/ws_nope", {
      method: "DELETE",
      token: org.ownerToken,
    });
    expect(bad.status).toBe(400);
    expect(bad.body.error.issues?.[0]?.path).toBe("param.tokenId");
    const unknown = await requestJson<ErrorBody>(`/api/v1/tokens/tok_${"a".repeat(26)}`, {
      method: "DELETE",
      token: org.ownerToken,
    });
    expect(unknown.status).toBe(404);
  });
});

describeAuth("POST /api/v1/tokens", {
  role: "owner",
  hasOrgIds: false,
  target: () => ({
    method: "POST",
    path: "/api/v1/tokens",
    body: { role: "reader", description: "x" },
  }),
});
describeAuth("GET /api/v1/tokens", {
  role: "owner",
  hasOrgIds: false,
  target: () => ({ method: "GET", path: "/api/v1/tokens" }),
});
describeAuth("DELETE /api/v1/tokens/:tokenId", {
  role: "owner",
  target: async (org) => {
    const res = await requestJson<{ tokens: Token[] }>("/api/v1/tokens", { token: org.ownerToken });
    const reader = res.body.tokens.find((t) => t.role === "reader");
    return { method: "DELETE", path: `/api/v1/tokens/${reader?.id}` };
  },
});
describeAuth("GET /api/v1/organization", {
  role: "reader",
  hasOrgIds: false,
  target: () => ({ method: "GET", path: "/api/v1/organization" }),
});
