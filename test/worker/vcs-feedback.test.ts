/**
 * VCS feedback in coordinator mode, through the real webhook routes, the real run-events queue
 * and a loopback GitHub that checks every request against GitHub's OpenAPI description
 * (`test/setup/fake-github.ts`): commit statuses on the pushed and the head commits, one plan
 * comment per pull request and workspace edited in place, refusals shown on the run, retries.
 */
import { describe, expect, inject, it } from "vitest";
import type { FakeGithubCall } from "../setup/fake-github.ts";
import type { FakeGitlabCall } from "../setup/fake-gitlab.ts";
import { requestJson } from "./helpers/api.ts";
import { snapshotD1 } from "./helpers/d1-snapshot.ts";
import { seedOrg, type TestOrg } from "./helpers/fixtures.ts";
import { getRun, type RunBody, runnableWorkspace, TestAgent } from "./helpers/runs.ts";
import { signIn } from "./helpers/ui.ts";
import {
  deliverGitHub,
  deliverGitLab,
  githubExample,
  gitlabExample,
  type HookBody,
  type Json,
  randomSha,
} from "./helpers/vcs.ts";

const SLOW_TEST_MS = 60_000;
const REPO = "https://github.com/Codertocat/Hello-World.git";
const fakeGithub = inject("fakeGithubUrl");
const fakeGitlab = inject("fakeGitlabUrl");
let tokens = 0;

type Feedback = {
  kind: string;
  state: string;
  description: string;
  posted: boolean;
  error: string | null;
};

async function feedbackHook(org: TestOrg, tokenPrefix = "tok") {
  const token = `${tokenPrefix}-${++tokens}-${crypto.randomUUID()}`;
  const res = await requestJson<HookBody & { secret: string; hasToken: boolean }>(
    "/api/v1/vcs-hooks",
    {
      method: "POST",
      token: org.tokens.admin,
      body: { provider: "github", feedback: "coordinator", apiUrl: fakeGithub, token },
    },
  );
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  expect(res.body).toMatchObject({ feedback: "coordinator", apiUrl: fakeGithub, hasToken: true });
  expect(JSON.stringify(res.body)).not.toContain(token);
  return { hook: res.body, token };
}

async function calls(
  token: string,
  server = fakeGithub,
): Promise<(FakeGithubCall | FakeGitlabCall)[]> {
  const res = await fetch(`${server}/_calls/${encodeURIComponent(token)}`);
  return (await res.json()) as (FakeGithubCall | FakeGitlabCall)[];
}

function pushPayload(sha: string): Json {
  const p = githubExample("push", (e) => e.ref === "refs/heads/master");
  const commit = (p.commits as Json[])[0] as Json;
  Object.assign(commit, { id: sha, added: [], removed: [], modified: ["main.tf"] });
  return { ...p, after: sha, head_commit: commit };
}

function prPayload(sha: string, number: number, fork = false): Json {
  const p = githubExample("pull_request", (e) => e.action === "opened");
  const pr = structuredClone(p.pull_request as Json);
  const head = pr.head as Json;
  head.sha = sha;
  if (fork) {
    head.repo = { ...(head.repo as Json), id: 999_999, full_name: "forker/Hello-World" };
  }
  return { ...p, action: "synchronize", number, pull_request: { ...pr, number } };
}

async function onlyRun(org: TestOrg, workspaceId: string, n = 1): Promise<RunBody> {
  const res = await requestJson<{ runs: RunBody[] }>(`/api/v1/workspaces/${workspaceId}/runs`, {
    token: org.tokens.reader,
  });
  expect(res.body.runs).toHaveLength(n);
  return res.body.runs[0] as RunBody;
}

async function feedbackOf(org: TestOrg, runId: string): Promise<Feedback[]> {
  return ((await getRun(org, runId)) as unknown as { vcsFeedback: Feedback[] }).vcsFeedback;
}

