/**
 * The run lifecycle: queueing, promotion of the next run of a workspace, user actions, and the
 * scheduler's job events. Every status change is compare-and-set (`moveRun`), and the pool
 * queue is told after D1 changed, so a lost message is repaired by the reconciler
 * (`reconcile.ts`) and never loses or double-applies a run.
 */
import { auditQuery } from "../audit/service.ts";
import { latestConfigurationVersion } from "../configuration-versions/service.ts";
import { newId } from "../db/ids.ts";
import type { runs } from "../db/schema.ts";
import { fail, ok, type Result } from "../lib/result.ts";
import type { WorkspaceRow } from "../workspaces/queries.ts";
import type { Deps } from "./deps.ts";
import { cancelPoolJob } from "./jobs.ts";
import { canForceCancel, planCancel, type RunStatus } from "./model.ts";
import { advanceWorkspace, endRun, queueApply, startPlan } from "./progress.ts";
import {
  countQueuedRuns,
  getRunById,
  insertRunQuery,
  moveRun,
  type RunRow,
  setCancelRequested,
} from "./queries.ts";

/** Most runs an org may have waiting in queues before new ones get 429. */
export function queueLimit(env: Env): number {
  const configured = Number(env.MAX_QUEUED_RUNS_PER_ORG);
  return Number.isInteger(configured) && configured > 0 ? configured : 500;
}

export type CreateRunInput = {
  operation: "plan" | "apply" | "destroy";
  isSpeculative: boolean;
  message: string;
  configurationVersionId?: string | undefined;
  source: RunRow["source"];
  actor: string;
  vcs?: {
    commitSha?: string | null;
    branch?: string | null;
    pullRequestNumber?: number | null;
    author?: string | null;
    commitMessage?: string | null;
    isFork?: boolean;
  };
};

export type CreateRunFailure =
  | "local_workspace"
  | "no_pool"
  | "no_configuration"
  | "configuration_not_found"
  | "pull_request_configuration"
  | "over_queue_limit";

/**
 * Queues a run: it starts `pending`, then plans at once if speculative or if the workspace is
 * free; otherwise it waits its turn. Refuses local workspaces, workspaces without a pool or a
 * configuration, a non-speculative run on a pull request's configuration, and orgs over their
 * queue limit. A run on a fork's configuration is a fork's run.
 */
export async function createRun(
  deps: Deps,
  workspace: WorkspaceRow,
  input: CreateRunInput,
): Promise<Result<RunRow, CreateRunFailure>> {
  const { db, env } = deps;
  if (workspace.executionMode === "local") {
    return fail("local_workspace");
  }
  if (!workspace.poolId) {
    return fail("no_pool");
  }
  const configuration = input.configurationVersionId
    ? await db.query.configurationVersions.findFirst({
        where: (cv, { and, eq }) =>
          and(eq(cv.id, input.configurationVersionId ?? ""), eq(cv.workspaceId, workspace.id)),
      })
    : await latestConfigurationVersion(db, workspace.id);
  if (!configuration) {
    return fail(input.configurationVersionId ? "configuration_not_found" : "no_configuration");
  }
  // A pull request's code is unmerged (a fork's is untrusted): it is only ever planned.
  if (configuration.isSpeculative && !input.isSpeculative) {
    return fail("pull_request_configuration");
  }
  if ((await countQueuedRuns(db, workspace.orgId)) >= queueLimit(env)) {
    return fail("over_queue_limit");
  }
  const now = Date.now();
  const row = {
    id: newId("run"),
    orgId: workspace.orgId,
    workspaceId: workspace.id,
    configurationVersionId: configuration.id,
    operation: input.operation,
    isSpeculative: input.isSpeculative,
    status: "pending" as const,
    message: input.message,
    source: input.source,
    commitSha: input.vcs?.commitSha ?? configuration.commitSha ?? null,
    branch: input.vcs?.branch ?? configuration.branch ?? null,
    pullRequestNumber: input.vcs?.pullRequestNumber ?? null,
    author: input.vcs?.author ?? null,
    commitMessage: input.vcs?.commitMessage ?? null,
    // Inherited from the configuration version, whoever queues the run and however.
    isFork: configuration.isFork || (input.vcs?.isFork ?? false),
    isAutoApply: workspace.autoApply && !input.isSpeculative,
    statusTimestamps: { pending: now },
    createdBy: input.actor,
    createdAt: now,
    updatedAt: now,
  } satisfies typeof runs.$inferInsert;
  await db.batch([
    insertRunQuery(db, row),
    auditQuery(db, {
      orgId: workspace.orgId,
      actor: input.actor,
      action: "run.create",
      targetType: "run",
      targetId: row.id,
      data: {
        workspaceId: workspace.id,
        operation: input.operation,
        speculative: input.isSpeculative,
      },
      now,
    }),
  ]);
  if (input.isSpeculative) {
    await startPlan(deps, row.id);
  } else {
    await advanceWorkspace(deps, workspace.id);
  }
  const created = await getRunById(db, row.id);
  if (!created) {
    throw new Error(`run ${row.id} vanished after insert`);
  }
  return ok(created);
}

