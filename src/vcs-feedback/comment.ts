/**
 * The plan comment on a pull/merge request, pure: the changed resources grouped by action (read
 * from the plan's JSON: Terraform's `show -json`, or Pulumi's preview steps), the plan summary,
 * the run link and agent, and on failure the last lines of the log. A hidden marker finds the
 * comment again so a new commit edits it. The body always fits the VCS's limit; what had to be
 * cut says so.
 */
import type { CommitStatus, Provider } from "./model.ts";

/** GitHub's longest comment body (characters). */
export const GITHUB_COMMENT_MAX = 65_536;
/** GitLab's longest note (characters). */
export const GITLAB_COMMENT_MAX = 1_000_000;
/** The smaller of the two: what a comment must fit when the provider is not known. */
export const COMMENT_MAX = GITHUB_COMMENT_MAX;

/** The longest comment `provider` accepts. */
export function commentMaxOf(provider: Provider): number {
  return provider === "gitlab" ? GITLAB_COMMENT_MAX : GITHUB_COMMENT_MAX;
}

export const RESOURCE_ACTIONS = ["create", "update", "replace", "delete", "import"] as const;
export type ResourceAction = (typeof RESOURCE_ACTIONS)[number];
/** The resources a plan changes, by action, in the plan's order. */
export type ResourceChanges = Record<ResourceAction, string[]>;

const HEADINGS: Record<ResourceAction, [string, string]> = {
  create: ["+", "Create"],
  update: ["~", "Update"],
  replace: ["-/+", "Replace"],
  delete: ["-", "Delete"],
  import: ["=", "Import"],
};

function empty(): ResourceChanges {
  return { create: [], update: [], replace: [], delete: [], import: [] };
}

/** Terraform's action list as one of ours; null for `no-op` and `read` (nothing changes). */
function terraformAction(actions: unknown[], importing: boolean): ResourceAction | null {
  const has = (a: string) => actions.includes(a);
  if (has("create") && has("delete")) {
    return "replace";
  }
  if (has("create")) {
    return "create";
  }
  if (has("delete")) {
    return "delete";
  }
  if (has("update")) {
    return "update";
  }
  return importing ? "import" : null;
}

/** A Pulumi step's op as one of ours; null for `same`, `read`, and a replacement's halves. */
function pulumiAction(op: unknown): ResourceAction | null {
  return op === "create" || op === "update" || op === "delete" || op === "replace"
    ? op
    : op === "import" || op === "import-replacement"
      ? "import"
      : null;
}

/** `urn:pulumi:stack::project::aws:s3/bucket:Bucket::logs` as `logs (aws:s3/bucket:Bucket)`. */
function pulumiName(urn: string): string {
  const parts = urn.split("::");
  const name = parts.at(-1) ?? urn;
  const type = (parts.at(-2) ?? "").split("$").at(-1);
  return type ? `${name} (${type})` : name;
}

/**
 * The changed resources of a plan document: Terraform's `resource_changes` (a delete and a
 * create together are a replacement) or Pulumi's preview `steps`. Null when `doc` is neither.
 */
export function resourceChangesOf(doc: unknown): ResourceChanges | null {
  if (typeof doc !== "object" || doc === null) {
    return null;
  }
  const { resource_changes: terraform, steps } = doc as {
    resource_changes?: unknown;
    steps?: unknown;
  };
  const changes = empty();
  if (Array.isArray(terraform)) {
    for (const rc of terraform as {
      address?: unknown;
      change?: { actions?: unknown; importing?: unknown };
    }[]) {
      const actions = Array.isArray(rc.change?.actions) ? rc.change.actions : [];
      const action = terraformAction(actions, rc.change?.importing != null);
      if (action && typeof rc.address === "string") {
        changes[action].push(rc.address);
      }
    }
    return changes;
  }
  if (Array.isArray(steps)) {
    for (const step of steps as { op?: unknown; urn?: unknown }[]) {
      const action = pulumiAction(step.op);
      if (action && typeof step.urn === "string") {
        changes[action].push(pulumiName(step.urn));
      }
    }
    return changes;
  }
  return null;
}

