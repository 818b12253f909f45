/**
 * The run lifecycle's user side: queueing and the user actions (confirm, discard, cancel,
 * force-cancel). Every status change is compare-and-set (`moveRun`), and the pool queue is told
 * after D1 changed, so a lost message is repaired by the reconciler (`reconcile.ts`) and never
 * loses or double-applies a run. The rules themselves are in `model.ts`.
 */

import { newId, ok } from "@outpost/common";
import type { WaitInfo } from "../../durable/pool-types.ts";
import { auditQuery } from "../audit/service.ts";
import { type AuditActor, plainActor } from "../authz/actor.ts";
import {
  configurationVersionQuery,
  latestConfigurationVersionQuery,
} from "../configuration-versions/queries.ts";
import type { runs } from "../db/schema.ts";
import type { Deps } from "../deps.ts";
import { type Outcome, refuse } from "../lib/reason.ts";
import { poolScopeRefusal } from "../pools/model.ts";
import { poolScopeQuery } from "../pools/queries.ts";
import { latestSerialWrittenBy } from "../state/queries.ts";
import type { WorkspaceRow } from "../workspaces/queries.ts";
import { applyEndings } from "./events.ts";
import { cancelPoolJob, heldByLiveAgent } from "./jobs.ts";
import {
  type ActionFailure,
  actionFailureMessage,
  canForceCancel,
  isOverQueueLimit,
  isSpeculativeRun,
  planCancel,
  planningContextChanged,
  queueLimit,
  type RunAction,
  type RunOperation,
  withSavedState,
} from "./model.ts";
import { advanceWorkspace, endRun, queueApply, scheduleJob } from "./progress.ts";
import {
  countQueuedRunsQuery,
  getRunById,
  insertRunQuery,
  moveRun,
  type RunRow,
  setCancelRequested,
} from "./queries.ts";

export type CreateRunInput = {
  operation: RunOperation;
  /** Asked for a speculative plan; a `plan` operation is one whatever this says. */
  isSpeculative?: boolean;
  message: string;
  configurationVersionId?: string | undefined;
  /** May apply a plan that destroys every resource of the state (`model.emptyApplyRefusal`). */
  allowEmptyApply?: boolean;
  source: RunRow["source"];
  actor: AuditActor;
  /** For this run only, instead of the workspace's auto-apply (the TFE API's `auto-apply`). */
  autoApply?: boolean;
  /** Terraform's `-target`, `-replace` and `-refresh=false` for this run's plan. */
  planOptions?: { targetAddrs: string[]; replaceAddrs: string[]; refresh: boolean };
  /**
   * The run's own Terraform variables, sealed for the run id `id` (`sealRunVariables`): both
   * or neither.
   */
  sealedVariables?: { id: string; sealed: string | null };
  /** A run trigger's run: the source workspace's applied run that queued it (at most once). */
  triggeringRunId?: string;
  vcs?: {
    commitSha?: string | null;
    branch?: string | null;
    pullRequestNumber?: number | null;
    author?: string | null;
    commitMessage?: string | null;
    isFork?: boolean;
  };
};

/** How long a client told `over_limit` should wait before it queues again. */
const QUEUE_RETRY_AFTER_SECONDS = 30;

/**
 * A queued run, where its plan job waits when it was queued at once, and its pool's name (for
 * the words of why it waits).
 */
export type CreatedRun = { run: RunRow; wait: WaitInfo | null; poolName: string | null };

/**
 * Queues a run: a speculative plan goes to its pool's queue at once (it never waits for the
 * workspace); any other run starts `pending` and plans when the workspace is free. Refuses local
 * workspaces, workspaces without a pool or a configuration, a non-speculative run on a pull
 * request's configuration (`conflict`), a configuration version not in the workspace
 * (`not_found`), a workspace its pool's scope no longer allows (`conflict`, the scope rule's
 * sentence), and orgs over their queue limit (`over_limit`). A run on a fork's configuration is
 * a fork's run.
 */
