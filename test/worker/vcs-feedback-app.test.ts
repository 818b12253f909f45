/**
 * VCS feedback as a GitHub App, through the real routes and queue and the loopback GitHub
 * (`test/setup/fake-github.ts`, which verifies every app JWT's RS256 signature with the app's
 * public key): the key given as GitHub issues it (PKCS#1) or as PKCS#8, never shown again; one
 * installation token per repository, cached until shortly before it expires; a key of another
 * app refused by GitHub and shown on the run; a rate limit honoured through the queue's retry.
 */
import { describe, expect, inject, it } from "vitest";
import { findHookById } from "../../src/vcs/hooks.ts";
import { openHookApp } from "../../src/vcs-feedback/credentials.ts";
import { installationToken } from "../../src/vcs-feedback/github-app.ts";
import type { FakeGithubCall } from "../setup/fake-github.ts";
import { RATE_LIMIT_WAIT_SECONDS } from "../setup/fake-github.ts";
import type { RegisteredApp } from "../setup/fake-github-app.ts";
import { requestJson } from "./helpers/api.ts";
import { useTestClock } from "./helpers/clock.ts";
import { snapshotD1 } from "./helpers/d1-snapshot.ts";
import { seedOrg, type TestOrg } from "./helpers/fixtures.ts";
import { getRun, type RunBody, runnableWorkspace } from "./helpers/runs.ts";
import {
  deliverGitHub,
  githubExample,
  type HookBody,
  type Json,
  randomSha,
} from "./helpers/vcs.ts";

const SLOW_TEST_MS = 60_000;
const fakeGithub = inject("fakeGithubUrl");
const clock = useTestClock();

async function registerApp(tokenLifetimeSeconds?: number): Promise<RegisteredApp> {
  const res = await fetch(`${fakeGithub}/_apps`, {
    method: "POST",
    body: JSON.stringify(tokenLifetimeSeconds ? { tokenLifetimeSeconds } : {}),
  });
  return (await res.json()) as RegisteredApp;
}

async function calls(key: string): Promise<FakeGithubCall[]> {
  const res = await fetch(`${fakeGithub}/_calls/${encodeURIComponent(key)}`);
  return (await res.json()) as FakeGithubCall[];
}

type Hook = HookBody & { secret: string; appId: number | null; hasToken: boolean };

async function appHook(org: TestOrg, app: { appId: number; privateKey: string }): Promise<Hook> {
  const res = await requestJson<Hook>("/api/v1/vcs-hooks", {
    method: "POST",
    token: org.tokens.admin,
    body: { provider: "github", feedback: "coordinator", apiUrl: fakeGithub, app },
  });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body;
}

function pushPayload(repo: string, sha: string): Json {
  const p = githubExample("push", (e) => e.ref === "refs/heads/master");
  const commit = (p.commits as Json[])[0] as Json;
  Object.assign(commit, { id: sha, added: [], removed: [], modified: ["main.tf"] });
  const repository = { ...(p.repository as Json), clone_url: repo, html_url: repo };
  return { ...p, after: sha, head_commit: commit, repository };
}

async function runsOf(org: TestOrg, workspaceId: string): Promise<RunBody[]> {
  const res = await requestJson<{ runs: RunBody[] }>(`/api/v1/workspaces/${workspaceId}/runs`, {
    token: org.tokens.reader,
  });
  return res.body.runs;
}

type Feedback = { kind: string; posted: boolean; error: string | null };
const feedbackOf = async (org: TestOrg, runId: string) =>
  ((await getRun(org, runId)) as unknown as { vcsFeedback: Feedback[] }).vcsFeedback;

/** A repository of its own per test, so the shared fake's calls never mix. */
function freshRepo(): { url: string; name: string } {
  const name = `infra-${crypto.randomUUID().slice(0, 8)}`;
  return { url: `https://github.com/acme/${name}.git`, name };
}

