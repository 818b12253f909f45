/**
 * VCS feedback, pure: where a hook's API is, which repository a workspace names there, what a
 * run's status means as a commit status (GitHub's and GitLab's states and a description a
 * reviewer understands); the plan comment is in `comment.ts`. No I/O here.
 */
import type { PlanSummary, RunStatus } from "@outpost/protocol";

export const FEEDBACK_MODES = ["agent", "coordinator", "off"] as const;
export type FeedbackMode = (typeof FEEDBACK_MODES)[number];

export type Provider = "github" | "gitlab";

/** GitHub's longest status description (characters). */
export const STATUS_DESCRIPTION_MAX = 140;

// The plan comment lives in comment.ts; its names stay importable from here.
export { COMMENT_MAX, commentMarker, planComment } from "./comment.ts";

/**
 * The API base URL of the VCS hosting `repoUrl`: `https://api.github.com` for github.com,
 * `https://<host>/api/v3` for GitHub Enterprise, `https://<host>/api/v4` for GitLab. Null when
 * the URL names no host.
 */
export function defaultApiUrl(provider: Provider, repoUrl: string): string | null {
  const host = repoHost(repoUrl);
  if (host === null) {
    return null;
  }
  if (provider === "gitlab") {
    return `https://${host}/api/v4`;
  }
  return host === "github.com" ? "https://api.github.com" : `https://${host}/api/v3`;
}

/** The host and repository path (`owner/name`, GitLab groups included) of a repository URL. */
export function repoParts(repoUrl: string): { host: string; path: string } | null {
  const scp = /^[^@/\s]+@([^:/\s]+):(?!\/\/)(.+)$/.exec(repoUrl);
  let host: string;
  let path: string;
  if (scp?.[1] && scp[2]) {
    host = scp[1];
    path = scp[2];
  } else {
    try {
      const parsed = new URL(repoUrl);
      host = parsed.hostname;
      path = decodeURIComponent(parsed.pathname);
    } catch {
      return null;
    }
  }
  const clean = path.replace(/^\/+|\/+$/g, "").replace(/\.git$/i, "");
  return host && clean.includes("/") ? { host: host.toLowerCase(), path: clean } : null;
}

function repoHost(repoUrl: string): string | null {
  return repoParts(repoUrl)?.host ?? null;
}

/**
 * Why `apiUrl` may not be posted to, or null when it may: https, no credentials in it; plain
 * http only to a loopback host when the deployment allows it (development).
 */
export function apiUrlProblem(apiUrl: string, allowLoopback: boolean): string | null {
  let url: URL;
  try {
    url = new URL(apiUrl);
  } catch {
    return "must be an absolute URL";
  }
  if (url.username || url.password) {
    return "must not carry a user name or password";
  }
  if (url.protocol === "https:") {
    return null;
  }
  const loopback = ["127.0.0.1", "localhost", "[::1]"].includes(url.hostname);
  return url.protocol === "http:" && loopback && allowLoopback
    ? null
    : "must be https (plain http to loopback needs VCS_ALLOW_LOOPBACK, for development)";
}

/** A commit status, provider-neutral: GitHub's four states. */
export type StatusState = "pending" | "success" | "failure" | "error";

/** What a run in `status` says on its commit. */
export type CommitStatus = { state: StatusState; description: string; canceled?: boolean };

function planWords(summary: PlanSummary | null): string {
  if (!summary) {
    return "no changes reported";
  }
  if (!summary.hasChanges) {
    return "no changes";
  }
  return `${summary.adds} to add, ${summary.changes} to change, ${summary.destroys} to destroy`;
}

/** Cuts `text` to `max` characters with an ellipsis. */
export function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

/** The commit status of a run in `status`, with a description a reviewer understands. */
export function commitStatusOf(run: {
  status: RunStatus;
  planSummary: PlanSummary | null;
  statusReason: string | null;
  isSpeculative: boolean;
}): CommitStatus {
  const plan = `Plan: ${planWords(run.planSummary)}`;
  const reason = run.statusReason ? `: ${run.statusReason}` : "";
  const status = ((): CommitStatus => {
    switch (run.status) {
      case "pending":
      case "plan_queued":
        return { state: "pending", description: "Queued" };
      case "planning":
        return { state: "pending", description: "Planning" };
      case "planned":
        return { state: "pending", description: `Needs confirmation. ${plan}` };
      case "confirmed":
      case "apply_queued":
        return { state: "pending", description: `Confirmed. ${plan}` };
      case "applying":
        return { state: "pending", description: `Applying. ${plan}` };
      case "applied":
        return { state: "success", description: `Applied. ${plan}` };
      case "planned_and_finished":
        return { state: "success", description: plan };
      case "errored":
        return { state: "failure", description: `Errored${reason}` };
      case "discarded":
        return { state: "error", description: "Discarded", canceled: true };
      default:
        return { state: "error", description: `Canceled${reason}`, canceled: true };
    }
  })();
  return { ...status, description: clip(status.description, STATUS_DESCRIPTION_MAX) };
}

/** GitLab's state for a status: pending, running, success, failed, canceled. */
export function gitlabState(status: RunStatus, state: CommitStatus): string {
  if (state.canceled) {
    return "canceled";
  }
  if (state.state === "pending") {
    return status === "pending" || status === "plan_queued" ? "pending" : "running";
  }
  return state.state === "success" ? "success" : "failed";
}

/** The statuses after which a pull request's plan comment is written (the plan is known). */
export function isCommentWorthy(status: RunStatus): boolean {
  return ["planned", "planned_and_finished", "errored", "applied"].includes(status);
}
