import { env } from "cloudflare:workers";
import { newId } from "@outpost/common";
import { eq } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { configurationVersions, stateLocks, variables, workspaces } from "../../src/db/schema.ts";
import { type ErrorBody, requestJson } from "./helpers/api.ts";
import { describeAuth } from "./helpers/auth-matrix.ts";
import { snapshotD1 } from "./helpers/d1-snapshot.ts";
import { db, seedOrg } from "./helpers/fixtures.ts";
import {
  createWorkspace,
  seedPool,
  seedRun,
  tokenIdOf,
  type WorkspaceBody,
} from "./helpers/workspaces.ts";

async function auditOf(targetId: string) {
  const rows = await env.DB.prepare(
    "SELECT action, actor, data FROM audit_events WHERE target_id = ? ORDER BY created_at, rowid",
  )
    .bind(targetId)
    .all<{ action: string; actor: string; data: string | null }>();
  return rows.results.map((r) => ({ ...r, data: r.data ? JSON.parse(r.data) : null }));
}

describe("PATCH /api/v1/workspaces/:workspaceId", () => {
  it("changes only the given fields and audits them with old and new values", async () => {
    const org = await seedOrg();
    const ws = await createWorkspace(org, { name: "patch-me" });
    const poolId = await seedPool(org.orgId);
    const res = await requestJson<WorkspaceBody>("/api/v1/workspaces/patch-me", {
      method: "PATCH",
      token: org.tokens.admin,
      body: { executionMode: "agent", poolId, autoApply: true, engineVersion: "1.10.0-beta1" },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toMatchObject({
      id: ws.id,
      name: "patch-me",
      executionMode: "agent",
      poolId,
      autoApply: true,
      engineVersion: "1.10.0-beta1",
      engine: "terraform",
    });
    const audit = await auditOf(ws.id);
    expect(audit.map((a) => a.action)).toEqual(["workspace.create", "workspace.update"]);
    expect(audit[1]?.actor).toBe(await tokenIdOf(org.tokens.admin));
    expect(audit[1]?.data.changes).toEqual({
      executionMode: { from: "local", to: "agent" },
      poolId: { from: null, to: poolId },
      autoApply: { from: false, to: true },
      engineVersion: { from: "1.9.5", to: "1.10.0-beta1" },
    });
  });

  it("switching to local drops the pool; clearing the repository drops branch and paths", async () => {
    const org = await seedOrg();
    const ws = await createWorkspace(org, {
      poolId: await seedPool(org.orgId),
      vcsRepoUrl: "https://git.example/x.git",
      vcsBranch: "main",
      vcsTriggerPaths: ["infra"],
    });
    const res = await requestJson<WorkspaceBody>(`/api/v1/workspaces/${ws.id}`, {
      method: "PATCH",
      token: org.tokens.admin,
      body: { executionMode: "local", vcsRepoUrl: null },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toMatchObject({
      executionMode: "local",
      poolId: null,
      vcsRepoUrl: null,
      vcsBranch: null,
      vcsTriggerPaths: [],
    });
  });

  it("refuses what would leave the workspace inconsistent, and renames onto a taken name", async () => {
    const org = await seedOrg();
    const ws = await createWorkspace(org, { poolId: await seedPool(org.orgId) });
    await createWorkspace(org, { name: "taken" });
    const cases: { body: unknown; status: number; field?: string }[] = [
      { body: { poolId: null }, status: 400, field: "json.poolId" },
      { body: { name: "taken" }, status: 409 },
      {
        body: { poolId: await seedPool((await seedOrg()).orgId) },
        status: 400,
        field: "json.poolId",
      },
      { body: { vcsBranch: "main" }, status: 400, field: "json.vcsRepoUrl" },
      { body: { engineVersion: "1.9.5 || 2.0.0" }, status: 400, field: "json.engineVersion" },
      { body: { workingDirectory: ".." }, status: 400, field: "json.workingDirectory" },
      { body: { currentRunId: "run_x" }, status: 400, field: "json" },
      { body: { autoApply: null }, status: 400, field: "json.autoApply" },
      { body: "[]", status: 400 },
    ];
    for (const { body, status, field } of cases) {
      const before = await snapshotD1();
      const res = await requestJson<ErrorBody>(`/api/v1/workspaces/${ws.id}`, {
        method: "PATCH",
        token: org.tokens.admin,
        body,
        headers: { "content-type": "application/json" },
      });
      expect(res.status, JSON.stringify(body)).toBe(status);
      if (field) {
        expect(res.body.error.issues?.some((i) => i.path.startsWith(field))).toBe(true);
      }
      expect(await snapshotD1()).toEqual(before);
    }
    // Many cases, each with two full D1 snapshots: slower than the default 5 s on a busy machine.
  }, 30_000);

  it("writes nothing for a patch that changes nothing, and answers 404 for unknown names", async () => {
    const org = await seedOrg();
    const ws = await createWorkspace(org, { autoApply: true });
    const before = await snapshotD1();
    const same = await requestJson<WorkspaceBody>(`/api/v1/workspaces/${ws.id}`, {
      method: "PATCH",
      token: org.tokens.admin,
      body: { autoApply: true, name: ws.name },
    });
    expect(same.status).toBe(200);
    expect(same.body).toEqual(ws);
    const missing = await requestJson<ErrorBody>("/api/v1/workspaces/nope", {
      method: "PATCH",
      token: org.tokens.admin,
      body: { autoApply: false },
    });
    expect(missing.status).toBe(404);
    const tooBig = await requestJson<ErrorBody>(`/api/v1/workspaces/${ws.id}`, {
      method: "PATCH",
      token: org.tokens.admin,
      body: { description: "d".repeat(300_000) },
    });
    expect(tooBig.status).toBe(413);
    expect(await snapshotD1()).toEqual(before);
  });
});

describe("DELETE /api/v1/workspaces/:workspaceId", () => {
  it("deletes the workspace with its variables, configurations and R2 objects", async () => {
    const org = await seedOrg();
    const ws = await createWorkspace(org);
    await seedRun(org.orgId, ws.id, "applied");
    const now = Date.now();
    const prefix = `orgs/${org.orgId}/workspaces/${ws.id}/`;
    const key = `${prefix}configuration-versions/cv.tar.gz`;
    await env.BLOBS.put(key, "tarball");
    await env.BLOBS.put(`${prefix}runs/run_x/plan.tfplan`, "x");
    await env.BLOBS.put(`${prefix}state-versions/sv_x.outputs.json`, "{}");
    // Another workspace whose id starts like this one's must keep its objects.
    const neighbour = `orgs/${org.orgId}/workspaces/${ws.id}x/object`;
    await env.BLOBS.put(neighbour, "kept");
    await db.batch([
      db.insert(variables).values({
        id: newId("variable"),
        orgId: org.orgId,
        workspaceId: ws.id,
        key: "region",
        category: "terraform",
        value: "eu",
        updatedAt: now,
      }),
      db.insert(configurationVersions).values({
        id: newId("configurationVersion"),
        orgId: org.orgId,
        workspaceId: ws.id,
        source: "upload",
        r2Key: key,
      }),
    ]);
    const res = await requestJson<WorkspaceBody>(`/api/v1/workspaces/${ws.name}`, {
      method: "DELETE",
      token: org.tokens.admin,
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.id).toBe(ws.id);
    for (const table of ["workspaces", "variables", "configuration_versions", "runs"]) {
      const row = await env.DB.prepare(
        `SELECT count(*) AS n FROM ${table} WHERE ${table === "workspaces" ? "id" : "workspace_id"} = ?`,
      )
        .bind(ws.id)
        .first<{ n: number }>();
      expect(row?.n, table).toBe(0);
    }
    expect((await env.BLOBS.list({ prefix })).objects).toEqual([]);
    expect(await env.BLOBS.get(neighbour)).not.toBeNull();
    expect((await auditOf(ws.id)).map((a) => a.action)).toEqual([
      "workspace.create",
      "workspace.delete",
    ]);
    const again = await requestJson<ErrorBody>(`/api/v1/workspaces/${ws.id}`, {
      method: "DELETE",
      token: org.tokens.admin,
    });
    expect(again.status).toBe(404);
    const malformed = await requestJson<ErrorBody>("/api/v1/workspaces/not%20a%20name", {
      method: "DELETE",
      token: org.tokens.admin,
    });
    expect(malformed.status).toBe(400);
    expect(malformed.body.error.issues?.[0]?.path).toBe("param.workspaceId");
  });

  it("refuses with 409 while a run is active, the workspace is locked or its state is", async () => {
    const org = await seedOrg();
    const ws = await createWorkspace(org);
    const del = () =>
      requestJson<ErrorBody & { error: { details?: Record<string, unknown> } }>(
        `/api/v1/workspaces/${ws.id}`,
        { method: "DELETE", token: org.tokens.admin },
      );
    const runId = await seedRun(org.orgId, ws.id, "planning");
    await seedRun(org.orgId, ws.id, "errored");
    let before = await snapshotD1();
    const busy = await del();
    expect(busy.status).toBe(409);
    expect(busy.body.error.details).toEqual({ runIds: [runId] });
    expect(await snapshotD1()).toEqual(before);

    await env.DB.prepare("UPDATE runs SET status = 'canceled' WHERE id = ?").bind(runId).run();
    await db
      .update(workspaces)
      .set({ lockedBy: "run_x", lockedAt: 1 })
      .where(eq(workspaces.id, ws.id));
    before = await snapshotD1();
    const locked = await del();
    expect(locked.status).toBe(409);
    expect(locked.body.error.details).toEqual({ lockedBy: "run_x" });
    expect(await snapshotD1()).toEqual(before);

    await db
      .update(workspaces)
      .set({ lockedBy: null, lockedAt: null })
      .where(eq(workspaces.id, ws.id));
    await db
      .insert(stateLocks)
      .values({ workspaceId: ws.id, orgId: org.orgId, lockId: "abc", info: "{}" });
    before = await snapshotD1();
    const stateLocked = await del();
    expect(stateLocked.status).toBe(409);
    expect(stateLocked.body.error.message).toMatch(/state/);
    expect(await snapshotD1()).toEqual(before);

    await db.delete(stateLocks).where(eq(stateLocks.workspaceId, ws.id));
    expect((await del()).status).toBe(200);
  });
});

describeAuth("PATCH /api/v1/workspaces/:workspaceId", {
  role: "admin",
  target: async (org) => ({
    method: "PATCH",
    path: `/api/v1/workspaces/${(await createWorkspace(org)).id}`,
    body: { autoApply: true },
  }),
});
describeAuth("DELETE /api/v1/workspaces/:workspaceId", {
  role: "admin",
  target: async (org) => ({
    method: "DELETE",
    path: `/api/v1/workspaces/${(await createWorkspace(org)).name}`,
  }),
});
