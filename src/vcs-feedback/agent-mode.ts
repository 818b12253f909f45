/**
 * VCS feedback in agent mode (`feedback: "agent"`): the posts the sink would make are written as
 * feedback items for the run's pool; an agent holding a token for the VCS host claims them
 * (`POST /agent/v1/feedback/claim`), posts from inside the network and reports the outcome,
 * recorded on the run exactly as the coordinator records its own posts (`vcs_feedback`). The
 * agent that ran the run's job has its items alone for {@link AGENT_PREFERENCE_MS}; a run no
 * agent holds (queued, canceled before pickup, discarded) goes to any agent of the pool with
 * a token for the host, unless the coordinator holds a token itself (the sink then posts).
 */
import { ok } from "@outpost/common";
import {
  type CommentFeedback,
  FEEDBACK_CLAIM_SECONDS,
  type FeedbackItem,
  type FeedbackReport,
  MAX_FEEDBACK_ITEMS,
  type RunStatus,
  type StatusFeedback,
} from "@outpost/protocol";
import type { Deps } from "../deps.ts";
import { type Outcome, refuse } from "../lib/reason.ts";
import type { RunJobRow } from "../runs/job-records.ts";
import type { RunRow } from "../runs/queries.ts";
import type { HookRow } from "../vcs/hooks.ts";
import {
  claimFeedbackItems,
  deleteFeedbackItem,
  findClaimedItem,
  putFeedbackItem,
  releaseFeedbackItem,
} from "./agent-queries.ts";
import {
  apiUrlProblem,
  type CommitStatus,
  defaultApiUrl,
  gitlabState,
  repoParts,
} from "./model.ts";
import { type FeedbackKind, type FeedbackRow, feedbackOfRun, recordFeedback } from "./queries.ts";

/** How long the agent that ran the run's job has its feedback to itself. */
export const AGENT_PREFERENCE_MS = 60_000;
/** How often an agent with VCS tokens asks for feedback to post. */
export const FEEDBACK_POLL_SECONDS = 5;

/** A commit status to post, as the sink builds it. */
export type StatusPost = {
  sha: string;
  context: string;
  runStatus: RunStatus;
  status: CommitStatus;
  targetUrl: string;
};
/** The plan comment to write, as the sink builds it. */
export type CommentPost = { number: number; marker: string; body: string };

/** Run statuses in which the run waits for (or never reached) an agent. */
const UNHELD: readonly RunStatus[] = [
  "pending",
  "plan_queued",
  "confirmed",
  "apply_queued",
  "discarded",
];

/**
 * The agent holding the run (the one that ran its latest job), or null when none does: the run
 * is queued, was discarded, or ended before any agent took it.
 */
export function holdingAgent(run: RunRow, jobs: readonly RunJobRow[]): string | null {
  const last = jobs.at(-1);
  return last === undefined || UNHELD.includes(run.status) ? null : last.agentId;
}

/** Where a run's posts go (API URL, host, repository), or why they cannot be posted. */
type Destination = { apiUrl: string; host: string; repository: string; poolId: string };

function destinationOf(
  deps: Deps,
  input: { hook: HookRow; repoUrl: string; poolId: string | null },
): Destination | { problem: string } {
  const parts = repoParts(input.repoUrl);
  const apiUrl = input.hook.apiUrl ?? defaultApiUrl(input.hook.provider, input.repoUrl);
  if (parts === null || apiUrl === null) {
    return { problem: `the repository URL ${input.repoUrl} names no host and path` };
  }
  const refused = apiUrlProblem(apiUrl, deps.env.VCS_ALLOW_LOOPBACK === "true");
  if (refused !== null) {
    return { problem: `the hook's apiUrl ${refused}` };
  }
  if (input.poolId === null) {
    return { problem: "the workspace has no agent pool whose agents could post it" };
  }
  const base = apiUrl.replace(/\/+$/, "");
  const host = new URL(base).host.toLowerCase();
  return { apiUrl: base, host, repository: parts.path, poolId: input.poolId };
}

/** What the agent posts for `kind`, as the protocol's feedback item (its id set on claim). */
function payloadOf(
  run: RunRow,
  hook: HookRow,
  to: Destination,
  status: StatusPost,
  comment: CommentPost | null,
): Omit<StatusFeedback, "id"> | Omit<CommentFeedback, "id"> {
  const target = {
    runId: run.id,
    provider: hook.provider,
    apiUrl: to.apiUrl,
    host: to.host,
    repository: to.repository,
    sha: status.sha,
  };
  if (comment !== null) {
    return { ...target, kind: "comment", ...comment };
  }
  return {
    ...target,
    kind: "status",
    state: status.status.state,
    gitlabState: gitlabState(run.status, status.status) as StatusFeedback["gitlabState"],
    description: status.status.description,
    context: status.context,
    targetUrl: status.targetUrl,
  };
}

