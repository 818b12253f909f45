/**
 * Pool scoping through the real routes: a pool's `organizationScoped`, `allowedWorkspaceIds` and
 * `allowedProjectIds`; a workspace may be assigned only to a pool that allows it (409 with the
 * reason); narrowing a pool errors the waiting runs it leaves out with a sentence naming pool and
 * workspace; and a job of a workspace the pool does not allow never reaches an agent.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { type ErrorBody, requestJson } from "./helpers/api.ts";
import { snapshotD1 } from "./helpers/d1-snapshot.ts";
import { seedOrg, type TestOrg } from "./helpers/fixtures.ts";
import { createProject } from "./helpers/projects.ts";
import { getRun, queueRun, runnableWorkspace, TestAgent } from "./helpers/runs.ts";
import { createWorkspace } from "./helpers/workspaces.ts";

type Scoped = {
  id: string;
  name: string;
  organizationScoped: boolean;
  allowedWorkspaceIds: string[];
  allowedProjectIds: string[];
  workspaces?: { id: string; name: string; allowed: boolean }[];
  erroredRunIds?: string[];
};

let names = 0;

function createPool(org: TestOrg, body: Record<string, unknown>) {
  return requestJson<Scoped & ErrorBody>("/api/v1/pools", {
    method: "POST",
    token: org.ownerToken,
    body: { name: `scoped-${names++}-${Date.now().toString(36)}`, ...body },
  });
}

function patchPool(org: TestOrg, poolId: string, body: Record<string, unknown>) {
  return requestJson<Scoped & ErrorBody>(`/api/v1/pools/${poolId}`, {
    method: "PATCH",
    token: org.ownerToken,
    body,
  });
}

function patchWorkspace(org: TestOrg, workspaceId: string, body: Record<string, unknown>) {
  return requestJson<ErrorBody & { poolId: string | null }>(`/api/v1/workspaces/${workspaceId}`, {
    method: "PATCH",
    token: org.ownerToken,
    body,
  });
}

describe("a pool's scope", () => {
  it("defaults to the whole organization and shows a narrowed scope on GET", async () => {
    const org = await seedOrg();
    const open = await createPool(org, {});
    expect(open.status).toBe(201);
    expect(open.body).toMatchObject({
      organizationScoped: true,
      allowedWorkspaceIds: [],
      allowedProjectIds: [],
    });
    const project = await createProject(org);
    const ws = await createWorkspace(org);
    const scoped = await createPool(org, {
      organizationScoped: false,
      allowedWorkspaceIds: [ws.id, ws.id],
      allowedProjectIds: [project.id],
    });
    expect(scoped.status, JSON.stringify(scoped.body)).toBe(201);
    const shown = await requestJson<Scoped>(`/api/v1/pools/${scoped.body.id}`, {
      token: org.tokens.reader,
    });
    expect(shown.body).toMatchObject({
      organizationScoped: false,
      allowedWorkspaceIds: [ws.id],
      allowedProjectIds: [project.id],
    });
  });

  it("refuses another organization's ids and too many entries, changing nothing", async () => {
    const [org, other] = await Promise.all([seedOrg(), seedOrg()]);
    const theirs = await createWorkspace(other);
    const theirProject = await createProject(other);
    const pool = await createPool(org, {});
    const before = await snapshotD1();
    const cases = [
      { allowedWorkspaceIds: [theirs.id] },
      { allowedProjectIds: [theirProject.id] },
      { allowedWorkspaceIds: ["not-an-id"] },
      { organizationScoped: "no" },
    ];
    for (const body of cases) {
      const res = await patchPool(org, pool.body.id, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error.message).toBeTruthy();
    }
    const many = Array.from({ length: 101 }, () => theirs.id);
    expect((await patchPool(org, pool.body.id, { allowedWorkspaceIds: many })).status).toBe(400);
    expect((await createPool(org, { allowedWorkspaceIds: [theirs.id] })).status).toBe(400);
    expect(await snapshotD1()).toEqual(before);
  });
});

describe("assigning a workspace to a scoped pool", () => {
  it("is a 409 with the reason unless the pool allows the workspace or its project", async () => {
    const org = await seedOrg();
    const project = await createProject(org, "dc1");
    const inProject = await createWorkspace(org, { name: "app-dc1", projectId: project.id });
    const named = await createWorkspace(org, { name: "app-named" });
    const outside = await createWorkspace(org, { name: "app-staging" });
    const pool = await createPool(org, {
      name: "dc1-prod",
      organizationScoped: false,
      allowedWorkspaceIds: [named.id],
      allowedProjectIds: [project.id],
    });
    const poolId = pool.body.id;
    const mode = { executionMode: "agent", poolId };

    const refused = await patchWorkspace(org, outside.id, mode);
    expect(refused.status).toBe(409);
    expect(refused.body.error.message).toBe("pool dc1-prod does not allow workspace app-staging");
    const created = await requestJson<ErrorBody>("/api/v1/workspaces", {
      method: "POST",
      token: org.ownerToken,
      body: { name: "app-new", engineVersion: "1.9.5", ...mode },
    });
    expect(created.status).toBe(409);
    expect(created.body.error.message).toBe("pool dc1-prod does not allow workspace app-new");

    expect((await patchWorkspace(org, named.id, mode)).status).toBe(200);
    expect((await patchWorkspace(org, inProject.id, mode)).status).toBe(200);
    // Moving the project's workspace out of the allowed project takes the pool's permission away.
    const other = await createProject(org);
    const moved = await patchWorkspace(org, inProject.id, { projectId: other.id });
    expect(moved.status).toBe(409);
    expect(moved.body.error.message).toBe("pool dc1-prod does not allow workspace app-dc1");
  });
});

describe("narrowing a pool", () => {
  it("errors the waiting runs it leaves out, naming pool and workspace; their jobs never reach an agent", async () => {
    const org = await seedOrg();
    const left = await runnableWorkspace(org, { name: "app-staging" });
    const kept = await createWorkspace(org, {
      name: "app-prod",
      executionMode: "agent",
      poolId: left.poolId,
    });
    const queued = await queueRun(org, left.workspace.id);
    expect(queued.status).toBe(201);
    const pool = await requestJson<Scoped>(`/api/v1/pools/${left.poolId}`, {
      token: org.ownerToken,
    });

    const narrowed = await patchPool(org, left.poolId, {
      organizationScoped: false,
      allowedWorkspaceIds: [kept.id],
    });
    expect(narrowed.status, JSON.stringify(narrowed.body)).toBe(200);
    expect(narrowed.body.erroredRunIds).toEqual([queued.body.id]);
    const run = await getRun(org, queued.body.id);
    expect(run.status).toBe("errored");
    expect(run.statusReason).toBe(`pool ${pool.body.name} does not allow workspace app-staging`);
    const agent = await TestAgent.register(left.agentToken);
    const poll = await requestJson("/agent/v1/jobs/next?wait=0", {
      method: "POST",
      token: left.agentToken,
      headers: { "outpost-agent-id": agent.agentId },
    });
    expect(poll.status).toBe(204);
    const detail = await requestJson<Scoped>(`/api/v1/pools/${left.poolId}`, {
      token: org.tokens.reader,
    });
    expect(detail.body.workspaces).toEqual(
      expect.arrayContaining([
        { id: left.workspace.id, name: "app-staging", allowed: false },
        { id: kept.id, name: "app-prod", allowed: true },
      ]),
    );
    // A new run of the workspace the pool no longer allows is refused with the same sentence.
    const again = await queueRun(org, left.workspace.id);
    expect(again.status).toBe(409);
    expect((again.body as unknown as ErrorBody).error.message).toBe(
      `pool ${pool.body.name} does not allow workspace app-staging`,
    );
  });

  it("a lease of a job the pool stopped allowing mints nothing: the run errors, the agent polls on", async () => {
    const org = await seedOrg();
    const ws = await runnableWorkspace(org, { name: "app-race" });
    const queued = await queueRun(org, ws.workspace.id);
    const agent = await TestAgent.register(ws.agentToken);
    // The scope changing after the job was queued, without the change's own enforcement (a
    // change racing the queueing): only the lease's check stands between the job and the agent.
    await env.DB.prepare("UPDATE agent_pools SET organization_scoped = 0 WHERE id = ?")
      .bind(ws.poolId)
      .run();
    const poll = await requestJson("/agent/v1/jobs/next?wait=0", {
      method: "POST",
      token: ws.agentToken,
      headers: { "outpost-agent-id": agent.agentId },
    });
    expect(poll.status).toBe(204);
    const run = await getRun(org, queued.body.id);
    expect(run.status).toBe("errored");
    expect(run.statusReason).toMatch(/^pool .+ does not allow workspace app-race$/);
    const tokens = await env.DB.prepare(
      "SELECT count(*) AS n FROM run_tokens WHERE run_id = ? AND revoked_at IS NULL",
    )
      .bind(queued.body.id)
      .first<{ n: number }>();
    expect(tokens?.n).toBe(0);
  });
});