export async function createRun(
  deps: Deps,
  workspace: WorkspaceRow,
  input: CreateRunInput,
): Promise<Outcome<CreatedRun, "conflict" | "not_found" | "over_limit">> {
  const { db, env } = deps;
  const name = workspace.name;
  if (workspace.executionMode === "local") {
    return refuse(
      "conflict",
      `workspace ${name} uses local execution: run terraform on your machine against its state backend, or set executionMode to agent`,
    );
  }
  if (!workspace.poolId) {
    return refuse("conflict", `workspace ${name} has no agent pool`);
  }
  // One round trip: the configuration, the org's queue, the pool's name and scope.
  const [[configuration], [waiting], [pool]] = await db.batch([
    input.configurationVersionId
      ? configurationVersionQuery(db, workspace.id, input.configurationVersionId)
      : latestConfigurationVersionQuery(db, workspace.id),
    countQueuedRunsQuery(db, workspace.orgId),
    poolScopeQuery(db, workspace.poolId),
  ]);
  if (!configuration) {
    return input.configurationVersionId
      ? refuse(
          "not_found",
          `configuration version ${input.configurationVersionId} not found in this workspace`,
        )
      : refuse("conflict", `workspace ${name} has no configuration version; upload one first`);
  }
  // A pull request's code is unmerged (a fork's is untrusted): it is only ever planned.
  if (configuration.isSpeculative && !isSpeculativeRun(input)) {
    return refuse(
      "conflict",
      `configuration version ${configuration.id} is a pull request's commit: only a speculative plan may run on it (isSpeculative true, or operation plan)`,
    );
  }
  const outOfScope = pool ? poolScopeRefusal(pool, workspace) : null;
  if (outOfScope !== null) {
    return refuse("conflict", outOfScope);
  }
  if (isOverQueueLimit(waiting?.n ?? 0, queueLimit(env))) {
    return refuse("over_limit", "too many queued runs in this organization; retry later", {
      retryAfterSeconds: QUEUE_RETRY_AFTER_SECONDS,
    });
  }
  const poolName = pool?.name ?? null;
  const now = deps.now();
  const isSpeculative = isSpeculativeRun(input);
  const id = input.sealedVariables?.id ?? newId("run");
  const row = {
    id,
    orgId: workspace.orgId,
    workspaceId: workspace.id,
    configurationVersionId: configuration.id,
    operation: input.operation,
    isSpeculative,
    // A speculative plan is queued in the same write: pending and plan_queued at once.
    status: isSpeculative ? ("plan_queued" as const) : ("pending" as const),
    message: input.message,
    source: input.source,
    triggeringRunId: input.triggeringRunId ?? null,
    commitSha: input.vcs?.commitSha ?? configuration.commitSha ?? null,
    branch: input.vcs?.branch ?? configuration.branch ?? null,
    pullRequestNumber: input.vcs?.pullRequestNumber ?? null,
    author: input.vcs?.author ?? null,
    commitMessage: input.vcs?.commitMessage ?? null,
    // Inherited from the configuration version, whoever queues the run and however.
    isFork: configuration.isFork || (input.vcs?.isFork ?? false),
    isAutoApply: (input.autoApply ?? workspace.autoApply) && !isSpeculative,
    targetAddrs: input.planOptions?.targetAddrs ?? null,
    replaceAddrs: input.planOptions?.replaceAddrs ?? null,
    refresh: input.planOptions?.refresh ?? true,
    runVariables: input.sealedVariables?.sealed ?? null,
    allowEmptyApply: input.allowEmptyApply ?? false,
    statusTimestamps: (isSpeculative
      ? { pending: now, plan_queued: now }
      : { pending: now }) as Record<string, number>,
    createdBy: plainActor(input.actor),
    createdAt: now,
    updatedAt: now,
  } satisfies typeof runs.$inferInsert;
  const [[inserted]] = await db.batch([
    insertRunQuery(db, row).returning(),
    auditQuery(db, {
      orgId: workspace.orgId,
      actor: input.actor,
      action: "run.create",
      targetType: "run",
      targetId: row.id,
      data: { workspaceId: workspace.id, operation: input.operation, speculative: isSpeculative },
      now,
    }),
  ]);
  if (!inserted) {
    throw new Error(`run ${row.id} vanished after insert`);
  }
  if (isSpeculative) {
    const known = { workspace, configuration, ...(pool ? { pool } : {}) };
    const { run, wait } = await scheduleJob(deps, inserted, "plan", known);
    return ok({ run, wait, poolName });
  }
  await advanceWorkspace(deps, workspace.id);
  return ok({ run: (await getRunById(db, row.id)) ?? inserted, wait: null, poolName });
}

