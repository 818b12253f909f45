/**
 * VCS triggers, pure: what a push or a pull/merge request means (`events.ts` turns payloads into
 * a {@link VcsEvent}), which workspaces it reaches, and whether the changed files concern them.
 * No I/O here.
 */

/** A push to a branch, already known not to be a tag push. */
export type PushEvent = {
  kind: "push";
  /** Every URL the provider names for the repository (clone, ssh, web). */
  repoUrls: string[];
  defaultBranch: string | null;
  branch: string;
  commitSha: string;
  isDeletion: boolean;
  /** Changed paths, or null when the payload cannot list them all (capped commit list). */
  changedFiles: string[] | null;
  author: string | null;
  commitMessage: string | null;
};

/** A pull/merge request whose head moved (plan), or that was closed (cancel its plans). */
export type PullRequestEvent = {
  kind: "pull_request";
  action: "plan" | "close";
  repoUrls: string[];
  defaultBranch: string | null;
  baseBranch: string;
  headBranch: string;
  commitSha: string;
  number: number;
  isFork: boolean;
  author: string | null;
  title: string | null;
};

export type VcsEvent = PushEvent | PullRequestEvent;

/** What an incoming delivery is, after parsing: something to act on, a ping, or noise. */
export type ParsedDelivery =
  | { kind: "event"; event: VcsEvent }
  | { kind: "ping" }
  | { kind: "ignored"; reason: string };

export const ZERO_SHA = /^0+$/;

/**
 * A repository URL reduced to `host/path` in lower case, without scheme, user, port, `.git` or
 * slashes at either end, so `https://h/g/r.git`, `git@h:g/r` and `ssh://git@h:22/g/r` compare
 * equal. Null when it is not a URL at all.
 */
export function repoKey(url: string): string | null {
  const scp = /^[^@/\s]+@([^:/\s]+):(?!\/\/)(.+)$/.exec(url);
  let host: string;
  let path: string;
  if (scp?.[1] && scp[2]) {
    host = scp[1];
    path = scp[2];
  } else {
    try {
      const parsed = new URL(url);
      host = parsed.hostname;
      path = decodeURIComponent(parsed.pathname);
    } catch {
      return null;
    }
  }
  const cleanPath = path
    .replace(/^\/+|\/+$/g, "")
    .replace(/\.git$/i, "")
    .toLowerCase();
  if (!host || !cleanPath) {
    return null;
  }
  return `${host.toLowerCase()}/${cleanPath}`;
}

/** True when any of the provider's URLs names the same repository as `configured`. */
export function sameRepository(configured: string, eventUrls: readonly string[]): boolean {
  const key = repoKey(configured);
  return key !== null && eventUrls.some((u) => repoKey(u) === key);
}

function globToRegExp(glob: string): RegExp {
  let out = "";
  for (let i = 0; i < glob.length; i++) {
    const ch = glob[i] ?? "";
    if (ch === "*") {
      if (glob[i + 1] === "*") {
        // "**/" matches zero or more directories; a trailing "**" matches everything below.
        const slash = glob[i + 2] === "/";
        out += slash ? "(?:.*/)?" : ".*";
        i += slash ? 2 : 1;
      } else {
        out += "[^/]*";
      }
    } else if (ch === "?") {
      out += "[^/]";
    } else {
      out += ch.replace(/[.+^${}()|[\]\\]/g, "\\$&");
    }
  }
  return new RegExp(`^${out}$`);
}

/**
 * Whether `file` is under `pattern`: a glob (`*`, `**`, `?`) matches the whole path; anything
 * else is a directory or file prefix (`modules` matches `modules/x.tf`, not `modules2/x.tf`).
 */
export function pathMatches(pattern: string, file: string): boolean {
  const p = pattern.replace(/\/+$/, "");
  if (p === "") {
    return true;
  }
  if (/[*?]/.test(p)) {
    return globToRegExp(p).test(file) || globToRegExp(`${p}/**`).test(file);
  }
  return file === p || file.startsWith(`${p}/`);
}

