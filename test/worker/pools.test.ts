import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { PoolStore } from "../../durable/pool-store.ts";
import { poolStub } from "../../src/pools/service.ts";
import { type ErrorBody, request, requestJson } from "./helpers/api.ts";
import { describeAuth } from "./helpers/auth-matrix.ts";
import { useTestClock } from "./helpers/clock.ts";
import { snapshotD1 } from "./helpers/d1-snapshot.ts";
import { seedOrg, type TestOrg } from "./helpers/fixtures.ts";
import { enqueue, makeJob, registerAgent, seedPool } from "./helpers/pools.ts";

type Pool = {
  id: string;
  name: string;
  description: string;
  unknownAfterSeconds: number;
  erroredAfterSeconds: number;
  retentionSeconds: number;
  agents?: { id: string; status: string; runningJobs: unknown[] }[];
  workspaces?: { id: string; name: string }[];
};
type AgentToken = { id: string; token?: string; lastUsedAt: string | null; createdAt: string };

let names = 0;
const uniqueName = () => `dc-${names++}-${Date.now().toString(36)}`;

async function createPool(org: TestOrg, body: Record<string, unknown> = {}) {
  const res = await requestJson<Pool>("/api/v1/pools", {
    method: "POST",
    token: org.ownerToken,
    body: { name: uniqueName(), ...body },
  });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body;
}

/** A workspace row that uses the pool (the workspace API is another feature's). */
async function assignWorkspace(org: TestOrg, poolId: string, name: string): Promise<string> {
  const id = `ws_${Math.random().toString(36).slice(2).padEnd(26, "a").slice(0, 26)}`;
  await env.DB.prepare(
    "INSERT INTO workspaces (id, org_id, name, pool_id, engine_version, updated_at) VALUES (?, ?, ?, ?, '1.9.5', ?)",
  )
    .bind(id, org.orgId, name, poolId, Date.now())
    .run();
  return id;
}

describe("POST /api/v1/pools", () => {
  it("creates a pool with default liveness settings and configures its Durable Object", async () => {
    const org = await seedOrg();
    const pool = await createPool(org, { description: "rack 7" });
    expect(pool).toMatchObject({
      description: "rack 7",
      unknownAfterSeconds: 30,
      erroredAfterSeconds: 300,
      retentionSeconds: 7200,
    });
    expect(pool.id).toMatch(/^pool_[a-z2-7]{26}$/);
    const custom = await createPool(org, { unknownAfterSeconds: 60, retentionSeconds: 600 });
    expect(custom).toMatchObject({
      unknownAfterSeconds: 60,
      erroredAfterSeconds: 300,
      retentionSeconds: 600,
    });
    const settings = await runInDurableObject(poolStub(env, custom.id), (_i, state) =>
      new PoolStore(state.storage.sql).settings.read(),
    );
    expect(settings).toMatchObject({
      unknownAfterMs: 60_000,
      erroredAfterMs: 300_000,
      retentionMs: 600_000,
    });
    const audit = await env.DB.prepare("SELECT action FROM audit_events WHERE target_id = ?")
      .bind(pool.id)
      .all();
    expect(audit.results).toEqual([{ action: "pool.create" }]);
  });

  it("refuses a taken name (409) and invalid input (400), changing nothing", async () => {
    const org = await seedOrg();
    const pool = await createPool(org);
    const cases: { body: unknown; status: number; field?: string }[] = [
      { body: { name: pool.name }, status: 409 },
      { body: { name: "" }, status: 400, field: "json.name" },
      { body: { name: "has space" }, status: 400, field: "json.name" },
      { body: { name: "x".repeat(64) }, status: 400, field: "json.name" },
      {
        body: { name: "ok", unknownAfterSeconds: 1 },
        status: 400,
        field: "json.unknownAfterSeconds",
      },
      {
        body: { name: "ok", erroredAfterSeconds: 1.5 },
        status: 400,
        field: "json.erroredAfterSeconds",
      },
      {
        body: { name: "ok", retentionSeconds: "7200" },
        status: 400,
        field: "json.retentionSeconds",
      },
      { body: { name: "ok", extra: true }, status: 400, field: "json" },
      { body: [], status: 400, field: "json" },
    ];
    for (const c of cases) {
      const before = await snapshotD1();
      const res = await requestJson<ErrorBody>("/api/v1/pools", {
        method: "POST",
        token: org.ownerToken,
        body: c.body,
      });
      expect(res.status, JSON.stringify(c.body)).toBe(c.status);
      if (c.field) {
        expect(res.body.error.issues?.some((i) => i.path.startsWith(c.field ?? ""))).toBe(true);
      }
      expect(await snapshotD1()).toEqual(before);
    }
  });
});

