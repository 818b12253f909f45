/**
 * The plan comment's content: changed resources grouped by action from the plan JSON the plan
 * job stored (Terraform's and Pulumi's), the last lines of a failed job's log as stored, size
 * within GitHub's and GitLab's limits with a note when cut, and nothing in it that escapes its
 * code blocks. Through the real routes, queue and loopback GitHub; the pure parts directly.
 */
import { describe, expect, inject, it } from "vitest";
import {
  GITHUB_COMMENT_MAX,
  GITLAB_COMMENT_MAX,
  planComment,
  resourceChangesOf,
} from "../../src/vcs-feedback/comment.ts";
import type { FakeGithubCall } from "../setup/fake-github.ts";
import type { FakeGitlabCall } from "../setup/fake-gitlab.ts";
import { requestJson } from "./helpers/api.ts";
import { seedOrg } from "./helpers/fixtures.ts";
import { jobPath } from "./helpers/pools.ts";
import { runnableWorkspace, TestAgent } from "./helpers/runs.ts";
import { sha256Hex } from "./helpers/tarball.ts";
import {
  deliverGitHub,
  githubExample,
  type HookBody,
  type Json,
  randomSha,
} from "./helpers/vcs.ts";

const SLOW_TEST_MS = 60_000;
const fakeGithub = inject("fakeGithubUrl");
const fakeGitlab = inject("fakeGitlabUrl");
const enc = (s: string) => new TextEncoder().encode(s);

const TERRAFORM_PLAN = {
  format_version: "1.2",
  resource_changes: [
    { address: "null_resource.new", mode: "managed", change: { actions: ["create"] } },
    { address: "null_resource.edited", mode: "managed", change: { actions: ["update"] } },
    {
      address: "null_resource.swapped",
      mode: "managed",
      change: { actions: ["delete", "create"] },
    },
    { address: "null_resource.cbd", mode: "managed", change: { actions: ["create", "delete"] } },
    { address: "null_resource.gone", mode: "managed", change: { actions: ["delete"] } },
    { address: "null_resource.same", mode: "managed", change: { actions: ["no-op"] } },
    { address: "data.null_data_source.read", mode: "data", change: { actions: ["read"] } },
    {
      address: "null_resource.adopted",
      mode: "managed",
      change: { actions: ["no-op"], importing: { id: "abc" } },
    },
  ],
};

describe("the plan's changed resources", () => {
  it("groups Terraform's resource_changes by action: a delete with a create is a replacement", () => {
    expect(resourceChangesOf(TERRAFORM_PLAN)).toEqual({
      create: ["null_resource.new"],
      update: ["null_resource.edited"],
      replace: ["null_resource.swapped", "null_resource.cbd"],
      delete: ["null_resource.gone"],
      import: ["null_resource.adopted"],
    });
  });

  it("groups Pulumi's preview steps by op, naming each resource and its type", () => {
    const urn = (type: string, name: string) => `urn:pulumi:dev::infra::${type}::${name}`;
    const preview = {
      steps: [
        { op: "create", urn: urn("aws:s3/bucket:Bucket", "logs") },
        { op: "update", urn: urn("pulumi:pulumi:Stack$aws:ec2/instance:Instance", "web") },
        { op: "replace", urn: urn("aws:rds/instance:Instance", "db") },
        { op: "create-replacement", urn: urn("aws:rds/instance:Instance", "db") },
        { op: "delete-replaced", urn: urn("aws:rds/instance:Instance", "db") },
        { op: "delete", urn: urn("aws:sqs/queue:Queue", "old") },
        { op: "same", urn: urn("aws:iam/role:Role", "kept") },
      ],
      changeSummary: { create: 1, update: 1, replace: 1, delete: 1, same: 1 },
    };
    expect(resourceChangesOf(preview)).toEqual({
      create: ["logs (aws:s3/bucket:Bucket)"],
      update: ["web (aws:ec2/instance:Instance)"],
      replace: ["db (aws:rds/instance:Instance)"],
      delete: ["old (aws:sqs/queue:Queue)"],
      import: [],
    });
    expect(resourceChangesOf({ neither: true })).toBeNull();
  });
});

