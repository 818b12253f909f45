/**
 * The few VCS API calls feedback makes, for GitHub and GitLab: set a commit status, and write a
 * pull/merge request's plan comment (found again by its hidden marker, edited in place). Every
 * call answers a {@link Posted}: never throws, so a VCS that refuses never fails a run.
 * GitHub: REST "Commit statuses" and "Issue comments"; GitLab: "Commits" (statuses) and
 * "Notes" (merge request notes).
 */

import type { RunStatus } from "@outpost/protocol";
import type { CommitStatus, Provider } from "./model.ts";
import { gitlabState } from "./model.ts";

/** Where and as whom feedback is posted. */
export type VcsTarget = {
  provider: Provider;
  apiUrl: string;
  /** `owner/name` (GitLab: the project's full path). */
  repoPath: string;
  token: string;
};

/** How a call went: `retryable` when trying again later may succeed (5xx, 429, network). */
export type Posted =
  | { ok: true }
  | { ok: false; retryable: boolean; message: string; retryAfterSeconds?: number };

const TIMEOUT_MS = 10_000;

function headers(target: VcsTarget): Record<string, string> {
  const common = { "content-type": "application/json", "user-agent": "outpost" };
  return target.provider === "github"
    ? {
        ...common,
        accept: "application/vnd.github+json",
        authorization: `Bearer ${target.token}`,
        "x-github-api-version": "2022-11-28",
      }
    : { ...common, "private-token": target.token };
}

/**
 * One request to the VCS API as `target.token` (a GitHub App's JWT too): the parsed JSON
 * answer, or why not. Never throws.
 */
export async function callVcs(
  target: VcsTarget,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ ok: true; json: unknown } | (Posted & { ok: false })> {
  const url = `${target.apiUrl.replace(/\/+$/, "")}${path}`;
  const host = new URL(url).host;
  let res: Response;
  try {
    res = await fetch(url, {
      method,
      headers: headers(target),
      body: body === undefined ? null : JSON.stringify(body),
      signal: AbortSignal.timeout(TIMEOUT_MS),
    });
  } catch (error) {
    const why = error instanceof Error ? error.message : String(error);
    return { ok: false, retryable: true, message: `network error talking to ${host}: ${why}` };
  }
  const text = await res.text();
  if (res.ok) {
    return { ok: true, json: text ? (JSON.parse(text) as unknown) : null };
  }
  let reason = res.statusText;
  try {
    const parsed = JSON.parse(text) as { message?: unknown };
    if (typeof parsed.message === "string") {
      reason = parsed.message;
    }
  } catch {
    // Not JSON: the status text says enough.
  }
  const retryAfter = waitAsked(res.headers);
  const limited =
    res.status === 429 ||
    (res.status === 403 &&
      (/rate limit/i.test(reason) ||
        res.headers.get("x-ratelimit-remaining") === "0" ||
        res.headers.has("retry-after")));
  return {
    ok: false,
    retryable: res.status >= 500 || limited,
    message: `${res.status} ${reason} from ${host}`.slice(0, 300),
    ...(retryAfter === null ? {} : { retryAfterSeconds: retryAfter }),
  };
}

/**
 * The seconds the VCS asks to wait: `Retry-After` (seconds), else GitHub's
 * `x-ratelimit-reset` (epoch seconds) measured against the answer's own `Date`, so the
 * Worker's clock does not matter. Null when it asks nothing.
 */
function waitAsked(headers: Headers): number | null {
  const retryAfter = Number(headers.get("retry-after") ?? Number.NaN);
  if (Number.isFinite(retryAfter) && retryAfter > 0) {
    return Math.ceil(retryAfter);
  }
  const reset = Number(headers.get("x-ratelimit-reset") ?? Number.NaN);
  const date = Date.parse(headers.get("date") ?? "");
  if (
    headers.get("x-ratelimit-remaining") !== "0" ||
    !Number.isFinite(reset) ||
    Number.isNaN(date)
  ) {
    return null;
  }
  return Math.max(1, Math.ceil(reset - date / 1000));
}

const project = (target: VcsTarget) => `/projects/${encodeURIComponent(target.repoPath)}`;

/** Sets the commit status `context` on `sha`. */
export async function postCommitStatus(
  target: VcsTarget,
  input: {
    sha: string;
    context: string;
    runStatus: RunStatus;
    status: CommitStatus;
    targetUrl: string;
  },
): Promise<Posted> {
  const answer =
    target.provider === "github"
      ? await callVcs(target, "POST", `/repos/${target.repoPath}/statuses/${input.sha}`, {
          state: input.status.state,
          context: input.context,
          description: input.status.description,
          target_url: input.targetUrl,
        })
      : await callVcs(target, "POST", `${project(target)}/statuses/${input.sha}`, {
          state: gitlabState(input.runStatus, input.status),
          name: input.context,
          description: input.status.description,
          target_url: input.targetUrl,
        });
  return answer.ok ? { ok: true } : answer;
}

type Comment = { id: number; body: string };

function commentsPath(target: VcsTarget, number: number): string {
  return target.provider === "github"
    ? `/repos/${target.repoPath}/issues/${number}/comments`
    : `${project(target)}/merge_requests/${number}/notes`;
}

/** Pages of comments read at most while looking for the marked one (100 a page). */
const MAX_COMMENT_PAGES = 20;

/** The comment carrying `marker`, read page by page (a busy pull request has many). */
async function findMarked(
  target: VcsTarget,
  base: string,
  marker: string,
): Promise<{ ok: true; comment: Comment | undefined } | (Posted & { ok: false })> {
  for (let page = 1; page <= MAX_COMMENT_PAGES; page++) {
    const listed = await callVcs(target, "GET", `${base}?per_page=100&page=${page}`);
    if (!listed.ok) {
      return listed;
    }
    const comments = Array.isArray(listed.json) ? (listed.json as Comment[]) : [];
    const mine = comments.find((c) => typeof c.body === "string" && c.body.includes(marker));
    if (mine || comments.length < 100) {
      return { ok: true, comment: mine };
    }
  }
  return { ok: true, comment: undefined };
}

/**
 * Writes `body` as the pull/merge request's comment carrying `marker`: edits the one already
 * there (found among its comments), else adds it. One comment per marker, however often called.
 */
export async function upsertComment(
  target: VcsTarget,
  input: { number: number; marker: string; body: string },
): Promise<Posted> {
  const base = commentsPath(target, input.number);
  const found = await findMarked(target, base, input.marker);
  if (!found.ok) {
    return found;
  }
  const mine = found.comment;
  const answer =
    mine === undefined
      ? await callVcs(target, "POST", base, { body: input.body })
      : target.provider === "github"
        ? await callVcs(target, "PATCH", `/repos/${target.repoPath}/issues/comments/${mine.id}`, {
            body: input.body,
          })
        : await callVcs(target, "PUT", `${base}/${mine.id}`, { body: input.body });
  return answer.ok ? { ok: true } : answer;
}