/**
 * Queues the run's posts for the agents of its pool, or records on the run why they cannot be
 * posted (no repository path, a refused `apiUrl`, no pool). A post already made for the run's
 * status is not queued again; a queued one not yet claimed is replaced.
 */
export async function queueForAgents(
  deps: Deps,
  input: {
    run: RunRow;
    hook: HookRow;
    repoUrl: string;
    poolId: string | null;
    agentId: string | null;
    status: StatusPost;
    comment: CommentPost | null;
  },
): Promise<void> {
  const { run, status } = input;
  const previous = await feedbackOfRun(deps.db, run.id);
  const to = destinationOf(deps, input);
  const posts: [FeedbackKind, CommentPost | null][] = [["status", null]];
  if (input.comment !== null) {
    posts.push(["comment", input.comment]);
  }
  for (const [kind, comment] of posts) {
    const before = previous.find((p) => p.kind === kind);
    if (before?.posted && before.runStatus === run.status) {
      continue;
    }
    if ("problem" in to) {
      await record(deps, run, kind, status.status, `${kind} not posted: ${to.problem}`, before);
      continue;
    }
    const item = {
      runId: run.id,
      kind,
      orgId: run.orgId,
      poolId: to.poolId,
      host: to.host,
      payload: JSON.stringify(payloadOf(run, input.hook, to, status, comment)),
      runStatus: run.status,
      state: status.status.state,
      description: status.status.description,
      preferredAgentId: input.agentId,
      preferredUntil: input.agentId === null ? null : deps.now() + AGENT_PREFERENCE_MS,
    };
    await putFeedbackItem(deps.db, item, deps.now());
  }
}

/** Records a post's outcome on the run, as coordinator mode does. */
function record(
  deps: Deps,
  run: { id: string; orgId: string; status: string },
  kind: FeedbackKind,
  status: { state: string; description: string },
  error: string | null,
  before: FeedbackRow | undefined,
) {
  return recordFeedback(
    deps.db,
    {
      runId: run.id,
      kind,
      orgId: run.orgId,
      runStatus: run.status,
      state: status.state,
      description: status.description,
      posted: error === null,
      error,
      updatedAt: deps.now(),
    },
    before,
  );
}

/**
 * Hands the agent up to {@link MAX_FEEDBACK_ITEMS} items of its pool for the hosts it holds
 * tokens for; each is the agent's for {@link FEEDBACK_CLAIM_SECONDS}.
 */
export async function claimFeedback(
  deps: Deps,
  input: { poolId: string; agentId: string; hosts: string[] },
): Promise<FeedbackItem[]> {
  const now = deps.now();
  const rows = await claimFeedbackItems(
    deps.db,
    { ...input, now, until: now + FEEDBACK_CLAIM_SECONDS * 1000 },
    MAX_FEEDBACK_ITEMS,
  );
  return rows.map(
    (row) =>
      ({ ...(JSON.parse(row.payload) as Omit<FeedbackItem, "id">), id: row.id }) as FeedbackItem,
  );
}

/** A VCS's message as the run shows it: one line, no control characters, at most 300 characters. */
function cleanMessage(message: string | null | undefined): string {
  const line = (message ?? "")
    // biome-ignore lint/suspicious/noControlCharactersInRegex: terminal escapes are what it removes
    .replace(/\u001b\[[0-?]*[ -/]*[@-~]/g, "")
    .replace(/\p{Cc}+/gu, " ")
    .trim();
  return (line || "the agent gave no reason").slice(0, 300);
}

/**
 * Records the agent's report of the item it claimed: posted, or why not. A report of an item a
 * newer post replaced meanwhile only ends the claim (`recorded: false`); the newer one follows.
 * Refused `not_found` unless the item is this agent's claim in this pool.
 */
export async function reportFeedback(
  deps: Deps,
  input: { poolId: string; agentId: string; itemId: string; report: FeedbackReport },
): Promise<Outcome<{ recorded: boolean }, "not_found">> {
  const row = await findClaimedItem(deps.db, input);
  if (row === undefined) {
    return refuse("not_found", `feedback item ${input.itemId} is not claimed by this agent`);
  }
  if (row.id !== input.itemId) {
    await releaseFeedbackItem(deps.db, input.itemId);
    return ok({ recorded: false });
  }
  const before = (await feedbackOfRun(deps.db, row.runId)).find((p) => p.kind === row.kind);
  const error = input.report.posted
    ? null
    : `${row.kind} not posted: ${cleanMessage(input.report.message)}`;
  await record(
    deps,
    { id: row.runId, orgId: row.orgId, status: row.runStatus },
    row.kind,
    row,
    error,
    before,
  );
  await deps.db.batch([
    deleteFeedbackItem(deps.db, input.itemId),
    releaseFeedbackItem(deps.db, input.itemId),
  ]);
  return ok({ recorded: true });
}