describe("GET /api/v1/pools and /api/v1/pools/:poolId", () => {
  it("lists pools to any role and shows a pool's agents with status and jobs", async () => {
    const org = await seedOrg();
    const pool = await seedPool(org);
    const list = await requestJson<{ pools: Pool[] }>("/api/v1/pools", {
      token: org.tokens.reader,
    });
    expect(list.status).toBe(200);
    expect(list.body.pools.map((p) => p.id)).toEqual([pool.poolId]);

    const agentId = await registerAgent(pool.token, { name: "dc1", capacity: 3 });
    const job = makeJob("ws_show");
    await enqueue(pool.poolId, job);
    await requestJson("/agent/v1/jobs/next", {
      method: "POST",
      token: pool.token,
      headers: { "outpost-agent-id": agentId },
    });
    const wsId = await assignWorkspace(org, pool.poolId, "network");
    const detail = await requestJson<Pool>(`/api/v1/pools/${pool.poolId}`, {
      token: org.tokens.reader,
    });
    expect(detail.status).toBe(200);
    expect(detail.body.workspaces).toEqual([{ id: wsId, name: "network", allowed: true }]);
    expect(detail.body.agents).toEqual([
      {
        id: agentId,
        name: "dc1",
        version: "0.1.0",
        os: "linux",
        arch: "amd64",
        status: "busy",
        statusReason: null,
        capacity: 3,
        acceptedPhases: ["plan", "apply"],
        isolation: null,
        engines: [],
        tokenId: null,
        runningJobs: [{ jobId: job.jobId, phase: "plan", state: "leased" }],
        lastContactAt: expect.any(String),
        registeredAt: expect.any(String),
      },
    ]);
  });

  it("answers 400 for what cannot be an id or a name and 404 in words for an unknown one", async () => {
    const org = await seedOrg();
    expect((await request("/api/v1/pools/no%20pool", { token: org.ownerToken })).status).toBe(400);
    const named = await requestJson<ErrorBody>("/api/v1/pools/ws_nope", { token: org.ownerToken });
    expect(named.status).toBe(404);
    expect(named.body.error.message).toBe("no agent pool named ws_nope in this organization");
    const unknown = await requestJson<ErrorBody>(`/api/v1/pools/pool_${"a".repeat(26)}`, {
      token: org.ownerToken,
    });
    expect(unknown.status).toBe(404);
  });
});