describe("VCS feedback: commit statuses", () => {
  it("posts pending then the plan's outcome on the pushed commit, each request per GitHub's OpenAPI", {
    timeout: SLOW_TEST_MS,
  }, async () => {
    const org = await seedOrg();
    const { hook, token } = await feedbackHook(org);
    const { workspace, agentToken } = await runnableWorkspace(org, { vcsRepoUrl: REPO });
    const sha = randomSha();
    const res = await deliverGitHub(hook, "push", pushPayload(sha), { secret: hook.secret });
    expect(res.status).toBe(202);
    const run = await onlyRun(org, workspace.id);

    await expect.poll(async () => (await calls(token)).length, { timeout: 15_000 }).toBe(1);
    const agent = await TestAgent.register(agentToken);
    await agent.plan(true);
    await expect
      .poll(async () => (await calls(token)).map((c) => (c.body as Json).description), {
        timeout: 15_000,
      })
      .toContain("Needs confirmation. Plan: 1 to add, 0 to change, 0 to destroy");

    const made = await calls(token);
    for (const call of made) {
      expect(call.violations).toEqual([]);
      expect(call).toMatchObject({
        method: "POST",
        template: "/repos/{owner}/{repo}/statuses/{sha}",
        path: `/repos/Codertocat/Hello-World/statuses/${sha}`,
        status: 201,
      });
      expect(call.body).toMatchObject({
        context: `outpost/${workspace.name}`,
        target_url: `https://outpost.test/ui/runs/${run.id}`,
      });
    }
    expect(made[0]?.body).toMatchObject({ state: "pending", description: "Queued" });
    expect(made.at(-1)?.body).toMatchObject({ state: "pending" });
    await expect
      .poll(async () => (await feedbackOf(org, run.id)).find((f) => f.kind === "status"))
      .toMatchObject({ posted: true, error: null, state: "pending" });
    expect(JSON.stringify(made)).not.toContain(token);
  });

  it("shows a 401 from the VCS on the run and never fails the run", {
    timeout: SLOW_TEST_MS,
  }, async () => {
    const org = await seedOrg();
    const { hook } = await feedbackHook(org, "bad");
    const { workspace, agentToken } = await runnableWorkspace(org, { vcsRepoUrl: REPO });
    await deliverGitHub(hook, "push", pushPayload(randomSha()), { secret: hook.secret });
    const run = await onlyRun(org, workspace.id);
    const host = new URL(fakeGithub).host;
    await expect
      .poll(async () => (await feedbackOf(org, run.id))[0], { timeout: 15_000 })
      .toMatchObject({
        kind: "status",
        posted: false,
        error: `status not posted: 401 Bad credentials from ${host}`,
      });
    const deliveries = await requestJson<{ deliveries: Json[] }>(
      `/api/v1/vcs-hooks/${hook.id}/deliveries`,
      { token: org.tokens.admin },
    );
    expect(deliveries.body.deliveries[0]?.feedback).toMatchObject([
      {
        runId: run.id,
        kind: "status",
        posted: false,
        error: `status not posted: 401 Bad credentials from ${host}`,
      },
    ]);
    const reader = await signIn(org.tokens.reader);
    const page = await (await reader.get(`/ui/runs/${run.id}`)).text();
    expect(page).toContain("<h2>VCS feedback</h2>");
    expect(page).toContain(
      `Commit status: <strong>status not posted: 401 Bad credentials from ${host}</strong>`,
    );
    const agent = await TestAgent.register(agentToken);
    await agent.plan(true);
    expect((await getRun(org, run.id)).status).toBe("planned");
  });

  it("retries a 502 with the queue's backoff until the status is posted", {
    timeout: SLOW_TEST_MS,
  }, async () => {
    const org = await seedOrg();
    const { hook, token } = await feedbackHook(org, "flaky");
    const { workspace } = await runnableWorkspace(org, { vcsRepoUrl: REPO });
    await deliverGitHub(hook, "push", pushPayload(randomSha()), { secret: hook.secret });
    const run = await onlyRun(org, workspace.id);
    await expect
      .poll(async () => (await calls(token)).map((c) => c.status), { timeout: 30_000 })
      .toEqual([502, 201]);
    expect(await feedbackOf(org, run.id)).toMatchObject([
      { kind: "status", posted: true, error: null, state: "pending" },
    ]);
  });
});

