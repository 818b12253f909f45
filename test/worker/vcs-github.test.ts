import { env } from "cloudflare:workers";
import { sign } from "@octokit/webhooks-methods";
import { describe, expect, it } from "vitest";
import { request, requestJson } from "./helpers/api.ts";
import { useTestClock } from "./helpers/clock.ts";
import { snapshotD1 } from "./helpers/d1-snapshot.ts";
import { seedOrg, type TestOrg } from "./helpers/fixtures.ts";
import { getRun, type RunBody, runnableWorkspace, TestAgent } from "./helpers/runs.ts";
import {
  createHook,
  deliver,
  deliverGitHub,
  githubExample,
  type Json,
  randomSha,
} from "./helpers/vcs.ts";

const REPO = "https://github.com/Codertocat/Hello-World.git";

/** GitHub's push example (a branch push to master), moved to a fresh commit and files. */
function pushPayload(files: string[], sha = randomSha(), branch = "master"): Json {
  const p = githubExample("push", (e) => e.ref === "refs/heads/master");
  const commit = (p.commits as Json[])[0] as Json;
  Object.assign(commit, { id: sha, added: [], removed: [], modified: files });
  return { ...p, ref: `refs/heads/${branch}`, after: sha, head_commit: commit };
}

function prPayload(action: string, sha: string, number = 2): Json {
  const p = githubExample("pull_request", (e) => e.action === action);
  const pr = p.pull_request as Json;
  (pr.head as Json).sha = sha;
  return { ...p, number, pull_request: { ...pr, number } };
}

async function runsOf(org: TestOrg, workspaceId: string): Promise<RunBody[]> {
  const res = await requestJson<{ runs: RunBody[] }>(`/api/v1/workspaces/${workspaceId}/runs`, {
    token: org.tokens.reader,
  });
  expect(res.status).toBe(200);
  return res.body.runs;
}