describe("PATCH /api/v1/pools/:poolId", () => {
  it("renames and changes liveness settings, which reach the Durable Object; null resets", async () => {
    const org = await seedOrg();
    const pool = await createPool(org);
    const res = await requestJson<Pool>(`/api/v1/pools/${pool.id}`, {
      method: "PATCH",
      token: org.ownerToken,
      body: { name: "renamed-pool", unknownAfterSeconds: 45, erroredAfterSeconds: 600 },
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      name: "renamed-pool",
      unknownAfterSeconds: 45,
      erroredAfterSeconds: 600,
    });
    const read = () =>
      runInDurableObject(poolStub(env, pool.id), (_i, state) =>
        new PoolStore(state.storage.sql).settings.read(),
      );
    expect(await read()).toMatchObject({ unknownAfterMs: 45_000, erroredAfterMs: 600_000 });
    const reset = await requestJson<Pool>(`/api/v1/pools/${pool.id}`, {
      method: "PATCH",
      token: org.ownerToken,
      body: { unknownAfterSeconds: null },
    });
    expect(reset.body.unknownAfterSeconds).toBe(30);
    expect(await read()).toMatchObject({ unknownAfterMs: 30_000, erroredAfterMs: 600_000 });
  });

  it("refuses an empty patch, bad values and a taken name, changing nothing", async () => {
    const org = await seedOrg();
    const a = await createPool(org);
    const b = await createPool(org);
    for (const [body, status] of [
      [{}, 400],
      [{ retentionSeconds: 10 }, 400],
      [{ erroredAfterSeconds: 7 * 86_400 + 1 }, 400],
      [{ description: 5 }, 400],
      [{ name: a.name }, 409],
    ] as const) {
      const before = await snapshotD1();
      const res = await requestJson<ErrorBody>(`/api/v1/pools/${b.id}`, {
        method: "PATCH",
        token: org.ownerToken,
        body,
      });
      expect(res.status, JSON.stringify(body)).toBe(status);
      expect(await snapshotD1()).toEqual(before);
    }
  });
});

describe("DELETE /api/v1/pools/:poolId", () => {
  it("refuses (409) while workspaces use the pool, naming them, and changes nothing", async () => {
    const org = await seedOrg();
    const pool = await createPool(org);
    await assignWorkspace(org, pool.id, "edge-prod");
    await assignWorkspace(org, pool.id, "core-prod");
    const before = await snapshotD1();
    const res = await requestJson<ErrorBody & { error: { details?: unknown } }>(
      `/api/v1/pools/${pool.id}`,
      { method: "DELETE", token: org.ownerToken },
    );
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe("CONFLICT");
    expect(res.body.error.message).toContain("core-prod, edge-prod");
    expect(res.body.error.details).toEqual({
      workspaces: [
        { id: expect.any(String), name: "core-prod" },
        { id: expect.any(String), name: "edge-prod" },
      ],
    });
    expect(await snapshotD1()).toEqual(before);
  });

  it("deletes an unused pool with its tokens; its agents are told to exit, its jobs error", async () => {
    const org = await seedOrg();
    const pool = await seedPool(org);
    const agentId = await registerAgent(pool.token);
    const job = makeJob("ws_del", { orgId: org.orgId });
    await enqueue(pool.poolId, job);
    const res = await request(`/api/v1/pools/${pool.poolId}`, {
      method: "DELETE",
      token: org.ownerToken,
    });
    expect(res.status).toBe(204);
    expect((await request(`/api/v1/pools/${pool.poolId}`, { token: org.ownerToken })).status).toBe(
      404,
    );
    const tokens = await env.DB.prepare("SELECT COUNT(*) AS n FROM agent_tokens WHERE pool_id = ?")
      .bind(pool.poolId)
      .first<{ n: number }>();
    expect(tokens?.n).toBe(0);
    const agentCall = await requestJson<ErrorBody>("/agent/v1/heartbeat", {
      method: "POST",
      token: pool.token,
      headers: { "outpost-agent-id": agentId },
      body: { running: [] },
    });
    expect(agentCall.status).toBe(401);
    // The job's ending reaches the Worker through the JOB_EVENTS queue, within a second.
    await vi.waitFor(
      async () => {
        const audit = await env.DB.prepare(
          "SELECT action, actor FROM audit_events WHERE target_id IN (?, ?) ORDER BY action",
        )
          .bind(pool.poolId, job.jobId)
          .all();
        expect(audit.results).toEqual([
          { action: "job.errored", actor: "system" },
          { action: "pool.create", actor: org.ownerTokenId },
          { action: "pool.delete", actor: org.ownerTokenId },
        ]);
      },
      { timeout: 1_000, interval: 20 },
    );
    expect(await poolStub(env, pool.poolId).enqueue(makeJob("ws_del"))).toEqual({
      ok: false,
      reason: "pool_deleted",
    });
  });
});