/** A refused user action: `conflict`, in the words the API and the dashboard both show. */
function actionRefused(failure: ActionFailure, run: RunRow, action: RunAction) {
  return refuse("conflict", actionFailureMessage(failure, run, action));
}

function audit(
  deps: Deps,
  run: RunRow,
  actor: AuditActor,
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
      now: deps.now(),
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
  actor: AuditActor,
): Promise<Outcome<RunRow, "conflict">> {
  if (run.status !== "planned") {
    return actionRefused("invalid_status", run, "confirm");
  }
  const now = deps.now();
  const changed = planningContextChanged(run, workspace);
  if (changed) {
    const errored = await moveRun(deps.db, run.id, ["planned"], "errored", now, {
      statusReason: changed,
      confirmedBy: plainActor(actor),
    });
    if (errored) {
      await audit(deps, errored, actor, "run.confirm", { refused: changed });
      await endRun(deps, errored);
    }
    return actionRefused("workspace_changed", run, "confirm");
  }
  const confirmed = await moveRun(deps.db, run.id, ["planned"], "confirmed", now, {
    confirmedBy: plainActor(actor),
  });
  if (!confirmed) {
    return actionRefused("invalid_status", run, "confirm");
  }
  await audit(deps, confirmed, actor, "run.confirm");
  return ok(await queueApply(deps, confirmed));
}

export async function discardRun(
  deps: Deps,
  run: RunRow,
  actor: AuditActor,
): Promise<Outcome<RunRow, "conflict">> {
  const discarded = await moveRun(deps.db, run.id, ["planned"], "discarded", deps.now(), {
    discardedBy: plainActor(actor),
  });
  if (!discarded) {
    return actionRefused("invalid_status", run, "discard");
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
  actor: AuditActor,
): Promise<Outcome<RunRow, "conflict">> {
  const plan = planCancel(run.status, run.cancelRequestedAt);
  if (plan.kind === "refused") {
    return actionRefused(
      plan.reason === "planned_use_discard"
        ? "use_discard"
        : plan.reason === "already_requested"
          ? "already_canceling"
          : "invalid_status",
      run,
      "cancel",
    );
  }
  const now = deps.now();
  if (plan.kind === "signal_agent") {
    if ((await setCancelRequested(deps.db, run.id, now, plainActor(actor))).length === 0) {
      return actionRefused("already_canceling", run, "cancel");
    }
    await audit(deps, run, actor, "run.cancel");
    await applyEndings(deps, await cancelPoolJob(deps, run, { force: false }));
    return ok((await getRunById(deps.db, run.id)) ?? run);
  }
  const canceled = await moveRun(deps.db, run.id, [run.status], "canceled", now, {
    cancelRequestedAt: now,
    canceledBy: plainActor(actor),
    statusReason: withSavedState(
      `canceled by ${actor.name}`,
      await latestSerialWrittenBy(deps.db, run.id),
    ),
  });
  if (!canceled) {
    return actionRefused("invalid_status", run, "cancel");
  }
  await audit(deps, canceled, actor, "run.cancel");
  await applyEndings(deps, await cancelPoolJob(deps, canceled, { force: false }));
  await endRun(deps, canceled);
  return ok(canceled);
}

/** Force-cancel: allowed 10 s after a cancel; the job ends at once and its engine is killed. */
export async function forceCancelRun(
  deps: Deps,
  run: RunRow,
  actor: AuditActor,
): Promise<Outcome<RunRow, "conflict">> {
  const now = deps.now();
  const held = await heldByLiveAgent(deps, run);
  const allowed = canForceCancel(run.status, run.cancelRequestedAt, now, held);
  if (!allowed.ok) {
    const failure = allowed.reason === "terminal" ? "invalid_status" : allowed.reason;
    return actionRefused(failure, run, "force-cancel");
  }
  const saved = await latestSerialWrittenBy(deps.db, run.id);
  const forced = await moveRun(deps.db, run.id, [run.status], "force_canceled", now, {
    canceledBy: plainActor(actor),
    statusReason: withSavedState(`force-canceled by ${actor.name}`, saved),
  });
  if (!forced) {
    return actionRefused("invalid_status", run, "force-cancel");
  }
  await audit(deps, forced, actor, "run.force_cancel");
  await applyEndings(deps, await cancelPoolJob(deps, forced, { force: true }));
  await endRun(deps, forced);
  return ok(forced);
}
