/**
 * VCS feedback end to end, coordinator mode: the real coordinator, git server and agent with
 * the stand-in engine, signed GitHub webhooks, and the loopback GitHub
 * (`test/setup/fake-github.ts`) that checks every request against GitHub's OpenAPI description
 * and verifies GitHub App JWTs with the app's public key. Commit statuses on pushed and head
 * commits, one plan comment per pull request edited in place, failures, cancels, forks, an app
 * key, and a VCS that refuses.
 */
import { sign } from "@octokit/webhooks-methods";
import { describe, expect, inject, it } from "vitest";
import type { FakeGithubCall } from "../setup/fake-github.ts";
import type { RegisteredApp } from "../setup/fake-github-app.ts";
import {
  createWorkspace,
  expectStatus,
  type Json,
  runsOf,
  setVariable,
  waitForRun,
} from "./helpers/e2e.ts";
import { useWorld } from "./helpers/world.ts";

const world = useWorld({ agents: [{}], git: true, vars: { VCS_ALLOW_LOOPBACK: "true" } });
const fakeGithub = inject("fakeGithubUrl");
const RUN_MS = 60_000;
const POLL = { timeout: 30_000, interval: 200 };

const resource = (name: string) => `resource "null_resource" "${name}" { value = "${name}" }\n`;

/** A repository `acme/<name>-<random>` on the git server, a workspace on it, and a hook. */
async function setUp(
  name: string,
  credential: { token: string } | { app: { appId: number; privateKey: string } },
  workspace: { autoApply?: boolean; forkPullRequests?: string; env?: Record<string, string> } = {},
) {
  const repoName = `acme/${name}-${crypto.randomUUID().slice(0, 6)}`;
  const repo = world.git.createRepository(repoName);
  const repoUrl = world.git.repoUrl(repoName);
  const ws = await createWorkspace(world, `fb-${name}-${crypto.randomUUID().slice(0, 6)}`, {
    autoApply: workspace.autoApply ?? false,
    ...(workspace.env ? { env: workspace.env } : {}),
  });
  const settings = await expectStatus(
    world.api("PATCH", `/api/v1/workspaces/${ws}`, {
      vcsRepoUrl: repoUrl,
      vcsBranch: "main",
      ...(workspace.forkPullRequests ? { forkPullRequests: workspace.forkPullRequests } : {}),
    }),
    200,
  );
  const hook = await expectStatus(
    world.api("POST", "/api/v1/vcs-hooks", {
      provider: "github",
      repoUrl,
      feedback: "coordinator",
      apiUrl: fakeGithub,
      ...credential,
    }),
    201,
  );
  return { repo, repoUrl, repoName, ws, wsName: String(settings.name), hook };
}

let deliveries = 0;
async function deliver(hook: Json, event: string, payload: Json): Promise<void> {
  const body = JSON.stringify(payload);
  const res = await fetch(`${world.coordinator.url}/webhooks/github/${String(hook.id)}`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "x-github-event": event,
      "x-github-delivery": `fb-${++deliveries}-${crypto.randomUUID()}`,
      "x-hub-signature-256": await sign(String(hook.secret), body),
    },
    body,
  });
  await res.body?.cancel();
  expect(res.status).toBe(202);
}

const repository = (repoUrl: string) => ({
  id: 1,
  full_name: "acme/infra",
  clone_url: repoUrl,
  default_branch: "main",
});

function push(repoUrl: string, sha: string): Json {
  const commit = {
    id: sha,
    message: "Change",
    author: { name: "Octo Cat", username: "octocat" },
    modified: ["main.tf"],
    added: [],
    removed: [],
  };
  return {
    ref: "refs/heads/main",
    after: sha,
    commits: [commit],
    head_commit: commit,
    repository: repository(repoUrl),
  };
}

function pullRequest(repoUrl: string, sha: string, number: number, headRepoId = 1): Json {
  return {
    action: "synchronize",
    number,
    pull_request: {
      title: "Change",
      user: { login: "octocat" },
      head: { ref: `feature-${number}`, sha, repo: { id: headRepoId } },
      base: { ref: "main", repo: { id: 1 } },
    },
    repository: repository(repoUrl),
  };
}

async function calls(key: string): Promise<FakeGithubCall[]> {
  const res = await fetch(`${fakeGithub}/_calls/${encodeURIComponent(key)}`);
  return (await res.json()) as FakeGithubCall[];
}

/** The `state: description` of each status set on `sha`, in order. */
async function statusesOn(key: string, sha: string): Promise<string[]> {
  return (await calls(key))
    .filter((c) => c.template === "/repos/{owner}/{repo}/statuses/{sha}" && c.path.endsWith(sha))
    .map((c) => `${String((c.body as Json).state)}: ${String((c.body as Json).description)}`);
}