describe("VCS feedback as a GitHub App", () => {
  it("posts with an installation token minted by the app's JWT, once per repository", {
    timeout: SLOW_TEST_MS,
  }, async () => {
    const org = await seedOrg();
    const app = await registerApp();
    const hook = await appHook(org, { appId: app.appId, privateKey: app.privateKey });
    expect(hook).toMatchObject({ appId: app.appId, hasToken: false });
    const shown = await requestJson(`/api/v1/vcs-hooks/${hook.id}`, { token: org.tokens.admin });
    for (const answer of [JSON.stringify(hook), JSON.stringify(shown.body)]) {
      expect(answer).not.toContain("PRIVATE KEY");
      expect(answer).not.toContain(app.privateKey.split("\n")[1]);
    }
    const repo = freshRepo();
    const { workspace } = await runnableWorkspace(org, { vcsRepoUrl: repo.url });
    const shas = [randomSha(), randomSha()];
    const statuses = (made: FakeGithubCall[]) =>
      made.filter((c) => c.template === "/repos/{owner}/{repo}/statuses/{sha}");
    // One after the other: the second push's status finds the first one's token cached.
    for (const [i, sha] of shas.entries()) {
      await deliverGitHub(hook, "push", pushPayload(repo.url, sha), { secret: hook.secret });
      await expect
        .poll(async () => statuses(await calls(`app-${app.appId}`)).length, { timeout: 20_000 })
        .toBe(i + 1);
    }
    const made = await calls(`app-${app.appId}`);
    expect(made.flatMap((c) => c.violations)).toEqual([]);
    expect(made.every((c) => c.status < 300)).toBe(true);
    const minted = made.filter((c) => c.path.endsWith("/access_tokens"));
    expect(minted).toHaveLength(1);
    expect(minted[0]).toMatchObject({
      path: `/app/installations/${app.installationId}/access_tokens`,
      body: { repositories: [repo.name] },
    });
    expect(made[0]).toMatchObject({ method: "GET", path: `/repos/acme/${repo.name}/installation` });
    expect(
      statuses(made)
        .map((c) => c.path.split("/").at(-1))
        .sort(),
    ).toEqual([...shas].sort());
    for (const run of await runsOf(org, workspace.id)) {
      expect(await feedbackOf(org, run.id)).toMatchObject([{ kind: "status", posted: true }]);
    }
  });

  it("accepts the key as PKCS#8 and mints a new token once the cached one nears its expiry", {
    timeout: SLOW_TEST_MS,
  }, async () => {
    const org = await seedOrg();
    // Five and a half minutes: cached for the 30 s before the 5-minute refresh margin.
    const app = await registerApp(330);
    const hook = await appHook(org, { appId: app.appId, privateKey: app.privateKeyPkcs8 });
    const row = await findHookById(clock.deps.db, hook.id);
    const opened = row ? await openHookApp(clock.deps.env, row) : null;
    if (opened === null) {
      throw new Error("the hook's app key did not open");
    }
    const repo = freshRepo();
    const first = await installationToken(clock.deps, opened, fakeGithub, `acme/${repo.name}`);
    const again = await installationToken(clock.deps, opened, fakeGithub, `acme/${repo.name}`);
    expect(first.ok && again.ok && first.token === again.token).toBe(true);
    clock.advance(31_000);
    const renewed = await installationToken(clock.deps, opened, fakeGithub, `acme/${repo.name}`);
    expect(renewed.ok && first.ok && renewed.token !== first.token).toBe(true);
    const made = await calls(`app-${app.appId}`);
    expect(made.filter((c) => c.path.endsWith("/access_tokens"))).toHaveLength(2);
    expect(made.flatMap((c) => c.violations)).toEqual([]);
  });

  it("shows GitHub's refusal of a JWT signed with another app's key on the run", {
    timeout: SLOW_TEST_MS,
  }, async () => {
    const org = await seedOrg();
    const [app, other] = await Promise.all([registerApp(), registerApp()]);
    const hook = await appHook(org, { appId: app.appId, privateKey: other.privateKey });
    const repo = freshRepo();
    const { workspace } = await runnableWorkspace(org, { vcsRepoUrl: repo.url });
    await deliverGitHub(hook, "push", pushPayload(repo.url, randomSha()), { secret: hook.secret });
    const [run] = await runsOf(org, workspace.id);
    const host = new URL(fakeGithub).host;
    await expect
      .poll(async () => (await feedbackOf(org, String(run?.id)))[0], { timeout: 15_000 })
      .toMatchObject({
        kind: "status",
        posted: false,
        error: expect.stringMatching(
          new RegExp(
            `^status not posted: GitHub App installation: 401 A JSON web token could not be verified.* from ${host}$`,
          ),
        ),
      });
    expect((await getRun(org, String(run?.id))).status).not.toBe("errored");
  });

  it("refuses a key that is not an RSA private key, an app on a GitLab hook, and token with app", async () => {
    const org = await seedOrg();
    const app = await registerApp();
    const before = await snapshotD1();
    const bodies = [
      {
        provider: "github",
        app: {
          appId: app.appId,
          privateKey: `-----BEGIN RSA PRIVATE KEY-----\n${"A".repeat(200)}\n-----END RSA PRIVATE KEY-----`,
        },
      },
      { provider: "github", app: { appId: app.appId, privateKey: "x".repeat(200) } },
      { provider: "gitlab", app: { appId: app.appId, privateKey: app.privateKey } },
      { provider: "github", token: "t", app: { appId: app.appId, privateKey: app.privateKey } },
      { provider: "github", app: { appId: -1, privateKey: app.privateKey } },
    ];
    for (const body of bodies) {
      const res = await requestJson<{ error: { message: string } }>("/api/v1/vcs-hooks", {
        method: "POST",
        token: org.tokens.admin,
        body,
      });
      expect(res.status, JSON.stringify(res.body)).toBe(400);
      expect(res.body.error.message).toMatch(/app|token/);
    }
    expect(await snapshotD1()).toEqual(before);
  });

  it("switches a hook from a token to an app and back, the other credential removed", async () => {
    const org = await seedOrg();
    const app = await registerApp();
    const created = await requestJson<Hook>("/api/v1/vcs-hooks", {
      method: "POST",
      token: org.tokens.admin,
      body: { provider: "github", feedback: "coordinator", token: "tok-switch" },
    });
    const path = `/api/v1/vcs-hooks/${created.body.id}`;
    const toApp = await requestJson<Hook>(path, {
      method: "PATCH",
      token: org.tokens.admin,
      body: { app: { appId: app.appId, privateKey: app.privateKey } },
    });
    expect(toApp.body).toMatchObject({ appId: app.appId, hasToken: false });
    const toToken = await requestJson<Hook>(path, {
      method: "PATCH",
      token: org.tokens.admin,
      body: { token: "tok-again" },
    });
    expect(toToken.body).toMatchObject({ appId: null, hasToken: true });
    const off = await requestJson<Hook>(path, {
      method: "PATCH",
      token: org.tokens.admin,
      body: { token: null, app: null },
    });
    expect(off.body).toMatchObject({ appId: null, hasToken: false });
  });
});