describe("GitHub webhook: verification", () => {
  it("answers ping with 200 and records nothing", async () => {
    const org = await seedOrg();
    const hook = await createHook(org, "github");
    const before = await snapshotD1();
    const res = await deliverGitHub(hook, "ping", githubExample("ping"), { secret: hook.secret });
    expect(res.status).toBe(200);
    expect(await snapshotD1()).toEqual(before);
  });

  it("refuses a tampered body, a wrong secret, a missing or malformed signature with 401", async () => {
    const org = await seedOrg();
    const hook = await createHook(org, "github");
    await runnableWorkspace(org, { vcsRepoUrl: REPO });
    const payload = pushPayload(["main.tf"]);
    const body = JSON.stringify(payload);
    const signature = await sign(hook.secret, body);
    const tampered = body.replace("master", "mastes");
    const before = await snapshotD1();
    const cases: [string, Record<string, string>][] = [
      ["tampered", { "x-hub-signature-256": signature }],
      ["wrong secret", { "x-hub-signature-256": await sign("not-the-secret", body) }],
      ["missing", {}],
      ["garbage", { "x-hub-signature-256": "garbage" }],
      ["sha1 only", { "x-hub-signature-256": "sha1=0123" }],
      ["bad hex", { "x-hub-signature-256": `sha256=${"z".repeat(64)}` }],
    ];
    for (const [name, headers] of cases) {
      const res = await deliver(
        `/webhooks/github/${hook.id}`,
        { "x-github-event": "push", "x-github-delivery": `d-${name}`, ...headers },
        name === "tampered" ? tampered : body,
      );
      expect(res.status, name).toBe(401);
      expect((res.body.error as Json).code).toBe("UNAUTHORIZED");
    }
    expect(await snapshotD1()).toEqual(before);
  });

  it("answers 404 for an unknown hook or a GitLab hook on the GitHub URL", async () => {
    const org = await seedOrg();
    const gitlab = await createHook(org, "gitlab");
    for (const id of [gitlab.id, `hook_${"a".repeat(26)}`]) {
      const res = await deliverGitHub({ id }, "ping", {}, { secret: gitlab.secret });
      expect(res.status).toBe(404);
    }
    const bad = await deliverGitHub({ id: "nope" }, "ping", {}, { secret: "x" });
    expect(bad.status).toBe(400);
  });

  it("refuses a body over 5 MiB with 413 before verifying it", async () => {
    const org = await seedOrg();
    const hook = await createHook(org, "github");
    const body = `{"pad":"${"x".repeat(5 * 1024 * 1024)}"}`;
    const res = await deliverGitHub(hook, "push", body, { secret: hook.secret });
    expect(res.status).toBe(413);
    expect((res.body.error as Json).code).toBe("PAYLOAD_TOO_LARGE");
  });

  it("answers 400 for a signed body that is not JSON or lacks the fields, or no event header", async () => {
    const org = await seedOrg();
    const hook = await createHook(org, "github");
    const before = await snapshotD1();
    const notJson = await deliverGitHub(hook, "push", "{not json", { secret: hook.secret });
    expect(notJson.status).toBe(400);
    const noRepo = pushPayload(["a.tf"]);
    delete noRepo.repository;
    const missing = await deliverGitHub(hook, "push", noRepo, { secret: hook.secret });
    expect(missing.status).toBe(400);
    expect(String((missing.body.error as Json).message)).toContain("repository");
    const badSha = await deliverGitHub(
      hook,
      "push",
      { ...pushPayload(["a.tf"]), after: "--upload-pack=evil" },
      { secret: hook.secret },
    );
    expect(badSha.status).toBe(400);
    const body = JSON.stringify(pushPayload(["a.tf"]));
    const noEvent = await deliver(
      `/webhooks/github/${hook.id}`,
      { "x-github-delivery": "d1", "x-hub-signature-256": await sign(hook.secret, body) },
      body,
    );
    expect(noEvent.status).toBe(400);
    expect(await snapshotD1()).toEqual(before);
  });

  it("answers other events and actions 202 with the reason they are ignored", async () => {
    const org = await seedOrg();
    const hook = await createHook(org, "github");
    const issues = await deliverGitHub(hook, "issues", githubExample("issues"), {
      secret: hook.secret,
    });
    expect(issues.status).toBe(202);
    expect(issues.body.ignored).toBe('event "issues" does not trigger runs');
    const labeled = await deliverGitHub(hook, "pull_request", prPayload("labeled", randomSha()), {
      secret: hook.secret,
    });
    expect(labeled.status).toBe(202);
    expect(labeled.body.ignored).toContain('"labeled"');
    const tag = await deliverGitHub(
      hook,
      "push",
      githubExample("push", (e) => e.ref === "refs/tags/simple-tag"),
      { secret: hook.secret },
    );
    expect(tag.status).toBe(202);
    expect(tag.body.ignored).toContain("not a branch push");
  });

  it("accepts a form-encoded delivery (content type application/x-www-form-urlencoded)", async () => {
    const org = await seedOrg();
    const hook = await createHook(org, "github");
    const body = new URLSearchParams({ payload: JSON.stringify(githubExample("ping")) }).toString();
    const res = await deliver(
      `/webhooks/github/${hook.id}`,
      {
        "content-type": "application/x-www-form-urlencoded",
        "x-github-event": "ping",
        "x-github-delivery": "form-1",
        "x-hub-signature-256": await sign(hook.secret, body),
      },
      body,
    );
    expect(res.status).toBe(200);
  });
});