/** The body of the last comment written (created or edited) on pull request `number`. */
async function lastComment(key: string): Promise<string | undefined> {
  const written = (await calls(key)).filter(
    (c) => c.path.includes("/issues/") && (c.method === "POST" || c.method === "PATCH"),
  );
  return (written.at(-1)?.body as { body?: string } | undefined)?.body;
}

const token = (name: string) => `tok-e2e-${name}-${crypto.randomUUID()}`;

describe("VCS feedback from the coordinator", () => {
  it("sets pending, then success on a pushed commit as the run applies", {
    timeout: RUN_MS,
  }, async () => {
    const key = token("push");
    const s = await setUp("push", { token: key }, { autoApply: true });
    const sha = s.repo.commit({ "main.tf": resource("a") }, "Add a");
    await deliver(s.hook, "push", push(s.repoUrl, sha));
    const [run] = await runsOf(world, s.ws, 1);
    await waitForRun(world, String(run?.id), ["applied"], RUN_MS);
    await expect
      .poll(() => statusesOn(key, sha), POLL)
      .toContain("success: Applied. Plan: 1 to add, 0 to change, 0 to destroy");
    const states = await statusesOn(key, sha);
    expect(states[0]).toBe("pending: Queued");
    expect(states.at(-1)).toBe("success: Applied. Plan: 1 to add, 0 to change, 0 to destroy");
    const made = await calls(key);
    expect(made.flatMap((c) => c.violations)).toEqual([]);
    expect(made[0]?.body).toMatchObject({
      context: `outpost/${s.wsName}`,
      target_url: `${world.coordinator.url}/ui/runs/${String(run?.id)}`,
    });
    expect(made[0]?.path).toBe(`/repos/${s.repoName}/statuses/${sha}`);
  });

  it("keeps one comment per pull request, edited by its second commit", {
    timeout: RUN_MS * 2,
  }, async () => {
    const key = token("pr");
    const s = await setUp("pr", { token: key });
    const first = s.repo.commit({ "main.tf": resource("a") }, "Add a");
    await deliver(s.hook, "pull_request", pullRequest(s.repoUrl, first, 11));
    const [one] = await runsOf(world, s.ws, 1);
    await waitForRun(world, String(one?.id), ["planned_and_finished"], RUN_MS);
    await expect.poll(() => lastComment(key), POLL).toContain(first.slice(0, 12));

    const second = s.repo.commit({ "main.tf": resource("a") + resource("b") }, "Add b");
    await deliver(s.hook, "pull_request", pullRequest(s.repoUrl, second, 11));
    const two = (await runsOf(world, s.ws, 2)).find((r) => r.id !== one?.id);
    await waitForRun(world, String(two?.id), ["planned_and_finished"], RUN_MS);
    await expect.poll(() => lastComment(key), POLL).toContain(second.slice(0, 12));

    const made = await calls(key);
    expect(made.flatMap((c) => c.violations)).toEqual([]);
    const comments = `/repos/${s.repoName}/issues/11/comments`;
    expect(made.filter((c) => c.method === "POST" && c.path === comments)).toHaveLength(1);
    expect(made.filter((c) => c.method === "PATCH")).toHaveLength(1);
    const body = (await lastComment(key)) ?? "";
    expect(body).toContain("**Plan: 2 to add, 0 to change, 0 to destroy**");
    expect(body).toMatch(
      /\*\*Create \(2\)\*\*\n```\n\+ null_resource\.a\n\+ null_resource\.b\n```/,
    );
    expect(body).toMatch(/ran on agent `[^`]+`/);
    expect(await statusesOn(key, first)).toContain(
      "success: Plan: 1 to add, 0 to change, 0 to destroy",
    );
    expect((await statusesOn(key, second)).at(-1)).toBe(
      "success: Plan: 2 to add, 0 to change, 0 to destroy",
    );
  });

  it("reports a failing plan: failure status, the log's last lines in the comment", {
    timeout: RUN_MS,
  }, async () => {
    const key = token("fail");
    const s = await setUp("fail", { token: key });
    const sha = s.repo.commit({ "main.tf": `# standin:fail-plan\n${resource("a")}` }, "Broken");
    await deliver(s.hook, "pull_request", pullRequest(s.repoUrl, sha, 21));
    const [run] = await runsOf(world, s.ws, 1);
    await waitForRun(world, String(run?.id), ["errored"], RUN_MS);
    await expect
      .poll(async () => (await statusesOn(key, sha)).at(-1), POLL)
      .toMatch(/^failure: Errored/);
    await expect.poll(() => lastComment(key), POLL).toContain("**Log (last lines)**");
    const body = (await lastComment(key)) ?? "";
    expect(body).toContain("Error: Invalid reference");
    expect((await calls(key)).flatMap((c) => c.violations)).toEqual([]);
  });

  it("says a canceled run was canceled", { timeout: RUN_MS }, async () => {
    const key = token("cancel");
    const s = await setUp("cancel", { token: key }, { env: { STANDIN_PLAN_SLEEP_MS: "60000" } });
    const sha = s.repo.commit({ "main.tf": resource("a") }, "Slow");
    await deliver(s.hook, "push", push(s.repoUrl, sha));
    const [run] = await runsOf(world, s.ws, 1);
    await waitForRun(world, String(run?.id), ["planning"], RUN_MS);
    await expectStatus(world.api("POST", `/api/v1/runs/${String(run?.id)}/cancel`), 200);
    await waitForRun(world, String(run?.id), ["canceled"], RUN_MS);
    await expect
      .poll(async () => (await statusesOn(key, sha)).at(-1), POLL)
      .toMatch(/^error: Canceled/);
    expect(await statusesOn(key, sha)).toContain("pending: Queued");
  });

  it("gives a fork's pull request statuses and a comment with no secret in them", {
    timeout: RUN_MS,
  }, async () => {
    const key = token("fork");
    const s = await setUp("fork", { token: key }, { forkPullRequests: "plan_without_secrets" });
    const secret = `s3cr3t-${crypto.randomUUID()}`;
    await setVariable(world, s.ws, "db_password", secret, {
      category: "terraform",
      sensitive: true,
    });
    await setVariable(world, s.ws, "API_TOKEN", secret, { category: "env", sensitive: true });
    const sha = s.repo.commit({ "main.tf": resource("a") }, "From a fork");
    await deliver(s.hook, "pull_request", pullRequest(s.repoUrl, sha, 31, 99));
    const [run] = await runsOf(world, s.ws, 1);
    expect(run?.vcs).toMatchObject({ isFork: true });
    await waitForRun(world, String(run?.id), ["planned_and_finished"], RUN_MS);
    await expect.poll(() => lastComment(key), POLL).toContain("null_resource.a");
    await expect.poll(async () => (await statusesOn(key, sha)).at(-1), POLL).toMatch(/^success/);
    const made = JSON.stringify(await calls(key));
    expect(made).not.toContain(secret);
    expect(made).not.toContain(key);
  });

  it("posts as a GitHub App whose key GitHub verifies", { timeout: RUN_MS }, async () => {
    const app = (await (
      await fetch(`${fakeGithub}/_apps`, { method: "POST" })
    ).json()) as RegisteredApp;
    const s = await setUp(
      "app",
      { app: { appId: app.appId, privateKey: app.privateKey } },
      {
        autoApply: true,
      },
    );
    expect(JSON.stringify(s.hook)).not.toContain("PRIVATE KEY");
    const sha = s.repo.commit({ "main.tf": resource("a") }, "Add a");
    await deliver(s.hook, "push", push(s.repoUrl, sha));
    const [run] = await runsOf(world, s.ws, 1);
    await waitForRun(world, String(run?.id), ["applied"], RUN_MS);
    const appKey = `app-${app.appId}`;
    await expect.poll(async () => (await statusesOn(appKey, sha)).at(-1), POLL).toMatch(/^success/);
    const made = await calls(appKey);
    expect(made.flatMap((c) => c.violations)).toEqual([]);
    expect(made.filter((c) => c.path.endsWith("/access_tokens"))).toMatchObject([
      { status: 201, body: { repositories: [s.repoName.split("/")[1]] } },
    ]);
    expect(made.every((c) => c.status < 300)).toBe(true);
  });

  it("shows a 401 from the VCS on the run, which applies all the same", {
    timeout: RUN_MS,
  }, async () => {
    const s = await setUp("refused", { token: `bad-${crypto.randomUUID()}` }, { autoApply: true });
    const sha = s.repo.commit({ "main.tf": resource("a") }, "Add a");
    await deliver(s.hook, "push", push(s.repoUrl, sha));
    const [queued] = await runsOf(world, s.ws, 1);
    const run = await waitForRun(world, String(queued?.id), ["applied"], RUN_MS);
    const host = new URL(fakeGithub).host;
    const feedback = async () =>
      (await expectStatus(world.api("GET", `/api/v1/runs/${String(run.id)}`), 200)).vcsFeedback;
    await expect.poll(feedback, POLL).toMatchObject([
      {
        kind: "status",
        posted: false,
        error: `status not posted: 401 Bad credentials from ${host}`,
      },
    ]);
    const hookDeliveries = await expectStatus(
      world.api("GET", `/api/v1/vcs-hooks/${String(s.hook.id)}/deliveries`),
      200,
    );
    expect((hookDeliveries.deliveries as Json[])[0]?.feedback).toMatchObject([
      {
        runId: run.id,
        posted: false,
        error: `status not posted: 401 Bad credentials from ${host}`,
      },
    ]);
  });
});
