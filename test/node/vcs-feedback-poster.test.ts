/**
 * The agent's VCS feedback poster against the loopback GitHub of `test/setup/fake-github.ts`
 * (every request checked against `@octokit/openapi`) and the loopback GitLab of
 * `test/setup/fake-gitlab.ts` (checked against its documented parameters): statuses, the plan comment created then edited in place,
 * retries with backoff for 5xx and rate limits (never sooner than Retry-After), none for 401,
 * 404 and 422, and the token sent only to its own host over https or loopback http.
 */
import type { CommentFeedback, FeedbackItem, StatusFeedback } from "@outpost/protocol";
import { describe, expect, inject, it } from "vitest";
import { postFeedback } from "../../agent/src/feedback/poster.ts";
import type { FakeGithubCall } from "../setup/fake-github.ts";

const fake = inject("fakeGithubUrl");
const host = new URL(fake).host;
const fakeGitlab = inject("fakeGitlabUrl");
const gitlabHost = new URL(fakeGitlab).host;
const FAST = { baseMs: 50, capMs: 200 };

function sha(): string {
  return Array.from(crypto.getRandomValues(new Uint8Array(20)), (b) =>
    b.toString(16).padStart(2, "0"),
  ).join("");
}

function token(prefix = "agent"): string {
  return `${prefix}-${crypto.randomUUID()}`;
}

async function calls(t: string, server = fake): Promise<FakeGithubCall[]> {
  return (await (
    await fetch(`${server}/_calls/${encodeURIComponent(t)}`)
  ).json()) as FakeGithubCall[];
}

function status(extra: Partial<StatusFeedback> = {}): StatusFeedback {
  return {
    id: `fbk_${"a".repeat(26)}`,
    runId: `run_${"b".repeat(26)}`,
    provider: "github",
    apiUrl: fake,
    host,
    repository: "Codertocat/Hello-World",
    sha: sha(),
    kind: "status",
    state: "success",
    gitlabState: "success",
    description: "Plan: 1 to add, 0 to change, 0 to destroy",
    context: "outpost/network-prod",
    targetUrl: "https://outpost.example.com/ui/runs/run_x",
    ...extra,
  };
}

function comment(number: number, body: string, extra: Partial<CommentFeedback> = {}): FeedbackItem {
  const marker = "<!-- outpost:plan:ws_x -->";
  return {
    ...status(),
    kind: "comment",
    number,
    marker,
    body: `${marker}\n${body}`,
    ...extra,
  } as CommentFeedback;
}

describe("the agent's VCS poster, GitHub", () => {
  it("sets a commit status as GitHub's OpenAPI description requires", async () => {
    const t = token();
    const item = status();
    expect(await postFeedback(item, t, FAST)).toEqual({ posted: true });
    const [call, ...rest] = await calls(t);
    expect(rest).toEqual([]);
    expect(call).toMatchObject({
      method: "POST",
      template: "/repos/{owner}/{repo}/statuses/{sha}",
      path: `/repos/Codertocat/Hello-World/statuses/${item.sha}`,
      violations: [],
      status: 201,
      body: {
        state: "success",
        context: "outpost/network-prod",
        description: "Plan: 1 to add, 0 to change, 0 to destroy",
        target_url: "https://outpost.example.com/ui/runs/run_x",
      },
    });
  });

  it("writes one plan comment per marker and edits it in place afterwards", async () => {
    const t = token();
    const number = 100 + Math.floor(Math.random() * 10_000);
    expect(await postFeedback(comment(number, "first"), t, FAST)).toEqual({ posted: true });
    expect(await postFeedback(comment(number, "second"), t, FAST)).toEqual({ posted: true });
    const made = await calls(t);
    expect(made.flatMap((c) => c.violations)).toEqual([]);
    expect(made.map((c) => `${c.method} ${c.template}`)).toEqual([
      "GET /repos/{owner}/{repo}/issues/{issue_number}/comments",
      "POST /repos/{owner}/{repo}/issues/{issue_number}/comments",
      "GET /repos/{owner}/{repo}/issues/{issue_number}/comments",
      "PATCH /repos/{owner}/{repo}/issues/comments/{comment_id}",
    ]);
    const listed = (await (
      await fetch(`${fake}/repos/Codertocat/Hello-World/issues/${number}/comments`, {
        headers: { authorization: `Bearer ${t}` },
      })
    ).json()) as { body: string }[];
    expect(listed.map((c) => c.body)).toEqual(["<!-- outpost:plan:ws_x -->\nsecond"]);
  });

  it("gives up at once on 401, 404 and 422, saying what the VCS said", async () => {
    for (const [prefix, item, message] of [
      ["bad", status(), `401 Bad credentials from ${host}`],
      ["missing", status(), `404 Not Found from ${host}`],
      [
        "agent",
        status({ state: "running" as StatusFeedback["state"] }),
        `422 Validation Failed: field state is "running", not one of error, failure, pending, success from ${host}`,
      ],
    ] as const) {
      const t = token(prefix);
      expect(await postFeedback(item, t, FAST)).toEqual({ posted: false, message });
      expect(await calls(t)).toHaveLength(1);
    }
  });

  it("retries a 502 with backoff until GitHub takes it", async () => {
    const t = token("flaky");
    expect(await postFeedback(status(), t, FAST)).toEqual({ posted: true });
    expect((await calls(t)).map((c) => c.status)).toEqual([502, 201]);
  });

  it("waits out a rate limit's Retry-After before trying again", async () => {
    const t = token("limited");
    const started = performance.now();
    expect(await postFeedback(status(), t, FAST)).toEqual({ posted: true });
    expect(performance.now() - started).toBeGreaterThanOrEqual(950);
    expect((await calls(t)).map((c) => c.status)).toEqual([403, 201]);
  });

  it("stops retrying after its retries, reporting the last failure", async () => {
    const t = token("flaky");
    const item = status();
    // Each path fails once for a flaky- token: a second item on a new path, no retries allowed.
    expect(await postFeedback(item, t, { ...FAST, retries: 0 })).toEqual({
      posted: false,
      message: `502 Server Error from ${host}`,
    });
  });
});