describe("GitHub webhook: push", () => {
  it("queues a run with the commit's details on the matching workspace, once per delivery", async () => {
    const org = await seedOrg();
    const hook = await createHook(org, "github");
    const { workspace } = await runnableWorkspace(org, { vcsRepoUrl: REPO });
    const sha = randomSha();
    const payload = pushPayload(["main.tf"], sha);
    const first = await deliverGitHub(hook, "push", payload, {
      secret: hook.secret,
      deliveryId: "72d3162e-cc78-11e3-81ab-4c9367dc0958",
    });
    expect(first.status).toBe(202);
    expect(first.body).toMatchObject({ accepted: true });
    const runs = await runsOf(org, workspace.id);
    expect(runs).toHaveLength(1);
    const run = await getRun(org, (runs[0] as RunBody).id);
    expect(run).toMatchObject({
      operation: "apply",
      isSpeculative: false,
      status: "plan_queued",
      source: "github",
      message: "Initial commit",
    });
    expect(run.vcs).toMatchObject({
      commitSha: sha,
      branch: "master",
      author: "Codertocat",
      commitMessage: "Initial commit",
      pullRequestNumber: null,
    });
    const cv = await env.DB.prepare(
      "SELECT source, repo_url, commit_sha, branch, r2_key FROM configuration_versions WHERE id = ?",
    )
      .bind(run.configurationVersionId)
      .first();
    expect(cv).toEqual({
      source: "vcs",
      repo_url: REPO,
      commit_sha: sha,
      branch: "master",
      r2_key: null,
    });

    const before = await snapshotD1();
    const replay = await deliverGitHub(hook, "push", payload, {
      secret: hook.secret,
      deliveryId: "72d3162e-cc78-11e3-81ab-4c9367dc0958",
    });
    expect(replay.status).toBe(200);
    expect(replay.body).toMatchObject({ duplicate: true });
    expect(await snapshotD1()).toEqual(before);

    const byCommit = await requestJson<{ runs: RunBody[] }>(`/api/v1/runs?commitSha=${sha}`, {
      token: org.tokens.reader,
    });
    expect(byCommit.body.runs.map((r) => r.id)).toEqual([run.id]);
  });

  describe("after a lost delivery", () => {
    const clock = useTestClock();

    it("a redelivery takes over a delivery whose processing was lost, without a second run", async () => {
      const org = await seedOrg();
      const hook = await createHook(org, "github");
      const { workspace } = await runnableWorkspace(org, { vcsRepoUrl: REPO });
      const payload = pushPayload(["main.tf"]);
      const send = () =>
        deliverGitHub(hook, "push", payload, { secret: hook.secret, deliveryId: "lost-1" });
      expect((await send()).status).toBe(202);
      // The isolate went away before the delivery's outcome was written (a fault, not time).
      await env.DB.prepare(
        "UPDATE vcs_deliveries SET outcome = NULL WHERE delivery_id = 'lost-1'",
      ).run();
      // Still within the window: the first attempt may be running, so this is a duplicate.
      clock.advance(60_000);
      expect((await send()).body).toMatchObject({ duplicate: true });
      clock.advance(10 * 60_000);
      // Taken over; the first attempt had already queued the commit's run, so nothing more runs.
      expect((await send()).body).toMatchObject({
        ignored: expect.stringContaining("already has a run on every workspace it triggers"),
      });
      expect(await runsOf(org, workspace.id)).toHaveLength(1);
      const row = await env.DB.prepare(
        "SELECT outcome FROM vcs_deliveries WHERE delivery_id = 'lost-1'",
      ).first<{ outcome: string }>();
      expect(JSON.parse(row?.outcome ?? "{}")).toMatchObject({ status: "processed" });
    });
  });

  it("matches by branch, trigger paths and working directory; a deletion queues nothing", async () => {
    const org = await seedOrg();
    const hook = await createHook(org, "github");
    const ssh = "git@github.com:Codertocat/Hello-World.git";
    const root = await runnableWorkspace(org, { vcsRepoUrl: REPO });
    const network = await runnableWorkspace(org, {
      vcsRepoUrl: ssh,
      workingDirectory: "envs/network",
    });
    const modules = await runnableWorkspace(org, {
      vcsRepoUrl: REPO,
      workingDirectory: "envs/app",
      vcsTriggerPaths: ["modules", "envs/app/*.tf"],
    });
    const staging = await runnableWorkspace(org, { vcsRepoUrl: REPO, vcsBranch: "staging" });
    const other = await runnableWorkspace(org, {
      vcsRepoUrl: "https://github.com/Codertocat/Other.git",
    });
    const count = async () =>
      Object.fromEntries(
        await Promise.all(
          [root, network, modules, staging, other].map(async (r, i) => [
            i,
            (await runsOf(org, r.workspace.id)).length,
          ]),
        ),
      );
    const push = (files: string[], branch = "master") =>
      deliverGitHub(hook, "push", pushPayload(files, randomSha(), branch), {
        secret: hook.secret,
      });

    expect((await push(["envs/network/main.tf"])).status).toBe(202);
    expect(await count()).toEqual({ 0: 1, 1: 1, 2: 0, 3: 0, 4: 0 });
    await push(["modules/vpc/main.tf"]);
    expect(await count()).toEqual({ 0: 2, 1: 1, 2: 1, 3: 0, 4: 0 });
    await push(["envs/app/main.tf", "envs/app/sub/x.tf"]);
    expect(await count()).toEqual({ 0: 3, 1: 1, 2: 2, 3: 0, 4: 0 });
    await push(["README.md"], "staging");
    expect(await count()).toEqual({ 0: 3, 1: 1, 2: 2, 3: 1, 4: 0 });

    const deletion = githubExample("push", (e) => e.ref === "refs/heads/master");
    Object.assign(deletion, {
      ref: "refs/heads/staging",
      deleted: true,
      after: "0".repeat(40),
      head_commit: null,
      commits: [],
    });
    const res = await deliverGitHub(hook, "push", deletion, { secret: hook.secret });
    expect(res.status).toBe(202);
    expect(await count()).toEqual({ 0: 3, 1: 1, 2: 2, 3: 1, 4: 0 });

    const deliveries = await requestJson<{ deliveries: { outcome: Json }[] }>(
      `/api/v1/vcs-hooks/${hook.id}/deliveries`,
      { token: org.tokens.admin },
    );
    expect(deliveries.body.deliveries[0]?.outcome).toMatchObject({
      status: "processed",
      runs: [],
      skipped: expect.arrayContaining([
        { workspaceId: staging.workspace.id, reason: "branch staging was deleted" },
        {
          workspaceId: root.workspace.id,
          reason: "push to staging, the workspace follows master",
        },
      ]),
    });
  });

  it("serves only its repository when the hook names one", async () => {
    const org = await seedOrg();
    const hook = await createHook(org, "github", "https://github.com/Codertocat/Other.git");
    const { workspace } = await runnableWorkspace(org, { vcsRepoUrl: REPO });
    const res = await deliverGitHub(hook, "push", pushPayload(["main.tf"]), {
      secret: hook.secret,
    });
    expect(res.status).toBe(202);
    expect(res.body.ignored).toContain("serves https://github.com/Codertocat/Other.git only");
    expect(await runsOf(org, workspace.id)).toHaveLength(0);
  });

  it("does not queue runs in another organization's workspaces", async () => {
    const org = await seedOrg();
    const other = await seedOrg();
    const hook = await createHook(org, "github");
    const { workspace } = await runnableWorkspace(other, { vcsRepoUrl: REPO });
    await deliverGitHub(hook, "push", pushPayload(["main.tf"]), { secret: hook.secret });
    expect(await runsOf(other, workspace.id)).toHaveLength(0);
  });
});