/** The fields of a workspace that decide whether a VCS event reaches it. */
export type TriggerWorkspace = {
  id: string;
  name: string;
  vcsRepoUrl: string | null;
  vcsBranch: string | null;
  vcsTriggerPaths: string[] | null;
  workingDirectory: string;
  forkPullRequests: "refuse" | "plan_without_secrets";
};

export type TriggerDecision =
  | { workspaceId: string; action: "run"; isFork: boolean }
  | { workspaceId: string; action: "cancel_only" }
  | { workspaceId: string; action: "skip"; reason: string };

/** The branch a workspace follows: its own setting, else the repository's default branch. */
function trackedBranch(ws: TriggerWorkspace, event: VcsEvent): string | null {
  return ws.vcsBranch ?? event.defaultBranch;
}

/** Whether a push's files concern the workspace: trigger paths, else its working directory. */
export function filesConcern(ws: TriggerWorkspace, changedFiles: string[] | null): boolean {
  if (changedFiles === null) {
    // The payload could not list every file; queueing a run is safer than missing a change.
    return true;
  }
  const patterns =
    ws.vcsTriggerPaths && ws.vcsTriggerPaths.length > 0
      ? ws.vcsTriggerPaths
      : [ws.workingDirectory];
  return changedFiles.some((file) => patterns.some((p) => pathMatches(p, file)));
}

/**
 * What the event does to each workspace connected to its repository (workspaces of other
 * repositories are left out): queue a run, only cancel older plans, or skip with a reason.
 */
export function decideTriggers(
  event: VcsEvent,
  workspaces: readonly TriggerWorkspace[],
): TriggerDecision[] {
  const decisions: TriggerDecision[] = [];
  for (const ws of workspaces) {
    if (!ws.vcsRepoUrl || !sameRepository(ws.vcsRepoUrl, event.repoUrls)) {
      continue;
    }
    decisions.push(decideOne(event, ws));
  }
  return decisions;
}

function decideOne(event: VcsEvent, ws: TriggerWorkspace): TriggerDecision {
  const skip = (reason: string): TriggerDecision => ({
    workspaceId: ws.id,
    action: "skip",
    reason,
  });
  const branch = trackedBranch(ws, event);
  if (event.kind === "push") {
    if (branch === null) {
      return skip("the workspace names no branch and the payload no default branch");
    }
    if (event.branch !== branch) {
      return skip(`push to ${event.branch}, the workspace follows ${branch}`);
    }
    if (event.isDeletion) {
      return skip(`branch ${event.branch} was deleted`);
    }
    if (!filesConcern(ws, event.changedFiles)) {
      return skip("no changed file is under the workspace's trigger paths or working directory");
    }
    return { workspaceId: ws.id, action: "run", isFork: false };
  }
  if (branch !== null && event.baseBranch !== branch) {
    return skip(`pull request into ${event.baseBranch}, the workspace follows ${branch}`);
  }
  if (event.action === "close") {
    return { workspaceId: ws.id, action: "cancel_only" };
  }
  if (event.isFork && ws.forkPullRequests === "refuse") {
    return skip("pull request from a fork; the workspace refuses fork pull requests");
  }
  return { workspaceId: ws.id, action: "run", isFork: event.isFork };
}

/** The first line of a commit message, trimmed to what a run message holds. */
export function summaryLine(text: string | null, max = 200): string {
  const line = (text ?? "").split("\n")[0]?.trim() ?? "";
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

/** Why an existing run makes the event a repeat on a workspace, in words. */
export function repeatReason(event: VcsEvent, runId: string): string {
  return event.kind === "push"
    ? `commit ${event.commitSha} already has run ${runId} on this workspace; a push never runs a commit twice`
    : `run ${runId} already plans commit ${event.commitSha}`;
}

/** What a delivery did, per workspace; stored as JSON on the delivery row. */
export type DeliveryOutcome = {
  status: "processed" | "failed";
  runs: { workspaceId: string; runId: string }[];
  canceled: { workspaceId: string; runId: string }[];
  skipped: { workspaceId: string; reason: string }[];
  error?: string;
};
