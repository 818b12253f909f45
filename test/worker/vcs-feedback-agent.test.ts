/**
 * VCS feedback in agent mode, through the real webhook routes, the real run-events queue and the
 * agent routes: the coordinator queues what to post for the run's pool, an agent naming the VCS
 * host claims it (the job's agent first), reports the outcome, and the run shows it. Refusals:
 * another pool's agent, a job's run token, no token, malformed claims and reports.
 */

import { env } from "cloudflare:workers";
import type { FeedbackItem } from "@outpost/protocol";
import { describe, expect, inject, it } from "vitest";
import type { FakeGithubCall } from "../setup/fake-github.ts";
import { type ErrorBody, requestJson } from "./helpers/api.ts";
import { useTestClock } from "./helpers/clock.ts";
import { snapshotD1 } from "./helpers/d1-snapshot.ts";
import { seedOrg, type TestOrg } from "./helpers/fixtures.ts";
import { getRun, type RunBody, runnableWorkspace, TestAgent } from "./helpers/runs.ts";
import {
  deliverGitHub,
  githubExample,
  type HookBody,
  type Json,
  randomSha,
} from "./helpers/vcs.ts";

const SLOW_TEST_MS = 60_000;
const REPO = "https://github.com/Codertocat/Hello-World.git";
const API_URL = "https://github.example.com/api/v3";
const HOST = "github.example.com";
const fakeGithub = inject("fakeGithubUrl");
const clock = useTestClock();

type Feedback = { kind: string; state: string; posted: boolean; error: string | null };
type Claimed = { items: FeedbackItem[]; pollIntervalSeconds: number };

async function agentHook(org: TestOrg, extra: Json = {}) {
  const res = await requestJson<HookBody & { secret: string }>("/api/v1/vcs-hooks", {
    method: "POST",
    token: org.tokens.admin,
    body: { provider: "github", feedback: "agent", apiUrl: API_URL, ...extra },
  });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body;
}

function pushPayload(sha: string): Json {
  const p = githubExample("push", (e) => e.ref === "refs/heads/master");
  const commit = (p.commits as Json[])[0] as Json;
  Object.assign(commit, { id: sha, added: [], removed: [], modified: ["main.tf"] });
  return { ...p, after: sha, head_commit: commit };
}

function prPayload(sha: string, number: number): Json {
  const p = githubExample("pull_request", (e) => e.action === "opened");
  const pr = structuredClone(p.pull_request as Json);
  (pr.head as Json).sha = sha;
  return { ...p, action: "synchronize", number, pull_request: { ...pr, number } };
}

function claim(agent: TestAgent, hosts: unknown = [HOST], token = agent.token) {
  return requestJson<Claimed & ErrorBody>("/agent/v1/feedback/claim", {
    method: "POST",
    token,
    headers: { "outpost-agent-id": agent.agentId },
    body: { hosts },
  });
}

function report(agent: TestAgent, itemId: string, body: unknown, token = agent.token) {
  return requestJson<{ recorded: boolean } & ErrorBody>(`/agent/v1/feedback/${itemId}`, {
    method: "POST",
    token,
    headers: { "outpost-agent-id": agent.agentId },
    body,
  });
}

/** Claims until an item of `kind` for `runId` comes (the sink runs from the queue). */
async function claimOne(agent: TestAgent, runId: string, kind = "status"): Promise<FeedbackItem> {
  let found: FeedbackItem | undefined;
  await expect
    .poll(
      async () => {
        const res = await claim(agent);
        expect(res.status, JSON.stringify(res.body)).toBe(200);
        found ??= res.body.items.find((i) => i.runId === runId && i.kind === kind);
        return found !== undefined;
      },
      { timeout: 15_000 },
    )
    .toBe(true);
  return found as FeedbackItem;
}

/** The run's waiting feedback items, as D1 holds them. */
async function itemsOf(runId: string) {
  const rows = await env.DB.prepare(
    "SELECT kind, run_status, preferred_agent_id, host FROM vcs_feedback_items WHERE run_id = ? ORDER BY kind",
  )
    .bind(runId)
    .all<{ kind: string; run_status: string; preferred_agent_id: string | null; host: string }>();
  return rows.results;
}

async function onlyRun(org: TestOrg, workspaceId: string): Promise<RunBody> {
  const res = await requestJson<{ runs: RunBody[] }>(`/api/v1/workspaces/${workspaceId}/runs`, {
    token: org.tokens.reader,
  });
  expect(res.body.runs).toHaveLength(1);
  return res.body.runs[0] as RunBody;
}

async function feedbackOf(org: TestOrg, runId: string): Promise<Feedback[]> {
  return ((await getRun(org, runId)) as unknown as { vcsFeedback: Feedback[] }).vcsFeedback;
}