describe("VCS feedback: pull request plans", () => {
  it("keeps one plan comment per pull request and workspace, edited by a second commit", {
    timeout: SLOW_TEST_MS,
  }, async () => {
    const org = await seedOrg();
    const { hook, token } = await feedbackHook(org);
    const { workspace, agentToken } = await runnableWorkspace(org, { vcsRepoUrl: REPO });
    const agent = await TestAgent.register(agentToken);
    const number = 4000 + tokens;
    const first = randomSha();
    await deliverGitHub(hook, "pull_request", prPayload(first, number), { secret: hook.secret });
    await agent.plan(true);
    const commentsPath = `/repos/Codertocat/Hello-World/issues/${number}/comments`;
    await expect
      .poll(
        async () =>
          (await calls(token)).filter((c) => c.method === "POST" && c.path === commentsPath).length,
        {
          timeout: 15_000,
        },
      )
      .toBe(1);

    const second = randomSha();
    await deliverGitHub(hook, "pull_request", prPayload(second, number), { secret: hook.secret });
    await agent.plan(false);
    await expect
      .poll(async () => (await calls(token)).filter((c) => c.method === "PATCH").length, {
        timeout: 15_000,
      })
      .toBe(1);
    const made = await calls(token);
    expect(made.flatMap((c) => c.violations)).toEqual([]);
    expect(made.filter((c) => c.method === "POST" && c.path === commentsPath)).toHaveLength(1);
    const patch = made.find((c) => c.method === "PATCH");
    expect(patch?.template).toBe("/repos/{owner}/{repo}/issues/comments/{comment_id}");
    const body = (patch?.body as { body?: string } | undefined)?.body ?? "";
    expect(body).toContain(`<!-- outpost:plan:${workspace.id} -->`);
    expect(body).toContain("Plan: no changes");
    expect(body).toContain(second.slice(0, 12));
    const statuses = made.filter((c) => c.template === "/repos/{owner}/{repo}/statuses/{sha}");
    expect(statuses.some((c) => c.path.endsWith(first))).toBe(true);
    expect(statuses.at(-1)).toMatchObject({
      path: `/repos/Codertocat/Hello-World/statuses/${second}`,
      body: { state: "success", description: "Plan: no changes" },
    });
  });

  it("gives a fork's pull request statuses and a comment, with no secret in them", {
    timeout: SLOW_TEST_MS,
  }, async () => {
    const org = await seedOrg();
    const { hook, token } = await feedbackHook(org);
    const { workspace, agentToken } = await runnableWorkspace(org, {
      vcsRepoUrl: REPO,
      forkPullRequests: "plan_without_secrets",
    });
    const secretValue = `s3cr3t-${crypto.randomUUID()}`;
    const variable = await requestJson(`/api/v1/workspaces/${workspace.id}/vars/db_password`, {
      method: "PUT",
      token: org.tokens.admin,
      body: { value: secretValue, category: "terraform", sensitive: true },
    });
    expect(variable.status, JSON.stringify(variable.body)).toBeLessThan(300);
    const number = 5000 + tokens;
    await deliverGitHub(hook, "pull_request", prPayload(randomSha(), number, true), {
      secret: hook.secret,
    });
    const run = await onlyRun(org, workspace.id);
    expect(run.vcs.isFork).toBe(true);
    const agent = await TestAgent.register(agentToken);
    await agent.plan(true);
    await expect
      .poll(async () => (await calls(token)).filter((c) => c.path.endsWith("/comments")).length, {
        timeout: 15_000,
      })
      .toBe(2);
    const made = await calls(token);
    expect(made.flatMap((c) => c.violations)).toEqual([]);
    expect(made.some((c) => c.template === "/repos/{owner}/{repo}/statuses/{sha}")).toBe(true);
    expect(JSON.stringify(made)).not.toContain(secretValue);
    expect(JSON.stringify(made)).not.toContain(token);
  });
});