describe("the agent's VCS poster, GitLab", () => {
  const gitlab = (extra: Partial<StatusFeedback> = {}) =>
    status({
      provider: "gitlab",
      apiUrl: `${fakeGitlab}/api/v4`,
      host: gitlabHost,
      repository: "gitlabhq/gitlab-test",
      state: "pending",
      gitlabState: "running",
      description: "Planning",
      ...extra,
    });

  it("sets GitLab's status and writes, then edits, one merge request note", async () => {
    const t = token("gl");
    const item = gitlab();
    expect(await postFeedback(item, t, FAST)).toEqual({ posted: true });
    const number = 100 + Math.floor(Math.random() * 10_000);
    const note = (body: string) =>
      comment(number, body, {
        provider: "gitlab",
        apiUrl: `${fakeGitlab}/api/v4`,
        host: gitlabHost,
        repository: "gitlabhq/gitlab-test",
      });
    expect(await postFeedback(note("first"), t, FAST)).toEqual({ posted: true });
    expect(await postFeedback(note("second"), t, FAST)).toEqual({ posted: true });
    const made = await calls(t, fakeGitlab);
    expect(made.flatMap((c) => c.violations)).toEqual([]);
    expect(made[0]).toMatchObject({
      method: "POST",
      template: "/projects/:id/statuses/:sha",
      path: `/api/v4/projects/gitlabhq%2Fgitlab-test/statuses/${item.sha}`,
      body: { state: "running", name: "outpost/network-prod", description: "Planning" },
    });
    expect(made.slice(1).map((c) => `${c.method} ${c.template}`)).toEqual([
      "GET /projects/:id/merge_requests/:merge_request_iid/notes",
      "POST /projects/:id/merge_requests/:merge_request_iid/notes",
      "GET /projects/:id/merge_requests/:merge_request_iid/notes",
      "PUT /projects/:id/merge_requests/:merge_request_iid/notes/:note_id",
    ]);
  });

  it("reports GitLab's 401 without retrying", async () => {
    const t = token("bad");
    expect(await postFeedback(gitlab(), t, FAST)).toEqual({
      posted: false,
      message: `401 401 Unauthorized from ${gitlabHost}`,
    });
    expect(await calls(t, fakeGitlab)).toHaveLength(1);
  });
});

describe("the agent's VCS poster: where a token may go", () => {
  it("never sends a token in clear to a host that is not loopback, nor out of /repos/", async () => {
    const t = token();
    for (const [item, why] of [
      [status({ apiUrl: "http://github.example.com/api/v3" }), "is not https"],
      [status({ repository: "../../user" }), "is not owner/name"],
      [status({ apiUrl: `${fake}/?x=1` }), "must be a plain base URL"],
    ] as const) {
      const outcome = await postFeedback(item, t, FAST);
      expect(outcome.posted).toBe(false);
      expect(outcome.posted ? "" : outcome.message).toContain(why);
    }
    expect(await calls(t)).toEqual([]);
  });
});
