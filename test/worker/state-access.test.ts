/**
 * Who may use the state backend: the auth matrix of every route (basic auth with the token as
 * password), per-run tokens, execution modes, the workspace user lock, and run locks that end
 * with their job.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { releaseRunStateLocks } from "../../src/state/locks.ts";
import { describeAuth } from "./helpers/auth-matrix.ts";
import { snapshotD1 } from "./helpers/d1-snapshot.ts";
import { deps, seedOrg, type TestOrg } from "./helpers/fixtures.ts";
import {
  BackendClient,
  basicAuth,
  lockInfo,
  seedRun,
  seedWorkspace,
  stateJson,
} from "./helpers/state-fixtures.ts";

const state = stateJson({ serial: 1, lineage: "auth-lineage" });

async function lockedWorkspace(org: TestOrg): Promise<string> {
  const ws = await seedWorkspace(org);
  await new BackendClient(ws, org.tokens.member).lock(lockInfo());
  return ws;
}

const routes: {
  name: string;
  role: "reader" | "member" | "admin";
  target: (org: TestOrg) => Promise<{ method: string; path: string; body?: string }>;
}[] = [
  {
    name: "GET /state/v1/:workspaceId",
    role: "reader",
    target: async (org) => ({ method: "GET", path: `/state/v1/${await seedWorkspace(org)}` }),
  },
  {
    name: "POST /state/v1/:workspaceId",
    role: "member",
    target: async (org) => ({
      method: "POST",
      path: `/state/v1/${await seedWorkspace(org)}`,
      body: state,
    }),
  },
  {
    name: "PUT /state/v1/:workspaceId",
    role: "member",
    target: async (org) => ({
      method: "PUT",
      path: `/state/v1/${await seedWorkspace(org)}`,
      body: state,
    }),
  },
  {
    name: "DELETE /state/v1/:workspaceId",
    role: "admin",
    target: async (org) => {
      const ws = await seedWorkspace(org);
      await new BackendClient(ws, org.tokens.member).put(state);
      return { method: "DELETE", path: `/state/v1/${ws}` };
    },
  },
  ...[
    "LOCK /state/v1/:workspaceId",
    "LOCK /state/v1/:workspaceId/lock",
    "POST /state/v1/:workspaceId/lock",
  ].map((name) => ({
    name,
    role: "member" as const,
    target: async (org: TestOrg) => ({
      method: name.split(" ")[0] ?? "",
      path: (name.split(" ")[1] ?? "").replace(":workspaceId", await seedWorkspace(org)),
      body: JSON.stringify(lockInfo()),
    }),
  })),
  ...[
    "UNLOCK /state/v1/:workspaceId",
    "UNLOCK /state/v1/:workspaceId/unlock",
    "POST /state/v1/:workspaceId/unlock",
  ].map((name) => ({
    name,
    role: "member" as const,
    target: async (org: TestOrg) => ({
      method: name.split(" ")[0] ?? "",
      path: (name.split(" ")[1] ?? "").replace(":workspaceId", await lockedWorkspace(org)),
      body: "",
    }),
  })),
];

for (const route of routes) {
  describeAuth(route.name, {
    role: route.role,
    target: async (org) => {
      const target = await route.target(org);
      return { ...target, headers: { "content-type": "application/json" } };
    },
    authScheme: (token) => basicAuth(token),
  });
}

describe("per-run tokens", () => {
  it("read and write their own workspace's state; writes record the run", async () => {
    const org = await seedOrg();
    const ws = await seedWorkspace(org, { executionMode: "agent" });
    const run = await seedRun(org, ws);
    const tf = new BackendClient(ws, run.token);
    expect((await tf.lock()).status).toBe(200);
    expect((await tf.put(state)).status).toBe(200);
    expect((await tf.get()).status).toBe(200);
    expect((await tf.unlock()).status).toBe(200);
    const row = await env.DB.prepare(
      "SELECT run_id, created_by FROM state_versions WHERE workspace_id = ?",
    )
      .bind(ws)
      .first();
    // A seeded run has nobody who queued or confirmed it: the run itself is the writer.
    expect(row).toEqual({
      run_id: run.runId,
      created_by: JSON.stringify({ type: "run", id: run.runId, name: `run ${run.runId}` }),
    });
  });

  it("reach nothing of another workspace of the org that does not share its state (404)", async () => {
    const org = await seedOrg();
    const own = await seedWorkspace(org, { executionMode: "agent" });
    const other = await seedWorkspace(org);
    await new BackendClient(other, org.tokens.member).put(state);
    const run = await seedRun(org, own);
    const tf = new BackendClient(other, run.token);
    const before = await snapshotD1();
    expect((await tf.get()).status).toBe(404);
    expect((await tf.put(stateJson({ serial: 2, lineage: "auth-lineage" }))).status).toBe(404);
    expect((await tf.lock()).status).toBe(404);
    expect((await tf.send("DELETE", tf.address)).status).toBe(404);
    expect(await snapshotD1()).toEqual(before);
  });

  it("answer 404 for another organization's workspace", async () => {
    const org = await seedOrg();
    const other = await seedOrg();
    const ws = await seedWorkspace(org);
    const run = await seedRun(other, await seedWorkspace(other));
    expect((await new BackendClient(ws, run.token).get()).status).toBe(404);
  });

  it("are dead once the run is terminal or the token revoked (401 TOKEN_REVOKED)", async () => {
    const org = await seedOrg();
    const ws = await seedWorkspace(org, { executionMode: "agent" });
    const ended = await seedRun(org, ws, "applied");
    const res = await new BackendClient(ws, ended.token).get();
    expect(res.status).toBe(401);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe("TOKEN_REVOKED");
    const revoked = await seedRun(org, ws);
    await env.DB.prepare("UPDATE run_tokens SET revoked_at = 1 WHERE id = ?")
      .bind(revoked.tokenId)
      .run();
    expect((await new BackendClient(ws, revoked.token).get()).status).toBe(401);
  });

  it("a run holding the lock may write without ?ID (the coordinator-owned run)", async () => {
    const org = await seedOrg();
    const ws = await seedWorkspace(org, { executionMode: "agent" });
    const run = await seedRun(org, ws);
    const tf = new BackendClient(ws, run.token);
    await tf.lock();
    const bare = new BackendClient(ws, run.token);
    expect((await bare.put(state)).status).toBe(200);
  });
});

describe("execution mode", () => {
  it("org tokens read but never write or lock an agent-mode workspace (403)", async () => {
    const org = await seedOrg();
    const ws = await seedWorkspace(org, { executionMode: "agent" });
    const member = new BackendClient(ws, org.tokens.owner);
    expect((await member.get()).status).toBe(204);
    const res = await member.put(state);
    expect(res.status).toBe(403);
    expect(await res.text()).toContain("execution mode");
    expect((await member.lock()).status).toBe(403);
  });

  it("an admin may still force-unlock an agent-mode workspace's lock held by a run", async () => {
    const org = await seedOrg();
    const ws = await seedWorkspace(org, { executionMode: "agent" });
    const run = await seedRun(org, ws);
    await new BackendClient(ws, run.token).lock();
    expect((await new BackendClient(ws, org.tokens.admin).terraformForceUnlock()).status).toBe(200);
  });
});

async function memberTokenId(org: TestOrg): Promise<string> {
  const row = await env.DB.prepare("SELECT id FROM org_tokens WHERE org_id = ? AND role = 'member'")
    .bind(org.orgId)
    .first<{ id: string }>();
  return row?.id ?? "";
}

describe("the workspace user lock", () => {
  it("refuses LOCK (423 naming the holder) and writes (409) from anyone but the holder", async () => {
    const org = await seedOrg();
    const holder = await memberTokenId(org);
    const ws = await seedWorkspace(org, { lockedBy: holder });
    const admin = new BackendClient(ws, org.tokens.admin);
    const before = await snapshotD1();
    const lock = await admin.lock();
    expect(lock.status).toBe(423);
    expect(await lock.json()).toMatchObject({ Who: holder, ID: `workspace-lock:${holder}` });
    const write = await admin.put(state);
    expect(write.status).toBe(409);
    expect(await write.text()).toContain(`locked by ${holder}`);
    expect(await snapshotD1()).toEqual(before);
    const owner = new BackendClient(ws, org.tokens.member);
    expect((await owner.lock()).status).toBe(200);
    expect((await owner.put(state)).status).toBe(200);
  });

  it("a workspace locked by a run lets only that run write", async () => {
    const org = await seedOrg();
    const ws = await seedWorkspace(org);
    const run = await seedRun(org, ws);
    await env.DB.prepare("UPDATE workspaces SET locked_by = ? WHERE id = ?")
      .bind(run.runId, ws)
      .run();
    expect((await new BackendClient(ws, org.tokens.member).put(state)).status).toBe(409);
    expect((await new BackendClient(ws, run.token).put(state)).status).toBe(200);
  });
});

describe("run locks end with the job", () => {
  it("releaseRunStateLocks releases the run's lock, audits it, and is idempotent", async () => {
    const org = await seedOrg();
    const ws = await seedWorkspace(org, { executionMode: "agent" });
    const run = await seedRun(org, ws);
    await new BackendClient(ws, run.token).lock();
    expect(await releaseRunStateLocks(deps, run.runId)).toBe(1);
    expect(await releaseRunStateLocks(deps, run.runId)).toBe(0);
    expect(
      await env.DB.prepare("SELECT * FROM state_locks WHERE workspace_id = ?").bind(ws).first(),
    ).toBeNull();
    const audit = await env.DB.prepare("SELECT action, actor FROM audit_events WHERE target_id = ?")
      .bind(ws)
      .all();
    expect(audit.results).toEqual([{ action: "state.lock.release", actor: "system" }]);
  });

  it("a lock left by a run whose agent died is released when the next run locks", async () => {
    const org = await seedOrg();
    const ws = await seedWorkspace(org, { executionMode: "agent" });
    const dead = await seedRun(org, ws);
    await new BackendClient(ws, dead.token).lock();
    const next = await seedRun(org, ws);
    expect((await new BackendClient(ws, next.token).lock()).status).toBe(423);
    await env.DB.prepare("UPDATE runs SET status = 'errored' WHERE id = ?").bind(dead.runId).run();
    expect((await new BackendClient(ws, next.token).lock()).status).toBe(200);
    const lock = await env.DB.prepare("SELECT run_id FROM state_locks WHERE workspace_id = ?")
      .bind(ws)
      .first();
    expect(lock).toEqual({ run_id: next.runId });
  });
});
