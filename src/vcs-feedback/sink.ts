/**
 * The VCS feedback sink of the run events queue: for a run a VCS hook queued whose hook says
 * `feedback: "coordinator"` (or `"agent"`, whose posts `agent-mode.ts` queues for the pool's
 * agents, see there), the commit status of the run as it is now (so a
 * late or repeated event converges on the latest state) on its commit, and on a pull/merge
 * request the workspace's plan comment, edited in place. What was posted, or why not, is
 * recorded on the run (`vcs_feedback`); a post already made for the run's status is not made
 * again. A refused post (401, 403, 404, 422) is recorded and left; one that may succeed later
 * (5xx, rate limit, network) is recorded and thrown, so the queue retries with backoff. Nothing
 * here changes the run.
 */
import { getConfigurationVersion } from "../configuration-versions/queries.ts";
import type { Deps } from "../deps.ts";
import { isLifecycleEntry, RetryLater, type RunEvent } from "../events/model.ts";
import type { RunEventSink } from "../events/sinks.ts";
import { listRunJobs } from "../runs/job-records.ts";
import { getRunById, type RunRow } from "../runs/queries.ts";
import { findHookById, type HookRow } from "../vcs/hooks.ts";
import { getWorkspaceById } from "../workspaces/queries.ts";
import { type CommentPost, holdingAgent, queueForAgents, type StatusPost } from "./agent-mode.ts";
import { type Posted, postCommitStatus, upsertComment, type VcsTarget } from "./client.ts";
import { commentMaxOf } from "./comment.ts";
import { logTail, planResources } from "./comment-inputs.ts";
import { hasCoordinatorCredential, openHookApp, openHookToken } from "./credentials.ts";
import { installationToken } from "./github-app.ts";
import {
  apiUrlProblem,
  commentMarker,
  commitStatusOf,
  defaultApiUrl,
  isCommentWorthy,
  planComment,
  repoParts,
} from "./model.ts";
import { type FeedbackKind, type FeedbackRow, feedbackOfRun, recordFeedback } from "./queries.ts";

/** A retryable failure: thrown so the queue delivers the event again later. */
export class FeedbackRetry extends RetryLater {}

/** Where the run's feedback goes, or why it cannot be posted (recorded on the run). */
async function targetOf(
  deps: Deps,
  hook: HookRow,
  repoUrl: string,
): Promise<{ target: VcsTarget } | { problem: Posted & { ok: false } }> {
  const problem = (message: string) => ({
    problem: { ok: false as const, retryable: false, message },
  });
  const parts = repoParts(repoUrl);
  const apiUrl = hook.apiUrl ?? defaultApiUrl(hook.provider, repoUrl);
  if (parts === null || apiUrl === null) {
    return problem(`the repository URL ${repoUrl} names no host and path`);
  }
  const badUrl = apiUrlProblem(apiUrl, deps.env.VCS_ALLOW_LOOPBACK === "true");
  if (badUrl !== null) {
    return problem(`the hook's apiUrl ${badUrl}`);
  }
  const app = hook.provider === "github" ? await openHookApp(deps.env, hook) : null;
  if (app !== null) {
    const minted = await installationToken(deps, app, apiUrl, parts.path);
    return minted.ok
      ? { target: { provider: "github", apiUrl, repoPath: parts.path, token: minted.token } }
      : { problem: minted };
  }
  const token = await openHookToken(deps.env, hook);
  if (token === null) {
    return problem("the hook has no coordinator token or GitHub App (or it no longer opens)");
  }
  return { target: { provider: hook.provider, apiUrl, repoPath: parts.path, token } };
}

/** The hook that queued the run when it asks for feedback (coordinator or agent), else undefined. */
async function feedbackHook(deps: Deps, run: RunRow): Promise<HookRow | undefined> {
  if (run.createdBy?.type !== "vcs" || run.commitSha === null) {
    return undefined;
  }
  const hook = await findHookById(deps.db, run.createdBy.id);
  return hook && hook.feedback !== "off" && hook.orgId === run.orgId ? hook : undefined;
}

/**
 * Whether a later event of the run reports its status instead: the run has since entered a
 * status that is an event of its own. Events of one run are handled side by side, so only the
 * event of the current status posts (a status without its own event, `plan_queued` after
 * `pending` say, is posted by the event before it).
 */
function isStale(event: RunEvent, run: RunRow): boolean {
  return event.status !== run.status && isLifecycleEntry(run.status, run);
}