describe("the comment's size and safety", () => {
  const base = {
    workspaceId: "ws_x",
    workspaceName: "network-prod",
    runUrl: "https://outpost.example.com/ui/runs/run_x",
    commitSha: "a".repeat(40),
    status: { state: "success" as const, description: "Plan: 20000 to add" },
    agentName: "agent-1",
    detail: null,
  };
  const many = Array.from({ length: 20_000 }, (_, i) => `null_resource.r${i}["${"k".repeat(20)}"]`);
  const resources = { create: many, update: [], replace: [], delete: [], import: [] };

  it("cuts a huge plan to GitHub's limit with a note, and keeps more within GitLab's", () => {
    const github = planComment({ ...base, resources });
    expect(github.length).toBeLessThanOrEqual(GITHUB_COMMENT_MAX);
    expect(github).toContain("**Create (20000)** · ");
    expect(github).toContain("_Cut to fit the comment size limit; the run page has all of it._");
    const gitlab = planComment({ ...base, resources, maxChars: GITLAB_COMMENT_MAX });
    expect(gitlab.length).toBeLessThanOrEqual(GITLAB_COMMENT_MAX);
    expect(gitlab).toContain(many.at(-1));
    expect(gitlab).not.toContain("Cut to fit");
    expect(github).toContain(many[0]);
  });

  it("keeps a log's backticks, mentions and HTML inside its code block", () => {
    const hostile = "```\n@everyone <img src=x onerror=alert(1)> [click](https://evil)\n````";
    const body = planComment({
      ...base,
      workspaceName: "[ws](https://evil)",
      status: { state: "failure", description: "Errored: @admins look" },
      detail: "exit 1",
      logTail: `${"x".repeat(200_000)}\n${hostile}`,
    });
    expect(body.length).toBeLessThanOrEqual(GITHUB_COMMENT_MAX);
    expect(body).toContain("`````\n");
    expect(body).toContain("\\@admins");
    expect(body).toContain("\\[ws\\]\\(https://evil\\)");
    expect(planComment({ ...base, agentName: "web_1`x" })).toContain("ran on agent `web_1'x`");
    expect(body).toContain("Cut to fit");
    expect(
      body.endsWith(
        `${hostile}\n\`\`\`\`\`\n\n_Cut to fit the comment size limit; the run page has all of it._`,
      ),
    ).toBe(true);
  });
});

function prPayload(sha: string, number: number): Json {
  const p = githubExample("pull_request", (e) => e.action === "opened");
  const pr = structuredClone(p.pull_request as Json);
  (pr.head as Json).sha = sha;
  return { ...p, action: "synchronize", number, pull_request: { ...pr, number } };
}

async function calls(
  token: string,
  server = fakeGithub,
): Promise<(FakeGithubCall | FakeGitlabCall)[]> {
  const res = await fetch(`${server}/_calls/${encodeURIComponent(token)}`);
  return (await res.json()) as (FakeGithubCall | FakeGitlabCall)[];
}

async function commentOn(token: string, number: number): Promise<string | undefined> {
  const made = await calls(token);
  const written = made.filter(
    (c) => c.path.endsWith(`/issues/${number}/comments`) && c.method === "POST",
  );
  return (written.at(-1)?.body as { body?: string } | undefined)?.body;
}

