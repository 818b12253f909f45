/**
 * One list of every run: `GET /api/v1/runs` and `/ui/runs` with filters (status, workspace,
 * project, pool, agent, source) and paging, pending runs with why they wait, and each run's agents.
 */
import { describe, expect, it } from "vitest";
import { type ErrorBody, requestJson } from "./helpers/api.ts";
import { describeAuth } from "./helpers/auth-matrix.ts";
import { seedOrg, type TestOrg } from "./helpers/fixtures.ts";
import { personWithAccess } from "./helpers/people.ts";
import { createProject } from "./helpers/projects.ts";
import { queueRun, type RunBody, runnableWorkspace, TestAgent } from "./helpers/runs.ts";
import { signIn } from "./helpers/ui.ts";

/** Wall-clock budget of a test that drives runs through many requests (slow on a busy machine). */
const SLOW_TEST_MS = 60_000;

type Page = { runs: RunBody[]; nextCursor: string | null };

async function list(org: TestOrg, query: string, token = org.tokens.reader) {
  return requestJson<Page & ErrorBody>(`/api/v1/runs${query}`, { token });
}

describe("GET /api/v1/runs", () => {
  it("lists every run newest first with filters, paging, why runs wait and their agents", {
    timeout: SLOW_TEST_MS,
  }, async () => {
    const org = await seedOrg();
    const one = await runnableWorkspace(org);
    const two = await runnableWorkspace(org);
    const agent = await TestAgent.register(one.agentToken, { name: "builder" });
    const planned = await queueRun(org, one.workspace.id);
    await agent.plan(true);
    const waiting = await queueRun(org, two.workspace.id, { message: "no agent yet" });
    const speculative = await queueRun(org, two.workspace.id, { isSpeculative: true });

    const all = await list(org, "");
    expect(all.status).toBe(200);
    expect(all.body.runs.map((r) => r.id)).toEqual([
      speculative.body.id,
      waiting.body.id,
      planned.body.id,
    ]);
    const pending = all.body.runs.find((r) => r.id === waiting.body.id);
    expect(pending?.waitingReason).toEqual(expect.any(String));
    const ran = all.body.runs.find((r) => r.id === planned.body.id);
    expect(ran?.jobs).toMatchObject([
      { phase: "plan", agent: { id: agent.agentId, name: "builder" } },
    ]);

    const ids = async (query: string) => (await list(org, query)).body.runs.map((r) => r.id);
    expect(await ids(`?workspaceId=${two.workspace.name}`)).toEqual([
      speculative.body.id,
      waiting.body.id,
    ]);
    expect(await ids("?status=planned")).toEqual([planned.body.id]);
    expect(await ids(`?poolId=${one.poolId}`)).toEqual([planned.body.id]);
    expect(await ids(`?poolId=${two.poolId}`)).toEqual([speculative.body.id, waiting.body.id]);
    expect(await ids(`?agentId=${agent.agentId}`)).toEqual([planned.body.id]);
    expect(await ids("?source=run-trigger")).toEqual([]);
    expect((await ids("?source=api")).length).toBe(3);

    const first = await list(org, "?limit=2");
    expect(first.body.runs).toHaveLength(2);
    const second = await list(org, `?limit=2&cursor=${first.body.nextCursor}`);
    expect(second.body.runs.map((r) => r.id)).toEqual([planned.body.id]);
    expect(second.body.nextCursor).toBeNull();
  });

  it("refuses bad filters with a clear 400 and an unseen workspace with 404", {
    timeout: SLOW_TEST_MS,
  }, async () => {
    const org = await seedOrg();
    const ws = await runnableWorkspace(org);
    for (const [query, words] of [
      ["?status=exploded", "status"],
      ["?source=carrier-pigeon", "source"],
      ["?poolId=nope", "poolId"],
      ["?agentId=agt_x", "agentId"],
      ["?cursor=!!", "cursor"],
    ] as const) {
      const res = await list(org, query);
      expect(res.status, query).toBe(400);
      expect(res.body.error.message).toContain(words);
    }
    const { user } = await personWithAccess(org, ws.workspace, null);
    const unseen = await list(org, `?workspaceId=${ws.workspace.id}`, user.token);
    expect(unseen.status).toBe(404);
    const other = await seedOrg();
    expect((await list(other, `?workspaceId=${ws.workspace.id}`)).status).toBe(404);
    // A person sees only the runs of workspaces they may read.
    await queueRun(org, ws.workspace.id);
    expect((await list(org, "", user.token)).body.runs).toEqual([]);
  });
});