describe("VCS feedback, agent mode: the coordinator tells an agent what to post", () => {
  it("hands a push run's queued status to an agent naming the host and records what it reports", {
    timeout: SLOW_TEST_MS,
  }, async () => {
    const org = await seedOrg();
    const hook = await agentHook(org);
    const { workspace, agentToken } = await runnableWorkspace(org, { vcsRepoUrl: REPO });
    const sha = randomSha();
    await deliverGitHub(hook, "push", pushPayload(sha), { secret: hook.secret });
    const run = await onlyRun(org, workspace.id);
    const agent = await TestAgent.register(agentToken);

    expect((await claim(agent, ["gitlab.example.com"])).body.items).toEqual([]);
    const item = await claimOne(agent, run.id);
    expect(item).toMatchObject({
      kind: "status",
      provider: "github",
      apiUrl: API_URL,
      host: HOST,
      repository: "Codertocat/Hello-World",
      sha,
      state: "pending",
      gitlabState: "pending",
      description: "Queued",
      context: `outpost/${workspace.name}`,
      targetUrl: `https://outpost.test/ui/runs/${run.id}`,
    });
    // Claimed: not handed to anyone else meanwhile.
    expect((await claim(agent)).body.items).toEqual([]);
    const res = await report(agent, item.id, { posted: true });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toEqual({ recorded: true });
    expect(await feedbackOf(org, run.id)).toMatchObject([
      { kind: "status", state: "pending", posted: true, error: null },
    ]);
    // Reported once: a repeat is not found, nothing is handed out again.
    expect((await report(agent, item.id, { posted: true })).status).toBe(404);
    expect((await claim(agent)).body.items).toEqual([]);
  });

  it("shows the VCS's refusal the agent reports on the run, and the run goes on", {
    timeout: SLOW_TEST_MS,
  }, async () => {
    const org = await seedOrg();
    const hook = await agentHook(org);
    const { workspace, agentToken } = await runnableWorkspace(org, { vcsRepoUrl: REPO });
    await deliverGitHub(hook, "push", pushPayload(randomSha()), { secret: hook.secret });
    const run = await onlyRun(org, workspace.id);
    const agent = await TestAgent.register(agentToken);
    const item = await claimOne(agent, run.id);
    const message = `401 Bad credentials from ${HOST}\u001b[31m`;
    expect((await report(agent, item.id, { posted: false, message })).status).toBe(200);
    expect(await feedbackOf(org, run.id)).toMatchObject([
      {
        kind: "status",
        posted: false,
        error: `status not posted: 401 Bad credentials from ${HOST}`,
      },
    ]);
    await agent.plan(true);
    expect((await getRun(org, run.id)).status).toBe("planned");
  });

  it("gives the job's agent its run's posts first, then any agent of the pool", {
    timeout: SLOW_TEST_MS,
  }, async () => {
    const org = await seedOrg();
    const hook = await agentHook(org);
    const { workspace, agentToken } = await runnableWorkspace(org, { vcsRepoUrl: REPO });
    const number = 7000 + Math.floor(Math.random() * 1000);
    await deliverGitHub(hook, "pull_request", prPayload(randomSha(), number), {
      secret: hook.secret,
    });
    const run = await onlyRun(org, workspace.id);
    const worker = await TestAgent.register(agentToken);
    const other = await TestAgent.register(agentToken);
    const queued = await claimOne(other, run.id);
    expect((await report(other, queued.id, { posted: true })).body).toEqual({ recorded: true });
    await worker.plan(true);
    await expect
      .poll(async () => (await itemsOf(run.id)).map((i) => `${i.kind}:${i.run_status}`).sort(), {
        timeout: 15_000,
      })
      .toEqual(["comment:planned_and_finished", "status:planned_and_finished"]);
    expect((await itemsOf(run.id)).map((i) => i.preferred_agent_id)).toEqual([
      worker.agentId,
      worker.agentId,
    ]);
    // The job's agent has them alone for a minute.
    expect((await claim(other)).body.items).toEqual([]);
    const held = (await claim(worker)).body.items;
    expect(held.map((i) => i.kind).sort()).toEqual(["comment", "status"]);
    const comment = held.find((i) => i.kind === "comment");
    if (comment?.kind !== "comment") {
      throw new Error("no comment");
    }
    expect(comment).toMatchObject({ number, host: HOST });
    expect(comment.marker).toBe(`<!-- outpost:plan:${workspace.id} -->`);
    expect(comment.body).toContain(comment.marker);
    expect(comment.body).toContain("Plan: 1 to add, 0 to change, 0 to destroy");
    expect((await report(worker, comment.id, { posted: true })).status).toBe(200);
    // The job's agent went quiet with the status: once its claim ends, another agent takes it.
    clock.advance(301_000);
    const status = await claimOne(other, run.id);
    expect(status).toMatchObject({
      state: "success",
      description: expect.stringContaining("Plan"),
    });
    expect((await report(other, status.id, { posted: true })).status).toBe(200);
    expect((await feedbackOf(org, run.id)).map((f) => [f.kind, f.posted]).sort()).toEqual([
      ["comment", true],
      ["status", true],
    ]);
    expect(await itemsOf(run.id)).toEqual([]);
  });

  it("posts a queued run's status itself when the hook also has a coordinator token", {
    timeout: SLOW_TEST_MS,
  }, async () => {
    const org = await seedOrg();
    const token = `both-${crypto.randomUUID()}`;
    const hook = await agentHook(org, { apiUrl: fakeGithub, token });
    const { workspace, agentToken } = await runnableWorkspace(org, { vcsRepoUrl: REPO });
    await deliverGitHub(hook, "push", pushPayload(randomSha()), { secret: hook.secret });
    const run = await onlyRun(org, workspace.id);
    const calls = async () =>
      (await (await fetch(`${fakeGithub}/_calls/${token}`)).json()) as FakeGithubCall[];
    await expect
      .poll(async () => (await calls()).map((c) => (c.body as Json).description), {
        timeout: 15_000,
      })
      .toEqual(["Queued"]);
    const agent = await TestAgent.register(agentToken);
    await agent.plan(true);
    // Held by the agent from then on: its posts go to the agent, not the coordinator.
    await expect
      .poll(async () => (await itemsOf(run.id)).map((i) => [i.kind, i.preferred_agent_id]), {
        timeout: 15_000,
      })
      .toEqual([["status", agent.agentId]]);
    expect(await calls()).toHaveLength(1);
    expect((await itemsOf(run.id))[0]?.host).toBe(new URL(fakeGithub).host);
  });
});