describe("the comment of a pull request's plan", () => {
  async function prRun(number: number) {
    const org = await seedOrg();
    const token = `tok-comment-${crypto.randomUUID()}`;
    const hook = await requestJson<HookBody & { secret: string }>("/api/v1/vcs-hooks", {
      method: "POST",
      token: org.tokens.admin,
      body: { provider: "github", feedback: "coordinator", apiUrl: fakeGithub, token },
    });
    const { workspace, agentToken } = await runnableWorkspace(org, {
      vcsRepoUrl: "https://github.com/Codertocat/Hello-World.git",
    });
    await deliverGitHub(hook.body, "pull_request", prPayload(randomSha(), number), {
      secret: hook.body.secret,
    });
    const agent = await TestAgent.register(agentToken);
    const job = await agent.lease();
    await agent.start(job);
    return { org, token, workspace, agent, job };
  }

  it("lists the plan JSON's resources by action, with the agent that ran it", {
    timeout: SLOW_TEST_MS,
  }, async () => {
    const number = 7100 + Math.floor(Math.random() * 800);
    const { token, agent, job } = await prRun(number);
    const json = enc(JSON.stringify(TERRAFORM_PLAN));
    const upload = await requestJson(
      `/agent/v1/jobs/${encodeURIComponent(job.jobId)}/artifacts/plan.json`,
      {
        method: "PUT",
        token: job.runToken ?? "",
        body: json,
        headers: {
          "content-type": "application/octet-stream",
          "outpost-sha256": await sha256Hex(json),
        },
      },
    );
    expect(upload.status, JSON.stringify(upload.body)).toBeLessThan(300);
    const summary = { adds: 3, changes: 1, destroys: 3, imports: 1, hasChanges: true };
    await agent.finish(job, { outcome: "succeeded", planSummary: summary });
    await expect.poll(() => commentOn(token, number), { timeout: 15_000 }).toBeDefined();
    const body = (await commentOn(token, number)) ?? "";
    expect(body).toContain("**Plan: 3 to add, 1 to change, 3 to destroy**");
    expect(body).toMatch(/\*\*Create \(1\)\*\*\n```\n\+ null_resource\.new\n```/);
    expect(body).toContain("**Update (1)**\n```\n~ null_resource.edited\n```");
    expect(body).toContain("-/+ null_resource.swapped\n-/+ null_resource.cbd");
    expect(body).toContain("- null_resource.gone");
    expect(body).toContain("= null_resource.adopted");
    expect(body).not.toContain("null_resource.same");
    expect(body).toMatch(/ran on agent `[^`]+`/);
    expect((await calls(token)).flatMap((c) => c.violations)).toEqual([]);
  });

  it("shows a failed plan's reason and the last lines of its log as stored", {
    timeout: SLOW_TEST_MS,
  }, async () => {
    const number = 8100 + Math.floor(Math.random() * 800);
    const { token, agent, job } = await prRun(number);
    const lines = Array.from({ length: 100 }, (_, i) => `line ${i + 1}`);
    const log = `${lines.join("\n")}\nError: Invalid reference ***\n`;
    const put = await requestJson(
      jobPath(job.jobId, job.leaseId, "start").replace(/start$/, "logs?offset=0"),
      {
        method: "PUT",
        token: job.runToken ?? "",
        body: enc(log),
        headers: { "content-type": "application/octet-stream" },
      },
    );
    expect(put.status, JSON.stringify(put.body)).toBe(200);
    await agent.finish(job, {
      outcome: "failed",
      exitCode: 1,
      message: "terraform plan exited with code 1",
    });
    await expect.poll(() => commentOn(token, number), { timeout: 15_000 }).toBeDefined();
    const body = (await commentOn(token, number)) ?? "";
    expect(body).toContain("**Errored: terraform plan exited with code 1**");
    expect(body).toContain("**Log (last lines)**");
    expect(body).toContain("line 100\nError: Invalid reference ***");
    expect(body).toContain("line 62\n");
    expect(body).not.toContain("line 61\n");
    const statuses = (await calls(token)).filter((c) => c.path.includes("/statuses/"));
    expect(statuses.at(-1)?.body).toMatchObject({ state: "failure" });
  });
});

describe("the loopback GitLab", () => {
  it("refuses what GitLab's documented parameters do not allow, naming why", async () => {
    const token = `probe-${crypto.randomUUID()}`;
    const send = (method: string, path: string, body: unknown) =>
      fetch(`${fakeGitlab}/api/v4/projects/g%2Fp${path}`, {
        method,
        headers: { "private-token": token, "content-type": "application/json" },
        body: JSON.stringify(body),
      });
    expect((await send("POST", `/statuses/${randomSha()}`, { state: "error" })).status).toBe(400);
    expect(
      (await send("POST", `/statuses/${randomSha()}`, { state: "success", context_url: "x" }))
        .status,
    ).toBe(400);
    expect((await send("POST", "/merge_requests/1/notes", {})).status).toBe(400);
    expect((await send("PATCH", "/merge_requests/1/notes/3", { body: "x" })).status).toBe(404);
    expect((await calls(token, fakeGitlab)).map((c) => c.violations)).toEqual([
      ['state "error" is not one of pending, running, success, failed, canceled, skipped'],
      ["parameter context_url is not documented"],
      ["parameter body is required"],
      ["no such GitLab endpoint"],
    ]);
  });
});
