import { describe, expect, it } from "vitest";
import { requestJson } from "./helpers/api.ts";
import { snapshotD1 } from "./helpers/d1-snapshot.ts";
import { seedOrg, type TestOrg } from "./helpers/fixtures.ts";
import { getRun, type RunBody, runnableWorkspace } from "./helpers/runs.ts";
import { createHook, deliverGitLab, gitlabExample, type Json, randomSha } from "./helpers/vcs.ts";

// GitLab's documented examples use http:// URLs; the workspace is configured with the ssh form.
const PUSH_REPO = "git@example.com:mike/diaspora.git";
const MR_REPO = "https://example.com/gitlabhq/gitlab-test.git";

async function runsOf(org: TestOrg, workspaceId: string): Promise<RunBody[]> {
  const res = await requestJson<{ runs: RunBody[] }>(`/api/v1/workspaces/${workspaceId}/runs`, {
    token: org.tokens.reader,
  });
  return res.body.runs;
}

function mergeRequest(attributes: Json): Json {
  const p = gitlabExample("merge_request");
  return { ...p, object_attributes: { ...(p.object_attributes as Json), ...attributes } };
}

describe("GitLab webhook", () => {
  it("refuses a wrong or missing token with 401 and changes nothing", async () => {
    const org = await seedOrg();
    const hook = await createHook(org, "gitlab");
    await runnableWorkspace(org, { vcsRepoUrl: PUSH_REPO });
    const before = await snapshotD1();
    for (const token of ["wrong", `${hook.secret}x`, hook.secret.slice(0, -1), ""]) {
      const res = await deliverGitLab(hook, "Push Hook", gitlabExample("push"), { token });
      expect(res.status).toBe(401);
    }
    expect(await snapshotD1()).toEqual(before);
  });

  it("queues a run for the documented push example (commit list incomplete: runs anyway)", async () => {
    const org = await seedOrg();
    const hook = await createHook(org, "gitlab");
    const { workspace } = await runnableWorkspace(org, {
      vcsRepoUrl: PUSH_REPO,
      workingDirectory: "terraform",
    });
    const res = await deliverGitLab(hook, "Push Hook", gitlabExample("push"), {
      token: hook.secret,
    });
    expect(res.status).toBe(202);
    const [run] = await runsOf(org, workspace.id);
    const shown = await getRun(org, run?.id ?? "");
    expect(shown).toMatchObject({ source: "gitlab", operation: "apply", message: "fixed readme" });
    expect(shown.vcs).toMatchObject({
      commitSha: "da1560886d4f094c3e6c9ef40349f7d38b5d27d7",
      branch: "master",
      author: "jsmith",
      commitMessage: "fixed readme",
    });
  });

  it("skips a complete push whose files are outside the working directory", async () => {
    const org = await seedOrg();
    const hook = await createHook(org, "gitlab");
    const { workspace } = await runnableWorkspace(org, {
      vcsRepoUrl: PUSH_REPO,
      workingDirectory: "terraform",
    });
    const push = { ...gitlabExample("push"), total_commits_count: 2 };
    expect((await deliverGitLab(hook, "Push Hook", push, { token: hook.secret })).status).toBe(202);
    expect(await runsOf(org, workspace.id)).toHaveLength(0);
    const deletion = { ...push, after: "0".repeat(40), checkout_sha: null, commits: [] };
    expect((await deliverGitLab(hook, "Push Hook", deletion, { token: hook.secret })).status).toBe(
      202,
    );
    expect(await runsOf(org, workspace.id)).toHaveLength(0);
  });

  it("dedupes on Idempotency-Key, then X-Gitlab-Event-UUID, then the body", async () => {
    const org = await seedOrg();
    const hook = await createHook(org, "gitlab");
    const { workspace } = await runnableWorkspace(org, { vcsRepoUrl: PUSH_REPO });
    const send = (payload: Json, headers: Record<string, string>) =>
      deliverGitLab(hook, "Push Hook", payload, { token: hook.secret, headers });
    const a = { ...gitlabExample("push"), after: randomSha() };
    expect((await send(a, { "idempotency-key": "k-1", "x-gitlab-event-uuid": "u-1" })).status).toBe(
      202,
    );
    // A retry keeps its Idempotency-Key even if the event UUID were different.
    const retry = await send(a, { "idempotency-key": "k-1", "x-gitlab-event-uuid": "u-2" });
    expect(retry).toMatchObject({ status: 200, body: { duplicate: true } });
    const b = { ...gitlabExample("push"), after: randomSha() };
    expect((await send(b, { "x-gitlab-event-uuid": "u-3" })).status).toBe(202);
    expect((await send(b, { "x-gitlab-event-uuid": "u-3" })).status).toBe(200);
    const c = { ...gitlabExample("push"), after: randomSha() };
    const noIds = { "x-gitlab-event-uuid": "" };
    expect((await send(c, noIds)).status).toBe(202);
    expect((await send(c, noIds)).status).toBe(200);
    expect(await runsOf(org, workspace.id)).toHaveLength(3);
  });

  it("plans merge requests, supersedes on update with new commits, ignores metadata edits", async () => {
    const org = await seedOrg();
    const hook = await createHook(org, "gitlab");
    const { workspace } = await runnableWorkspace(org, { vcsRepoUrl: MR_REPO });
    const opened = await deliverGitLab(hook, "Merge Request Hook", gitlabExample("merge_request"), {
      token: hook.secret,
    });
    expect(opened.status).toBe(202);
    const [first] = await runsOf(org, workspace.id);
    const shown = await getRun(org, first?.id ?? "");
    expect(shown).toMatchObject({ source: "gitlab", isSpeculative: true });
    expect(shown.vcs).toMatchObject({
      pullRequestNumber: 1,
      branch: "ms-viewport",
      author: "root",
      isFork: false,
    });

    const edit = await deliverGitLab(
      hook,
      "Merge Request Hook",
      mergeRequest({ action: "update" }),
      {
        token: hook.secret,
      },
    );
    expect(edit.status).toBe(202);
    expect(edit.body.ignored).toContain('"update"');

    const newSha = randomSha();
    const update = mergeRequest({
      action: "update",
      oldrev: "da1560886d4f094c3e6c9ef40349f7d38b5d27d7",
      last_commit: { id: newSha, message: "more" },
    });
    expect(
      (await deliverGitLab(hook, "Merge Request Hook", update, { token: hook.secret })).status,
    ).toBe(202);
    expect(await runsOf(org, workspace.id)).toHaveLength(2);
    expect((await getRun(org, first?.id ?? "")).status).toBe("canceled");
  });

  it("refuses merge requests from another project (a fork) unless the workspace allows them", async () => {
    const org = await seedOrg();
    const hook = await createHook(org, "gitlab");
    const refusing = await runnableWorkspace(org, { vcsRepoUrl: MR_REPO });
    const allowing = await runnableWorkspace(org, {
      vcsRepoUrl: MR_REPO,
      forkPullRequests: "plan_without_secrets",
    });
    const fork = mergeRequest({ source_project_id: 99 });
    expect(
      (await deliverGitLab(hook, "Merge Request Hook", fork, { token: hook.secret })).status,
    ).toBe(202);
    expect(await runsOf(org, refusing.workspace.id)).toHaveLength(0);
    const [run] = await runsOf(org, allowing.workspace.id);
    expect((await getRun(org, run?.id ?? "")).vcs).toMatchObject({ isFork: true });
  });

  it("answers 400 for malformed payloads and 202 for events it does not handle", async () => {
    const org = await seedOrg();
    const hook = await createHook(org, "gitlab");
    const before = await snapshotD1();
    const bad = await deliverGitLab(hook, "Push Hook", "[1,2", { token: hook.secret });
    expect(bad.status).toBe(400);
    const wrongKind = await deliverGitLab(hook, "Push Hook", gitlabExample("merge_request"), {
      token: hook.secret,
    });
    expect(wrongKind.status).toBe(400);
    const issue = await deliverGitLab(
      hook,
      "Issue Hook",
      { object_kind: "issue" },
      {
        token: hook.secret,
      },
    );
    expect(issue).toMatchObject({
      status: 202,
      body: { ignored: 'event "Issue Hook" does not trigger runs' },
    });
    expect(await snapshotD1()).toEqual(before);
  });
});
