/**
 * The dashboard's VCS hook pages: the org's hooks, and per hook its deliveries with the VCS
 * feedback of the runs each queued (a refusal shown with the VCS's words). Admins only; another
 * organization's hook is not found.
 */
import { describe, expect, inject, it } from "vitest";
import { requestJson } from "./helpers/api.ts";
import { seedOrg } from "./helpers/fixtures.ts";
import { runnableWorkspace } from "./helpers/runs.ts";
import { signIn } from "./helpers/ui.ts";
import {
  deliverGitHub,
  githubExample,
  type HookBody,
  type Json,
  randomSha,
} from "./helpers/vcs.ts";

const fakeGithub = inject("fakeGithubUrl");
const REPO = "https://github.com/Codertocat/Hello-World.git";

function pushPayload(sha: string): Json {
  const p = githubExample("push", (e) => e.ref === "refs/heads/master");
  const commit = (p.commits as Json[])[0] as Json;
  Object.assign(commit, { id: sha, added: [], removed: [], modified: ["main.tf"] });
  return { ...p, after: sha, head_commit: commit };
}

describe("/ui/vcs-hooks", () => {
  it("lists hooks and shows each delivery's runs with their VCS feedback, to admins only", {
    timeout: 60_000,
  }, async () => {
    const org = await seedOrg();
    const other = await seedOrg();
    const created = await requestJson<HookBody & { secret: string }>("/api/v1/vcs-hooks", {
      method: "POST",
      token: org.tokens.admin,
      body: {
        provider: "github",
        description: "infra <b>hook</b>",
        feedback: "coordinator",
        apiUrl: fakeGithub,
        token: `bad-${crypto.randomUUID()}`,
      },
    });
    const hook = created.body;
    const { workspace } = await runnableWorkspace(org, { vcsRepoUrl: REPO });
    await deliverGitHub(hook, "push", pushPayload(randomSha()), { secret: hook.secret });
    const runs = await requestJson<{ runs: { id: string }[] }>(
      `/api/v1/workspaces/${workspace.id}/runs`,
      { token: org.tokens.reader },
    );
    const runId = runs.body.runs[0]?.id ?? "";
    const admin = await signIn(org.tokens.admin);
    const host = new URL(fakeGithub).host;
    const page = async () => (await admin.get(`/ui/vcs-hooks/${hook.id}`)).text();
    await expect
      .poll(page, { timeout: 15_000 })
      .toContain(`<strong>status not posted: 401 Bad credentials from ${host}</strong>`);
    const html = await page();
    expect(html).toContain(`<a href="/ui/runs/${runId}">${runId}</a> status:`);
    expect(html).toContain("processed: 1 queued, 0 canceled, 0 skipped");
    expect(html).toContain("infra &lt;b&gt;hook&lt;/b&gt;");
    expect(html).not.toContain(hook.secret);
    const list = await (await admin.get("/ui/vcs-hooks")).text();
    expect(list).toContain(`href="/ui/vcs-hooks/${hook.id}"`);
    expect(list).toContain('href="/ui/vcs-hooks"');

    const reader = await signIn(org.tokens.reader);
    expect((await reader.get("/ui/vcs-hooks")).status).toBe(403);
    expect((await reader.get(`/ui/vcs-hooks/${hook.id}`)).status).toBe(403);
    expect(await (await reader.get("/ui/runs")).text()).not.toContain('href="/ui/vcs-hooks"');
    const stranger = await signIn(other.tokens.admin);
    expect((await stranger.get(`/ui/vcs-hooks/${hook.id}`)).status).toBe(404);
    expect((await admin.get("/ui/vcs-hooks/hook_nope")).status).toBe(404);
  });
});