describe("VCS feedback: GitLab", () => {
  it("sets GitLab's commit statuses on a merge request's head commit and one note on it", {
    timeout: SLOW_TEST_MS,
  }, async () => {
    const org = await seedOrg();
    const token = `gl-${++tokens}-${crypto.randomUUID()}`;
    const created = await requestJson<HookBody & { secret: string }>("/api/v1/vcs-hooks", {
      method: "POST",
      token: org.tokens.admin,
      body: { provider: "gitlab", feedback: "coordinator", apiUrl: `${fakeGitlab}/api/v4`, token },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const hook = created.body;
    const { workspace, agentToken } = await runnableWorkspace(org, {
      vcsRepoUrl: "https://example.com/gitlabhq/gitlab-test.git",
    });
    const res = await deliverGitLab(hook, "Merge Request Hook", gitlabExample("merge_request"), {
      token: hook.secret,
    });
    expect(res.status).toBe(202);
    const run = await onlyRun(org, workspace.id);
    await expect
      .poll(async () => (await calls(token, fakeGitlab)).length, { timeout: 15_000 })
      .toBe(1);
    const agent = await TestAgent.register(agentToken);
    await agent.plan(true);
    const notes = "/api/v4/projects/gitlabhq%2Fgitlab-test/merge_requests/1/notes";
    await expect
      .poll(
        async () =>
          (await calls(token, fakeGitlab)).filter((c) => c.method === "POST" && c.path === notes)
            .length,
        {
          timeout: 15_000,
        },
      )
      .toBe(1);
    const made = await calls(token, fakeGitlab);
    expect(made.flatMap((c) => c.violations)).toEqual([]);
    const statuses = made.filter((c) => c.template === "/projects/:id/statuses/:sha");
    expect(statuses.map((c) => (c.body as Json).state)).toEqual(["pending", "success"]);
    expect(statuses.at(-1)).toMatchObject({
      path: `/api/v4/projects/gitlabhq%2Fgitlab-test/statuses/${run.vcs.commitSha}`,
      body: {
        name: `outpost/${workspace.name}`,
        description: "Plan: 1 to add, 0 to change, 0 to destroy",
      },
    });
  });
});

describe("the loopback GitHub", () => {
  it("refuses a request GitHub's OpenAPI description does not allow, naming why", async () => {
    const token = `probe-${crypto.randomUUID()}`;
    const res = await fetch(`${fakeGithub}/repos/o/r/statuses/${randomSha()}`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ state: "running", context: "x" }),
    });
    expect(res.status).toBe(422);
    const missing = await fetch(`${fakeGithub}/repos/o/r/statuses/${randomSha()}`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ context: "x" }),
    });
    expect(missing.status).toBe(422);
    const nowhere = await fetch(`${fakeGithub}/repos/o/r/status-checks`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}` },
    });
    expect(nowhere.status).toBe(404);
    expect((await calls(token)).map((c) => c.violations)).toEqual([
      ['field state is "running", not one of error, failure, pending, success'],
      ["required field state is missing"],
      ["no such operation"],
    ]);
  });
});

describe("VCS hooks: feedback settings", () => {
  it("refuses an apiUrl that is not https with a clear 400 and changes nothing", async () => {
    const org = await seedOrg();
    const before = await snapshotD1();
    for (const apiUrl of ["http://github.example.com", "https://u:p@github.example.com", "nope"]) {
      const res = await requestJson<{ error: { message: string } }>("/api/v1/vcs-hooks", {
        method: "POST",
        token: org.tokens.admin,
        body: { provider: "github", feedback: "coordinator", apiUrl },
      });
      expect(res.status, JSON.stringify(res.body)).toBe(400);
      expect(res.body.error.message).toContain("apiUrl");
    }
    const feedback = await requestJson("/api/v1/vcs-hooks", {
      method: "POST",
      token: org.tokens.admin,
      body: { provider: "github", feedback: "loud" },
    });
    expect(feedback.status).toBe(400);
    expect(await snapshotD1()).toEqual(before);
  });
});