describe("agent tokens", () => {
  const clock = useTestClock();

  it("creates (secret once, hash stored), lists with times, and revokes: 401 TOKEN_REVOKED after", async () => {
    const org = await seedOrg();
    const pool = await createPool(org);
    const created = await requestJson<AgentToken>(`/api/v1/pools/${pool.id}/tokens`, {
      method: "POST",
      token: org.ownerToken,
      body: { description: "rack 7 agents" },
    });
    expect(created.status).toBe(201);
    const secret = created.body.token ?? "";
    expect(secret).toMatch(/^op_agent_[A-Za-z0-9_-]{43}$/);
    const row = await env.DB.prepare("SELECT * FROM agent_tokens WHERE id = ?")
      .bind(created.body.id)
      .first<Record<string, unknown>>();
    expect(JSON.stringify(row)).not.toContain(secret);

    const agentId = await registerAgent(secret);
    const list = await requestJson<{ tokens: AgentToken[] }>(`/api/v1/pools/${pool.id}/tokens`, {
      token: org.ownerToken,
    });
    expect(list.body.tokens).toHaveLength(1);
    expect(list.body.tokens[0]).toMatchObject({
      id: created.body.id,
      createdAt: expect.any(String),
    });
    expect(list.body.tokens[0]?.lastUsedAt).toEqual(expect.any(String));
    expect(JSON.stringify(list.body)).not.toContain(secret);

    const revoked = await requestJson<{ exitedAgentIds: string[]; revokedAt: string }>(
      `/api/v1/pools/${pool.id}/tokens/${created.body.id}`,
      { method: "DELETE", token: org.ownerToken },
    );
    expect(revoked.status).toBe(200);
    expect(revoked.body.exitedAgentIds).toEqual([agentId]);
    for (const path of ["/agent/v1/register", "/agent/v1/heartbeat"]) {
      const res = await requestJson<ErrorBody>(path, {
        method: "POST",
        token: secret,
        headers: { "outpost-agent-id": agentId },
        body: path.endsWith("register")
          ? { version: "1", os: "linux", arch: "x" }
          : { running: [] },
      });
      expect(res.status).toBe(401);
      expect(res.body.error.code).toBe("TOKEN_REVOKED");
    }
    const after = await requestJson<{ tokens: AgentToken[] }>(`/api/v1/pools/${pool.id}/tokens`, {
      token: org.ownerToken,
    });
    expect(after.body.tokens).toEqual([]);
    expect((await poolStub(env, pool.id).listAgents())[0]).toMatchObject({ status: "exited" });
  });

  it("writes nothing to D1 for polls and heartbeats; the listing takes their time from the pool", async () => {
    const org = await seedOrg();
    const pool = await seedPool(org);
    const agentId = await registerAgent(pool.token);
    // Registering recorded a use; an hour passes for the Worker, past the once-a-minute
    // resolution, so a poll or heartbeat that recorded its use would write. (The pool's own
    // clock is not moved: the agent stays online, and the pool keeps its contact at real time.)
    clock.advance(3_600_000);
    const before = await env.DB.prepare("SELECT * FROM agent_tokens WHERE id = ?")
      .bind(pool.tokenId)
      .first();
    const snapshot = await snapshotD1();
    const polledAt = Date.now();
    for (let i = 0; i < 5; i++) {
      await request("/agent/v1/jobs/next", {
        method: "POST",
        token: pool.token,
        headers: { "outpost-agent-id": agentId },
      });
      await request("/agent/v1/heartbeat", {
        method: "POST",
        token: pool.token,
        headers: { "outpost-agent-id": agentId },
        body: { running: [] },
      });
    }
    expect(await snapshotD1()).toEqual(snapshot);
    const after = await env.DB.prepare("SELECT * FROM agent_tokens WHERE id = ?")
      .bind(pool.tokenId)
      .first();
    expect(after).toEqual(before);

    const list = await requestJson<{ tokens: AgentToken[] }>(
      `/api/v1/pools/${pool.poolId}/tokens`,
      { token: org.ownerToken },
    );
    expect(list.status).toBe(200);
    const lastUsed = Date.parse(list.body.tokens[0]?.lastUsedAt ?? "");
    expect(lastUsed).toBeGreaterThanOrEqual(polledAt);

    // A call that is not liveness (goodbye) still records the use in D1.
    await request("/agent/v1/goodbye", {
      method: "POST",
      token: pool.token,
      headers: { "outpost-agent-id": agentId },
      body: { reason: "done" },
    });
    const recorded = await env.DB.prepare("SELECT last_used_at FROM agent_tokens WHERE id = ?")
      .bind(pool.tokenId)
      .first<{ last_used_at: number }>();
    expect(recorded?.last_used_at).toBeGreaterThanOrEqual(polledAt);
  });

  it("refuses bad input and answers 404 for unknown pools and tokens", async () => {
    const org = await seedOrg();
    const pool = await createPool(org);
    for (const body of [{}, { description: "" }, { description: "x", role: "owner" }]) {
      const res = await requestJson<ErrorBody>(`/api/v1/pools/${pool.id}/tokens`, {
        method: "POST",
        token: org.ownerToken,
        body,
      });
      expect(res.status).toBe(400);
    }
    const unknownPool = `pool_${"z".repeat(26)}`;
    expect(
      (await request(`/api/v1/pools/${unknownPool}/tokens`, { token: org.ownerToken })).status,
    ).toBe(404);
    expect(
      (
        await request(`/api/v1/pools/${pool.id}/tokens/atok_${"z".repeat(26)}`, {
          method: "DELETE",
          token: org.ownerToken,
        })
      ).status,
    ).toBe(404);
    expect(
      (
        await request(`/api/v1/pools/${pool.id}/tokens/tok_nope`, {
          method: "DELETE",
          token: org.ownerToken,
        })
      ).status,
    ).toBe(404);
  });
});