/** A fenced code block that `text` cannot close: longer than any backtick run in it. */
function fenced(text: string): string {
  const longest = Math.max(2, ...(text.match(/`+/g) ?? []).map((run) => run.length));
  const fence = "`".repeat(longest + 1);
  return `${fence}\n${text}\n${fence}`;
}

/** Text safe to show as Markdown: no links, mentions, HTML or emphasis made of it. */
function plain(text: string): string {
  return text.replace(/[\\`*_{}[\]()<>#|~!@]/g, "\\$&");
}

/** The hidden marker that finds a workspace's comment on a pull request again. */
export function commentMarker(workspaceId: string): string {
  return `<!-- outpost:plan:${workspaceId} -->`;
}

export type PlanCommentInput = {
  workspaceId: string;
  workspaceName: string;
  runUrl: string;
  commitSha: string;
  status: CommitStatus;
  agentName: string | null;
  /** The failure's reason (errored runs). */
  detail: string | null;
  /** The plan's changed resources; null when unknown (no plan JSON, or too large to read). */
  resources?: ResourceChanges | null;
  /** The last lines of the failed job's log, masked as stored. */
  logTail?: string | null;
  /** The VCS's limit; GitHub's by default. */
  maxChars?: number;
};

const TRUNCATED = "_Cut to fit the comment size limit; the run page has all of it._";

/** The resource groups, as many lines as `room` allows; `cut` when some were left out. */
function resourceSection(changes: ResourceChanges, room: number): { text: string; cut: boolean } {
  const parts: string[] = [];
  let used = 0;
  let cut = false;
  for (const action of RESOURCE_ACTIONS) {
    const names = changes[action];
    if (names.length === 0) {
      continue;
    }
    const [symbol, heading] = HEADINGS[action];
    const lines: string[] = [];
    for (const name of names) {
      const line = `${symbol} ${name}`;
      if (used + line.length + 1 > room) {
        cut = true;
        break;
      }
      lines.push(line);
      used += line.length + 1;
    }
    const more = names.length - lines.length;
    const body = lines.length > 0 ? `\n${fenced(lines.join("\n"))}` : "";
    parts.push(`**${heading} (${names.length})**${more > 0 ? ` · ${more} not shown` : ""}${body}`);
    used += 40;
  }
  return { text: parts.join("\n\n"), cut };
}

/**
 * The plan comment of a run: marker, workspace, outcome (commit status description), commit,
 * run link and agent; the changed resources by action; on failure the reason and the log's
 * last lines. Never longer than `maxChars`: resources and log are cut first, with a note.
 */
export function planComment(input: PlanCommentInput): string {
  const max = input.maxChars ?? COMMENT_MAX;
  // A code span shows its text as is: only a backtick could end it early.
  const agent = input.agentName ? ` · ran on agent \`${input.agentName.replace(/`/g, "'")}\`` : "";
  const head = [
    commentMarker(input.workspaceId),
    `### Outpost · ${plain(input.workspaceName)}`,
    "",
    `**${plain(input.status.description)}** (commit \`${input.commitSha.slice(0, 12)}\`)`,
    "",
    `[Run details](${input.runUrl})${agent}`,
  ].join("\n");
  const sections: string[] = [];
  let cut = false;
  // The log and the reason get at most half of what is left; the resources the rest.
  const spare = max - head.length - TRUNCATED.length - 200;
  const failure = [input.detail, input.logTail].filter((t): t is string => Boolean(t));
  let failureText = "";
  if (failure.length > 0) {
    const joined = failure.join("\n\n");
    const room = Math.floor(spare / 2);
    const kept = joined.length > room ? joined.slice(joined.length - room) : joined;
    cut ||= kept !== joined;
    failureText = `**Log (last lines)**\n${fenced(kept)}`;
  }
  if (input.resources) {
    const room = spare - failureText.length - 100;
    const section = resourceSection(input.resources, room);
    cut ||= section.cut;
    if (section.text) {
      sections.push(section.text);
    }
  }
  if (failureText) {
    sections.push(failureText);
  }
  if (cut) {
    sections.push(TRUNCATED);
  }
  const body = [head, ...sections].join("\n\n");
  return body.length <= max ? body : `${body.slice(0, max - TRUNCATED.length - 2)}\n\n${TRUNCATED}`;
}
