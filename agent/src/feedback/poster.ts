/**
 * Posts one feedback item to GitHub or GitLab with the agent's token for the item's API host:
 * a commit status, or the plan comment (found among the pull/merge request's comments by its
 * hidden marker and edited in place, else added). Failures that may pass (network, 5xx, 429, a
 * rate-limit 403) are retried with capped exponential backoff, never sooner than `Retry-After`;
 * any other refusal (401, 404, 422, …) is final. Never throws: the outcome says what the VCS
 * said, with the token masked. GitHub REST "Commit statuses" and "Issue comments"; GitLab
 * "Commits" (statuses) and "Notes" (merge request notes).
 */
import type { CommentFeedback, FeedbackItem, StatusFeedback } from "@outpost/protocol";
import { TransientError } from "../errors.ts";
import { httpFetch } from "../net/fetch.ts";
import { retry } from "../retry.ts";

/** How a post went: the message is the VCS's, e.g. "401 Bad credentials from github.example.com". */
export type PostOutcome = { posted: true } | { posted: false; message: string };

export type PostOptions = {
  /** Attempts after the first for failures that may pass; default 4. */
  retries?: number;
  /** First backoff wait; default 1 s (doubling, at most `capMs`, default 30 s). */
  baseMs?: number;
  capMs?: number;
  signal?: AbortSignal;
};

/** A refusal retrying will not fix. */
class VcsRefusal extends Error {}

const TIMEOUT_MS = 15_000;
const LOOPBACK = new Set(["127.0.0.1", "localhost", "[::1]"]);
/** `owner/name` as GitHub allows them: nothing that could climb out of `/repos/`. */
const GITHUB_REPOSITORY = /^[A-Za-z0-9_.-]+\/[A-Za-z0-9_.-]+$/;

/**
 * Why the item may not be posted with a token for `host`, or null: the API URL must be https
 * (plain http only to a loopback address, for development), its host must be the token's.
 */
export function targetProblem(item: FeedbackItem, host: string): string | null {
  let url: URL;
  try {
    url = new URL(item.apiUrl);
  } catch {
    return `the API URL ${item.apiUrl} is not a URL`;
  }
  if (url.username || url.password || url.search || url.hash) {
    return `the API URL ${item.apiUrl} must be a plain base URL`;
  }
  if (url.host.toLowerCase() !== host) {
    return `the API URL ${item.apiUrl} is not on ${host}`;
  }
  if (url.protocol !== "https:" && !(url.protocol === "http:" && LOOPBACK.has(url.hostname))) {
    return `the API URL ${item.apiUrl} is not https; the token is never sent in clear`;
  }
  if (item.provider === "github" && !GITHUB_REPOSITORY.test(item.repository)) {
    return `the repository ${item.repository} is not owner/name`;
  }
  if (item.repository.split("/").some((part) => part === "." || part === "..")) {
    return `the repository ${item.repository} is not a repository path`;
  }
  return null;
}

/** Posts `item` with `token` (the one the agent holds for the item's API host). */
export async function postFeedback(
  item: FeedbackItem,
  token: string,
  options: PostOptions = {},
): Promise<PostOutcome> {
  const host = new URL(item.apiUrl).host.toLowerCase();
  const problem = targetProblem(item, host);
  if (problem !== null) {
    return { posted: false, message: problem };
  }
  const vcs = client(item, token, host, options.signal);
  try {
    await retry(() => (item.kind === "status" ? postStatus(vcs, item) : upsertComment(vcs, item)), {
      retries: options.retries ?? 4,
      baseMs: options.baseMs ?? 1000,
      capMs: options.capMs ?? 30_000,
      maxRetryTimeMs: 5 * 60_000,
      ...(options.signal ? { signal: options.signal } : {}),
    });
    return { posted: true };
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    return { posted: false, message: message.replaceAll(token, "***").slice(0, 500) };
  }
}

type Call = (method: string, path: string, body?: unknown) => Promise<unknown>;

/** One API call: JSON in and out; throws TransientError or VcsRefusal with the VCS's words. */
function client(item: FeedbackItem, token: string, host: string, signal?: AbortSignal): Call {
  const base = item.apiUrl.replace(/\/+$/, "");
  const auth: Record<string, string> =
    item.provider === "github"
      ? {
          accept: "application/vnd.github+json",
          authorization: `Bearer ${token}`,
          "x-github-api-version": "2022-11-28",
        }
      : { "private-token": token };
  return async (method, path, body) => {
    const timeout = AbortSignal.timeout(TIMEOUT_MS);
    let res: Awaited<ReturnType<typeof httpFetch>>;
    try {
      res = await httpFetch(`${base}${path}`, {
        method,
        headers: { ...auth, "content-type": "application/json", "user-agent": "outpost-agent" },
        body: body === undefined ? null : JSON.stringify(body),
        signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
      });
    } catch (error) {
      const why =
        error instanceof Error
          ? ((error.cause as Error | undefined)?.message ?? error.message)
          : String(error);
      throw new TransientError(`network error talking to ${host}: ${why}`);
    }
    const text = await res.text();
    if (res.ok) {
      return text ? (JSON.parse(text) as unknown) : null;
    }
    const reason = messageOf(text) ?? res.statusText;
    const message = `${res.status} ${reason} from ${host}`;
    const limited = res.status === 429 || (res.status === 403 && /rate limit/i.test(reason));
    if (res.status >= 500 || limited) {
      throw new TransientError(message, { retryAfter: res.headers.get("retry-after") });
    }
    throw new VcsRefusal(message);
  };
}

function messageOf(text: string): string | null {
  try {
    const parsed = JSON.parse(text) as { message?: unknown };
    return typeof parsed.message === "string" ? parsed.message : null;
  } catch {
    return null;
  }
}

const project = (item: FeedbackItem) => `/projects/${encodeURIComponent(item.repository)}`;

async function postStatus(call: Call, item: StatusFeedback): Promise<void> {
  if (item.provider === "github") {
    await call("POST", `/repos/${item.repository}/statuses/${item.sha}`, {
      state: item.state,
      context: item.context,
      description: item.description,
      target_url: item.targetUrl,
    });
    return;
  }
  await call("POST", `${project(item)}/statuses/${item.sha}`, {
    state: item.gitlabState,
    name: item.context,
    description: item.description,
    target_url: item.targetUrl,
  });
}

async function upsertComment(call: Call, item: CommentFeedback): Promise<void> {
  const base =
    item.provider === "github"
      ? `/repos/${item.repository}/issues/${item.number}/comments`
      : `${project(item)}/merge_requests/${item.number}/notes`;
  const listed = await call("GET", `${base}?per_page=100`);
  const comments = Array.isArray(listed) ? (listed as { id?: unknown; body?: unknown }[]) : [];
  const mine = comments.find((c) => typeof c.body === "string" && c.body.includes(item.marker));
  const id = typeof mine?.id === "number" ? mine.id : null;
  if (id === null) {
    await call("POST", base, { body: item.body });
  } else if (item.provider === "github") {
    await call("PATCH", `/repos/${item.repository}/issues/comments/${id}`, { body: item.body });
  } else {
    await call("PUT", `${base}/${id}`, { body: item.body });
  }
}