describe("VCS feedback: rate limits", () => {
  it("waits as long as GitHub's x-ratelimit-reset asks before trying again", {
    timeout: SLOW_TEST_MS,
  }, async () => {
    const org = await seedOrg();
    const token = `reset-${crypto.randomUUID()}`;
    const res = await requestJson<Hook>("/api/v1/vcs-hooks", {
      method: "POST",
      token: org.tokens.admin,
      body: { provider: "github", feedback: "coordinator", apiUrl: fakeGithub, token },
    });
    const repo = freshRepo();
    const { workspace } = await runnableWorkspace(org, { vcsRepoUrl: repo.url });
    await deliverGitHub(res.body, "push", pushPayload(repo.url, randomSha()), {
      secret: res.body.secret,
    });
    await expect
      .poll(async () => (await calls(token)).map((c) => c.status), { timeout: 30_000 })
      .toEqual([403, 201]);
    const [limited, posted] = await calls(token);
    // The queue's own first backoff is 2 s: a gap this long is the reset GitHub asked for.
    expect((posted?.at ?? 0) - (limited?.at ?? 0)).toBeGreaterThanOrEqual(
      (RATE_LIMIT_WAIT_SECONDS - 1) * 1000,
    );
    const [run] = await runsOf(org, workspace.id);
    expect(await feedbackOf(org, String(run?.id))).toMatchObject([
      { kind: "status", posted: true, error: null },
    ]);
  });
});