describe("the project filter", () => {
  it("lists the runs of the project's workspaces, by id or name, on the API and the dashboard", {
    timeout: SLOW_TEST_MS,
  }, async () => {
    const org = await seedOrg();
    const project = await createProject(org);
    const inside = await runnableWorkspace(org, { projectId: project.id });
    const outside = await runnableWorkspace(org);
    const mine = await queueRun(org, inside.workspace.id);
    const theirs = await queueRun(org, outside.workspace.id);

    const ids = async (query: string) => {
      const res = await list(org, query);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      return res.body.runs.map((r) => r.id);
    };
    expect(await ids(`?projectId=${project.id}`)).toEqual([mine.body.id]);
    expect(await ids(`?projectId=${encodeURIComponent(project.name)}`)).toEqual([mine.body.id]);
    expect(await ids(`?projectId=${project.id}&status=planned`)).toEqual([]);
    expect(await ids("")).toEqual([theirs.body.id, mine.body.id]);

    const reader = await signIn(org.tokens.reader);
    const page = await (await reader.get(`/ui/runs?project=${project.name}`)).text();
    expect(page).toContain(`href="/ui/runs/${mine.body.id}"`);
    expect(page).not.toContain(`href="/ui/runs/${theirs.body.id}"`);
    expect(page).toContain(`name="project" value="${project.name}"`);
  });

  it("answers a project the caller cannot see like a missing one, here and in another organization", {
    timeout: SLOW_TEST_MS,
  }, async () => {
    const org = await seedOrg();
    const project = await createProject(org);
    const ws = await runnableWorkspace(org, { projectId: project.id });
    await queueRun(org, ws.workspace.id);
    const missing = await list(org, "?projectId=no-such-project");
    expect(missing.status).toBe(404);
    expect(missing.body.error.message).toContain("project no-such-project not found");
    const { user } = await personWithAccess(org, ws.workspace, null);
    const unseen = await list(org, `?projectId=${project.id}`, user.token);
    expect(unseen.status).toBe(404);
    expect(unseen.body.error.message).toContain(`project ${project.id} not found`);
    const other = await seedOrg();
    expect((await list(other, `?projectId=${project.id}`)).status).toBe(404);

    const otherReader = await signIn(other.tokens.reader);
    expect((await otherReader.get(`/ui/runs?project=${project.id}`)).status).toBe(404);
    expect((await otherReader.get("/ui/runs?project=no-such-project")).status).toBe(404);
  });
});

describe("/ui/runs", () => {
  it("shows every run with its workspace, agents and why it waits, filtered by a GET form", {
    timeout: SLOW_TEST_MS,
  }, async () => {
    const org = await seedOrg();
    const ws = await runnableWorkspace(org);
    const queued = await queueRun(org, ws.workspace.id);
    const reader = await signIn(org.tokens.reader);
    const page = await (await reader.get("/ui/runs")).text();
    expect(page).toContain(`href="/ui/runs/${queued.body.id}"`);
    expect(page).toContain(ws.workspace.name);
    expect(page).toContain("none yet");
    expect(page).toMatch(/Waiting|wait/);
    const filtered = await (await reader.get("/ui/runs?status=applied&workspace=")).text();
    expect(filtered).toContain("No runs match.");
    const bad = await reader.get("/ui/runs?status=exploded");
    expect(bad.status).toBe(400);
  });
});

describeAuth("GET /api/v1/runs?workspaceId=", {
  role: "reader",
  target: async (org) => {
    const ws = await runnableWorkspace(org);
    return { method: "GET", path: `/api/v1/runs?workspaceId=${ws.workspace.id}` };
  },
});
describeAuth("GET /api/v1/runs?projectId=", {
  role: "reader",
  target: async (org) => {
    const project = await createProject(org);
    return { method: "GET", path: `/api/v1/runs?projectId=${project.id}` };
  },
});
