/**
 * Finding 5: the same signed body re-sent with a new `X-GitHub-Delivery` (or GitLab
 * `Idempotency-Key`) queued a new apply of an old commit. Now deliveries are also deduplicated
 * on (hook, SHA-256 of the raw body), and a push for a commit that already has a VCS-triggered
 * run on the workspace queues nothing (202 with the reason), even once that run has finished.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { requestJson } from "../../worker/helpers/api.ts";
import { useTestClock } from "../../worker/helpers/clock.ts";
import { seedOrg, type TestOrg } from "../../worker/helpers/fixtures.ts";
import type { RunBody } from "../../worker/helpers/runs.ts";
import {
  createHook,
  deliverGitHub,
  deliverGitLab,
  githubExample,
  gitlabExample,
  type Json,
  randomSha,
} from "../../worker/helpers/vcs.ts";
import { finishPlan, runnableWithAgent } from "./helpers.ts";

const GITHUB_REPO = "https://github.com/Codertocat/Hello-World.git";
const GITLAB_REPO = "git@example.com:mike/diaspora.git";

async function runsOf(org: TestOrg, workspaceId: string): Promise<RunBody[]> {
  const res = await requestJson<{ runs: RunBody[] }>(`/api/v1/workspaces/${workspaceId}/runs`, {
    token: org.tokens.reader,
  });
  return res.body.runs;
}

function githubPush(sha: string): Json {
  const p = githubExample("push", (e) => e.ref === "refs/heads/master");
  const commit = (p.commits as Json[])[0] as Json;
  Object.assign(commit, { id: sha, added: [], removed: [], modified: ["main.tf"] });
  return { ...p, after: sha, head_commit: commit };
}

/** Plans and applies the workspace's first run, so the replay targets a finished run. */
async function applyFirstRun(org: TestOrg, target: Awaited<ReturnType<typeof runnableWithAgent>>) {
  const plan = await target.agent.lease();
  await target.agent.start(plan);
  await finishPlan(target.agent, plan);
  await requestJson(`/api/v1/runs/${plan.runId}/confirm`, {
    method: "POST",
    token: org.tokens.member,
  });
  await target.agent.apply();
  expect((await runsOf(org, target.workspace.id))[0]?.status).toBe("applied");
}

describe("finding 5: a GitHub delivery works once", () => {
  const clock = useTestClock();

  it("the same body under a new X-GitHub-Delivery is a duplicate, even weeks later", async () => {
    const org = await seedOrg();
    const hook = await createHook(org, "github");
    const target = await runnableWithAgent(org, { vcsRepoUrl: GITHUB_REPO });
    const body = JSON.stringify(githubPush(randomSha()));
    const send = (deliveryId: string) =>
      deliverGitHub(hook, "push", body, { secret: hook.secret, deliveryId });
    expect((await send("original")).status).toBe(202);
    await applyFirstRun(org, target);
    const replay = await send("captured-and-replayed");
    expect(replay).toMatchObject({
      status: 200,
      body: { duplicate: true, ignored: "the same body was already delivered as original" },
    });
    // 29 days on, the first delivery still dedupes the body.
    clock.advance(29 * 24 * 3_600_000);
    expect((await send("a-month-later")).body).toMatchObject({ duplicate: true });
    expect(await runsOf(org, target.workspace.id)).toHaveLength(1);
  });

  it("another body announcing a commit that already ran queues nothing (202 with the reason)", async () => {
    const org = await seedOrg();
    const hook = await createHook(org, "github");
    const target = await runnableWithAgent(org, { vcsRepoUrl: GITHUB_REPO });
    const sha = randomSha();
    expect(
      (await deliverGitHub(hook, "push", githubPush(sha), { secret: hook.secret })).status,
    ).toBe(202);
    await applyFirstRun(org, target);
    const again = { ...githubPush(sha), compare: "https://github.com/x/compare/other" };
    const res = await deliverGitHub(hook, "push", again, { secret: hook.secret });
    expect(res.status).toBe(202);
    expect(String(res.body.ignored)).toContain(`commit ${sha} already has a run`);
    expect(await runsOf(org, target.workspace.id)).toHaveLength(1);
  });
});

describe("finding 5: a GitLab delivery works once", () => {
  it("the same body under a new Idempotency-Key is a duplicate", async () => {
    const org = await seedOrg();
    const hook = await createHook(org, "gitlab");
    const target = await runnableWithAgent(org, {
      vcsRepoUrl: GITLAB_REPO,
      workingDirectory: "terraform",
    });
    const body = JSON.stringify({ ...gitlabExample("push"), after: randomSha() });
    const send = (key: string) =>
      deliverGitLab(hook, "Push Hook", body, {
        token: hook.secret,
        headers: { "idempotency-key": key },
      });
    expect((await send("k-original")).status).toBe(202);
    const replay = await send("k-replayed");
    expect(replay).toMatchObject({ status: 200, body: { duplicate: true } });
    expect(await runsOf(org, target.workspace.id)).toHaveLength(1);
  });

  it("a crafted body for a commit that already ran queues nothing, even after it was applied", async () => {
    // X-Gitlab-Token is a bearer secret, not a signature: whoever captured it can vary the body.
    const org = await seedOrg();
    const hook = await createHook(org, "gitlab");
    const target = await runnableWithAgent(org, {
      vcsRepoUrl: GITLAB_REPO,
      workingDirectory: "terraform",
    });
    const sha = randomSha();
    const push = { ...gitlabExample("push"), after: sha };
    expect((await deliverGitLab(hook, "Push Hook", push, { token: hook.secret })).status).toBe(202);
    await applyFirstRun(org, target);
    const crafted = { ...push, message: "replayed with a twist", user_name: "mallory" };
    const res = await deliverGitLab(hook, "Push Hook", crafted, {
      token: hook.secret,
      headers: { "idempotency-key": "fresh" },
    });
    expect(res.status).toBe(202);
    expect(String(res.body.ignored)).toContain("a push never runs a commit twice");
    expect(await runsOf(org, target.workspace.id)).toHaveLength(1);
    const outcome = await env.DB.prepare(
      "SELECT outcome FROM vcs_deliveries WHERE delivery_id = 'fresh'",
    ).first<{ outcome: string }>();
    expect(JSON.parse(outcome?.outcome ?? "{}")).toMatchObject({
      status: "processed",
      runs: [],
      skipped: [{ workspaceId: target.workspace.id }],
    });
  });
});