export const vcsFeedbackSink: RunEventSink = {
  name: "vcs-feedback",
  async handle(deps, event: RunEvent) {
    if (!event.type.startsWith("run:")) {
      return;
    }
    const run = await getRunById(deps.db, event.runId);
    if (!run || isStale(event, run)) {
      return;
    }
    const hook = await feedbackHook(deps, run);
    const workspace = await getWorkspaceById(deps.db, run.workspaceId);
    // The repository as the signed delivery named it when the run was queued: a workspace's
    // repository URL changed since must not redirect the hook's token to another host.
    const configuration = await getConfigurationVersion(
      deps.db,
      run.workspaceId,
      run.configurationVersionId ?? "",
    );
    if (!hook || !workspace || !configuration?.repoUrl) {
      return;
    }
    const runUrl = `${deps.env.PUBLIC_URL ?? ""}/ui/runs/${run.id}`;
    const status = commitStatusOf(run);
    const jobs = (await listRunJobs(deps.db, [run.id])).get(run.id) ?? [];
    const statusPost: StatusPost = {
      sha: run.commitSha ?? "",
      context: `outpost/${workspace.name}`,
      runStatus: run.status,
      status,
      targetUrl: runUrl,
    };
    let commentPost: CommentPost | null = null;
    if (run.pullRequestNumber !== null && isCommentWorthy(run.status)) {
      const ref = { orgId: run.orgId, workspaceId: run.workspaceId, runId: run.id };
      const failed = run.status === "errored";
      const body = planComment({
        workspaceId: workspace.id,
        workspaceName: workspace.name,
        runUrl,
        commitSha: run.commitSha ?? "",
        status,
        agentName: jobs.at(-1)?.agentName ?? jobs.at(-1)?.agentId ?? null,
        detail: failed ? run.statusReason : null,
        resources: await planResources(deps, ref),
        logTail: failed ? await logTail(deps, ref) : null,
        maxChars: commentMaxOf(hook.provider),
      });
      commentPost = { number: run.pullRequestNumber, marker: commentMarker(workspace.id), body };
    }
    // Agent mode: the agents post, except for a run no agent holds when the coordinator has a
    // token of its own for the hook.
    const holder = holdingAgent(run, jobs);
    if (hook.feedback === "agent" && (holder !== null || !hasCoordinatorCredential(hook))) {
      await queueForAgents(deps, {
        run,
        hook,
        repoUrl: configuration.repoUrl,
        poolId: run.plannedPoolId ?? workspace.poolId,
        agentId: holder,
        status: statusPost,
        comment: commentPost,
      });
      return;
    }
    const previous = await feedbackOfRun(deps.db, run.id);
    const found = await targetOf(deps, hook, configuration.repoUrl);
    const ctx = { deps, run, previous, found };
    const results = [
      await post(ctx, "status", status, (target) => postCommitStatus(target, statusPost)),
    ];
    if (commentPost !== null) {
      const comment = commentPost;
      results.push(await post(ctx, "comment", status, (target) => upsertComment(target, comment)));
    }
    const retry = results.find((r) => !r.ok && r.retryable);
    if (retry && !retry.ok) {
      throw new FeedbackRetry(retry.message, retry.retryAfterSeconds ?? 0);
    }
  },
};

type PostContext = {
  deps: Deps;
  run: RunRow;
  previous: FeedbackRow[];
  found: { target: VcsTarget } | { problem: Posted & { ok: false } };
};

/** One post of `kind`, unless already made for the run's status; its outcome recorded. */
async function post(
  { deps, run, previous, found }: PostContext,
  kind: FeedbackKind,
  status: { state: string; description: string },
  send: (target: VcsTarget) => Promise<Posted>,
): Promise<Posted> {
  const before = previous.find((p) => p.kind === kind);
  if (before?.posted && before.runStatus === run.status) {
    return { ok: true };
  }
  const outcome: Posted = "problem" in found ? found.problem : await send(found.target);
  await recordFeedback(
    deps.db,
    {
      runId: run.id,
      kind,
      orgId: run.orgId,
      runStatus: run.status,
      state: status.state,
      description: status.description,
      posted: outcome.ok,
      error: outcome.ok ? null : `${kind} not posted: ${outcome.message}`,
      updatedAt: deps.now(),
    },
    before,
  );
  return outcome;
}
