/**
 * One list of every run: `GET /api/v1/runs` and `/ui/runs` with filters (status, workspace,
 * pool, agent, source) and paging, pending runs with why they wait, and each run's agents.
 */
import { describe, expect, it } from "vitest";
import { type ErrorBody, requestJson } from "./helpers/api.ts";
import { describeAuth } from "./helpers/auth-matrix.ts";
import { seedOrg, type TestOrg } from "./helpers/fixtures.ts";
import { personWithAccess } from "./helpers/people.ts";
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