describe("GitHub webhook: pull requests", () => {
  it("plans each new commit speculatively and cancels the superseded plan", async () => {
    const org = await seedOrg();
    const hook = await createHook(org, "github");
    const { workspace, configurationVersionId } = await runnableWorkspace(org, {
      vcsRepoUrl: REPO,
    });
    const first = randomSha();
    const opened = await deliverGitHub(hook, "pull_request", prPayload("opened", first), {
      secret: hook.secret,
    });
    expect(opened.status).toBe(202);
    const [planA] = await runsOf(org, workspace.id);
    expect(planA).toMatchObject({ isSpeculative: true, operation: "plan" });
    const shownA = await getRun(org, planA?.id ?? "");
    expect(shownA).toMatchObject({ source: "github", status: "plan_queued" });
    expect(shownA.vcs).toMatchObject({
      commitSha: first,
      branch: "changes",
      pullRequestNumber: 2,
      author: "Codertocat",
      isFork: false,
    });

    const second = randomSha();
    await deliverGitHub(hook, "pull_request", prPayload("synchronize", second), {
      secret: hook.secret,
    });
    const runs = await runsOf(org, workspace.id);
    expect(runs).toHaveLength(2);
    expect((await getRun(org, planA?.id ?? "")).status).toBe("canceled");
    const planB = runs.find((r) => r.id !== planA?.id);
    expect((await getRun(org, planB?.id ?? "")).vcs).toMatchObject({ commitSha: second });

    // A PR's commit never becomes the default configuration of a later run.
    const manual = await requestJson<RunBody>(`/api/v1/workspaces/${workspace.id}/runs`, {
      method: "POST",
      token: org.tokens.member,
      body: { operation: "apply" },
    });
    expect(manual.status).toBe(201);
    expect(manual.body.configurationVersionId).toBe(configurationVersionId);

    await deliverGitHub(hook, "pull_request", prPayload("closed", second), {
      secret: hook.secret,
    });
    expect((await getRun(org, planB?.id ?? "")).status).toBe("canceled");

    // Reopened at the same commit: planned again, since the earlier plan was canceled.
    await deliverGitHub(hook, "pull_request", prPayload("reopened", second), {
      secret: hook.secret,
    });
    const afterReopen = await runsOf(org, workspace.id);
    expect(afterReopen.filter((r) => r.isSpeculative && r.status === "plan_queued")).toHaveLength(
      1,
    );
  });

  it("refuses fork pull requests by default and plans them without secrets when allowed", async () => {
    const org = await seedOrg();
    const hook = await createHook(org, "github");
    const refusing = await runnableWorkspace(org, { vcsRepoUrl: REPO });
    const allowing = await runnableWorkspace(org, {
      vcsRepoUrl: REPO,
      forkPullRequests: "plan_without_secrets",
    });
    const payload = prPayload("opened", randomSha(), 7);
    const pr = payload.pull_request as Json;
    (pr.head as Json).repo = { ...((pr.head as Json).repo as Json), id: 999, fork: true };
    const res = await deliverGitHub(hook, "pull_request", payload, { secret: hook.secret });
    expect(res.status).toBe(202);
    expect(await runsOf(org, refusing.workspace.id)).toHaveLength(0);
    const [run] = await runsOf(org, allowing.workspace.id);
    expect((await getRun(org, run?.id ?? "")).vcs).toMatchObject({
      isFork: true,
      pullRequestNumber: 7,
    });
    const row = await env.DB.prepare("SELECT is_fork FROM runs WHERE id = ?").bind(run?.id).first();
    expect(row).toEqual({ is_fork: 1 });
  });
});