export type ActionFailure =
  | "invalid_status"
  | "use_discard"
  | "already_canceling"
  | "not_canceling"
  | "too_soon"
  | "workspace_changed";

function audit(
  deps: Deps,
  run: RunRow,
  actor: string,
  action: string,
  data?: Record<string, unknown>,
) {
  return deps.db.batch([
    auditQuery(deps.db, {
      orgId: run.orgId,
      actor,
      action,
      targetType: "run",
      targetId: run.id,
      data: { workspaceId: run.workspaceId, ...data },
      now: Date.now(),
    }),
  ]);
}

/**
 * Confirms a planned run and queues its apply, unless the workspace's execution mode or pool
 * changed since the plan, in which case the run errors with a message saying so.
 */
export async function confirmRun(
  deps: Deps,
  run: RunRow,
  workspace: WorkspaceRow,
  actor: string,
): Promise<Result<RunRow, ActionFailure>> {
  if (run.status !== "planned") {
    return fail("invalid_status");
  }
  const now = Date.now();
  const changed = planningContextChanged(run, workspace);
  if (changed) {
    const errored = await moveRun(deps.db, run.id, ["planned"], "errored", now, {
      statusReason: changed,
    });
    if (errored) {
      await audit(deps, errored, actor, "run.confirm", { refused: changed });
      await endRun(deps, errored);
    }
    return fail("workspace_changed");
  }
  const confirmed = await moveRun(deps.db, run.id, ["planned"], "confirmed", now);
  if (!confirmed) {
    return fail("invalid_status");
  }
  await audit(deps, confirmed, actor, "run.confirm");
  return ok(await queueApply(deps, confirmed));
}

/** Why an apply may not use this plan any more, or null when nothing relevant changed. */
export function planningContextChanged(run: RunRow, workspace: WorkspaceRow): string | null {
  if (run.plannedExecutionMode && run.plannedExecutionMode !== workspace.executionMode) {
    return `the workspace's execution mode changed from ${run.plannedExecutionMode} to ${workspace.executionMode} after this run was planned; queue a new run`;
  }
  if (run.plannedPoolId && run.plannedPoolId !== workspace.poolId) {
    return `the workspace's agent pool changed from ${run.plannedPoolId} to ${workspace.poolId ?? "none"} after this run was planned; queue a new run`;
  }
  return null;
}

export async function discardRun(
  deps: Deps,
  run: RunRow,
  actor: string,
): Promise<Result<RunRow, ActionFailure>> {
  const discarded = await moveRun(deps.db, run.id, ["planned"], "discarded", Date.now());
  if (!discarded) {
    return fail("invalid_status");
  }
  await audit(deps, discarded, actor, "run.discard");
  await endRun(deps, discarded);
  return ok(discarded);
}

/**
 * Graceful cancel: a waiting run ends canceled at once (its queued job is removed); a running
 * one asks its agent to interrupt the engine and ends when the agent reports.
 */
export async function cancelRun(
  deps: Deps,
  run: RunRow,
  actor: string,
): Promise<Result<RunRow, ActionFailure>> {
  const plan = planCancel(run.status as RunStatus, run.cancelRequestedAt);
  if (plan.kind === "refused") {
    return fail(
      plan.reason === "planned_use_discard"
        ? "use_discard"
        : plan.reason === "already_requested"
          ? "already_canceling"
          : "invalid_status",
    );
  }
  const now = Date.now();
  if (plan.kind === "signal_agent") {
    if ((await setCancelRequested(deps.db, run.id, now)).length === 0) {
      return fail("already_canceling");
    }
    await audit(deps, run, actor, "run.cancel");
    await cancelPoolJob(deps, run, { force: false });
    return ok((await getRunById(deps.db, run.id)) ?? run);
  }
  const canceled = await moveRun(deps.db, run.id, [run.status as RunStatus], "canceled", now, {
    cancelRequestedAt: now,
    statusReason: `canceled by ${actor}`,
  });
  if (!canceled) {
    return fail("invalid_status");
  }
  await audit(deps, canceled, actor, "run.cancel");
  await cancelPoolJob(deps, canceled, { force: false });
  await endRun(deps, canceled);
  return ok(canceled);
}

/** Force-cancel: allowed 10 s after a cancel; the job ends at once and its engine is killed. */
export async function forceCancelRun(
  deps: Deps,
  run: RunRow,
  actor: string,
): Promise<Result<RunRow, ActionFailure>> {
  const now = Date.now();
  const allowed = canForceCancel(run.status as RunStatus, run.cancelRequestedAt, now);
  if (!allowed.ok) {
    return fail(allowed.reason === "terminal" ? "invalid_status" : allowed.reason);
  }
  const forced = await moveRun(deps.db, run.id, [run.status as RunStatus], "force_canceled", now, {
    statusReason: `force-canceled by ${actor}`,
  });
  if (!forced) {
    return fail("invalid_status");
  }
  await audit(deps, forced, actor, "run.force_cancel");
  await cancelPoolJob(deps, forced, { force: true });
  await endRun(deps, forced);
  return ok(forced);
}