const poolOf = async (org: TestOrg) => (await seedPool(org)).poolId;

describeAuth("POST /api/v1/pools", {
  role: "owner",
  hasOrgIds: false,
  target: () => ({ method: "POST", path: "/api/v1/pools", body: { name: uniqueName() } }),
});
describeAuth("GET /api/v1/pools", {
  role: "reader",
  hasOrgIds: false,
  target: () => ({ method: "GET", path: "/api/v1/pools" }),
});
describeAuth("GET /api/v1/pools/:poolId", {
  role: "reader",
  target: async (org) => ({ method: "GET", path: `/api/v1/pools/${await poolOf(org)}` }),
});
describeAuth("PATCH /api/v1/pools/:poolId", {
  role: "owner",
  target: async (org) => ({
    method: "PATCH",
    path: `/api/v1/pools/${await poolOf(org)}`,
    body: { description: "changed" },
  }),
});
describeAuth("DELETE /api/v1/pools/:poolId", {
  role: "owner",
  target: async (org) => ({ method: "DELETE", path: `/api/v1/pools/${await poolOf(org)}` }),
});
describeAuth("POST /api/v1/pools/:poolId/tokens", {
  role: "owner",
  target: async (org) => ({
    method: "POST",
    path: `/api/v1/pools/${await poolOf(org)}/tokens`,
    body: { description: "x" },
  }),
});
describeAuth("GET /api/v1/pools/:poolId/tokens", {
  role: "owner",
  target: async (org) => ({ method: "GET", path: `/api/v1/pools/${await poolOf(org)}/tokens` }),
});
describeAuth("DELETE /api/v1/pools/:poolId/tokens/:tokenId", {
  role: "owner",
  target: async (org) => {
    const pool = await seedPool(org);
    return { method: "DELETE", path: `/api/v1/pools/${pool.poolId}/tokens/${pool.tokenId}` };
  },
});