describe("GitHub webhook: what the agent receives", () => {
  async function setVariable(org: TestOrg, wsId: string, key: string, sensitive: boolean) {
    const res = await requestJson(`/api/v1/workspaces/${wsId}/vars/${key}`, {
      method: "PUT",
      token: org.tokens.admin,
      body: { value: `${key}-value`, category: "env", sensitive },
    });
    expect(res.status === 200 || res.status === 201, JSON.stringify(res.body)).toBe(true);
  }

  it("a fork plan's lease carries the VCS source and no sensitive variables", async () => {
    const org = await seedOrg();
    const hook = await createHook(org, "github");
    const { workspace, agentToken } = await runnableWorkspace(org, {
      vcsRepoUrl: REPO,
      workingDirectory: "",
      forkPullRequests: "plan_without_secrets",
    });
    await setVariable(org, workspace.id, "PLAIN", false);
    await setVariable(org, workspace.id, "SECRET", true);
    const sha = randomSha();
    const payload = prPayload("opened", sha, 9);
    const head = (payload.pull_request as Json).head as Json;
    head.repo = { ...(head.repo as Json), id: 4242, fork: true };
    expect(
      (await deliverGitHub(hook, "pull_request", payload, { secret: hook.secret })).status,
    ).toBe(202);
    const agent = await TestAgent.register(agentToken);
    const job = await agent.lease();
    expect(job.spec.configuration).toMatchObject({ source: "vcs", repoUrl: REPO, commitSha: sha });
    expect(job.spec).toMatchObject({ isSpeculative: true, phase: "plan" });
    expect((job.variables ?? []).map((v) => v.key)).toEqual(["PLAIN"]);
  });

  it("a newer commit asks the agent running the older plan to cancel it", async () => {
    const org = await seedOrg();
    const hook = await createHook(org, "github");
    const { workspace, agentToken } = await runnableWorkspace(org, { vcsRepoUrl: REPO });
    await deliverGitHub(hook, "pull_request", prPayload("opened", randomSha()), {
      secret: hook.secret,
    });
    const agent = await TestAgent.register(agentToken);
    const job = await agent.lease();
    await agent.start(job);
    expect((await getRun(org, job.runId)).status).toBe("planning");
    await deliverGitHub(hook, "pull_request", prPayload("synchronize", randomSha()), {
      secret: hook.secret,
    });
    const beat = await agent.heartbeat([job]);
    expect(beat.body.cancel).toEqual([expect.objectContaining({ jobId: job.jobId })]);
    expect((await getRun(org, job.runId)).cancelRequestedAt).toEqual(expect.any(String));
    expect(await runsOf(org, workspace.id)).toHaveLength(2);
  });
});

it("the webhook routes are in the OpenAPI document", async () => {
  const res = await request("/api/v1/openapi.json");
  const doc = (await res.json()) as { paths: Record<string, unknown> };
  expect(Object.keys(doc.paths)).toEqual(
    expect.arrayContaining([
      "/webhooks/github/{hookId}",
      "/webhooks/gitlab/{hookId}",
      "/api/v1/vcs-hooks",
      "/api/v1/vcs-hooks/{hookId}",
      "/api/v1/vcs-hooks/{hookId}/rotate-secret",
      "/api/v1/vcs-hooks/{hookId}/deliveries",
    ]),
  );
});