describe("VCS feedback, agent mode: who may claim and report", () => {
  it("never hands another pool's agent the items, nor lets it or a run token report them", {
    timeout: SLOW_TEST_MS,
  }, async () => {
    const org = await seedOrg();
    const hook = await agentHook(org);
    const { workspace, agentToken } = await runnableWorkspace(org, { vcsRepoUrl: REPO });
    await deliverGitHub(hook, "push", pushPayload(randomSha()), { secret: hook.secret });
    const run = await onlyRun(org, workspace.id);
    const stranger = await TestAgent.register((await runnableWorkspace(org)).agentToken);
    const otherOrg = await TestAgent.register(
      (await runnableWorkspace(await seedOrg())).agentToken,
    );
    const agent = await TestAgent.register(agentToken);
    // The item exists (the pool's agent sees it once claimed and released below).
    const item = await claimOne(agent, run.id);
    clock.advance(301_000);
    for (const outsider of [stranger, otherOrg]) {
      expect((await claim(outsider)).body.items).toEqual([]);
      const refused = await report(outsider, item.id, { posted: true });
      expect(refused.status).toBe(404);
      expect(refused.body.error.code).toBe("NOT_FOUND");
    }
    // A job-phase (run) token is not an agent token.
    const job = await agent.lease();
    await agent.start(job);
    const runToken = job.runToken ?? "";
    expect(runToken).not.toBe("");
    expect((await claim(agent, [HOST], runToken)).status).toBe(401);
    expect((await report(agent, item.id, { posted: true }, runToken)).status).toBe(401);
    expect((await claim(agent, [HOST], "")).status).toBe(401);
    expect((await feedbackOf(org, run.id)).filter((f) => f.posted)).toEqual([]);
  });

  it("refuses malformed claims and reports with a clear 400 and changes nothing", async () => {
    const org = await seedOrg();
    const { agentToken } = await runnableWorkspace(org);
    const agent = await TestAgent.register(agentToken);
    const before = await snapshotD1();
    for (const hosts of [[], ["https://github.com"], "github.com", Array(33).fill("a.example")]) {
      const res = await claim(agent, hosts);
      expect(res.status, JSON.stringify(hosts)).toBe(400);
      expect(res.body.error.message).toContain("hosts");
    }
    const id = `fbk_${"a".repeat(26)}`;
    expect((await report(agent, id, { posted: "yes" })).status).toBe(400);
    expect((await report(agent, id, { posted: false, message: "x".repeat(501) })).status).toBe(400);
    expect((await report(agent, "fbk_nope", { posted: true })).status).toBe(400);
    const noHeader = await requestJson<ErrorBody>("/agent/v1/feedback/claim", {
      method: "POST",
      token: agentToken,
      body: { hosts: [HOST] },
    });
    expect(noHeader.status).toBe(400);
    expect(await snapshotD1()).toEqual(before);
  });
});
