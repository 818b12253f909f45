/**
 * How runs move forward without a user: promotion of the next run of a workspace, queueing of
 * the apply, and the cleanup every run gets when it reaches a terminal status.
 */
import type { BatchItem } from "drizzle-orm/batch";
import type { WaitInfo } from "../../durable/pool-types.ts";
import { finishAssessment } from "../assessments/service.ts";
import type { Deps } from "../deps.ts";
import { releaseRunStateLocks } from "../state/locks.ts";
import { enqueueJob, type Known } from "./jobs.ts";
import {
  claimWorkspace,
  forgetRunVariablesQuery,
  getRunById,
  moveRun,
  nextPendingRun,
  type RunRow,
  releaseWorkspaceQuery,
  runHoldsStateLockQuery,
} from "./queries.ts";
import { revokeEndedRunTokensQuery } from "./token-queries.ts";

/**
 * Puts the run's job for `phase` in its pool's queue. When the pool does not allow the
 * workspace (a scope narrowed since, `poolScopeRefusal`), nothing reaches the pool: the run
 * errors with the sentence that says so, and the workspace moves on to its next run.
 */
export async function scheduleJob(
  deps: Deps,
  run: RunRow,
  phase: "plan" | "apply",
  known: Known = {},
): Promise<{ run: RunRow; wait: WaitInfo | null }> {
  const queued = await enqueueJob(deps, run, phase, known);
  if (queued.ok) {
    return { run, wait: queued.value };
  }
  const errored = await moveRun(deps.db, run.id, [run.status], "errored", deps.now(), {
    statusReason: queued.reason,
  });
  if (errored) {
    await endRun(deps, errored);
  }
  return { run: errored ?? run, wait: null };
}

/** Moves a pending run to `plan_queued` and puts its plan job in the pool's queue. */
export async function startPlan(deps: Deps, runId: string): Promise<void> {
  const run = await moveRun(deps.db, runId, ["pending"], "plan_queued", deps.now());
  if (run) {
    await scheduleJob(deps, run, "plan");
  }
}

/**
 * Promotes the oldest pending run of a free, unlocked workspace to current and starts its plan.
 * Safe to call any time and from anywhere: the claim is compare-and-set.
 */
export async function advanceWorkspace(deps: Deps, workspaceId: string): Promise<void> {
  const next = await nextPendingRun(deps.db, workspaceId);
  if (!next) {
    return;
  }
  if (await claimWorkspace(deps.db, workspaceId, next.id, deps.now())) {
    await startPlan(deps, next.id);
  }
}

/** confirmed → apply_queued, with the apply job enqueued. */
export async function queueApply(deps: Deps, run: RunRow): Promise<RunRow> {
  const queued = await moveRun(deps.db, run.id, ["confirmed"], "apply_queued", deps.now());
  if (queued) {
    return (await scheduleJob(deps, queued, "apply")).run;
  }
  return (await getRunById(deps.db, run.id)) ?? run;
}

/**
 * What every run gets once terminal: its tokens die, its state locks and the workspace are
 * released, and the workspace's next pending run is promoted (a speculative plan never held
 * it). `alongside` lands in the same batch (the ending's audit row). Idempotent.
 */
export async function endRun(
  deps: Deps,
  run: RunRow,
  alongside: readonly BatchItem<"sqlite">[] = [],
): Promise<void> {
  const [, , locks] = await deps.db.batch([
    ...endRunQueries(deps.db, run, deps.now()),
    ...alongside,
  ]);
  await afterRunEnded(deps, run, locks.length > 0);
}

/**
 * The D1 side of {@link endRun} as queries to put in a batch after the move that ended the run:
 * each takes effect only once the run is terminal. The third answers whether it holds a lock.
 */
export function endRunQueries(
  db: Deps["db"],
  run: Pick<RunRow, "id" | "workspaceId">,
  now: number,
) {
  return [
    revokeEndedRunTokensQuery(db, run.id, now),
    releaseWorkspaceQuery(db, run.workspaceId, run.id, now),
    runHoldsStateLockQuery(db, run.id),
    forgetRunVariablesQuery(db, run.id),
  ] as const;
}

/**
 * What follows {@link endRunQueries}: the run's state locks, an assessment's verdict, then the
 * workspace's next run.
 */
export async function afterRunEnded(deps: Deps, run: RunRow, holdsLock: boolean): Promise<void> {
  if (holdsLock) {
    await releaseRunStateLocks(deps, run.id);
  }
  if (run.source === "assessment") {
    await finishAssessment(deps, run.id);
  }
  if (!run.isSpeculative) {
    await advanceWorkspace(deps, run.workspaceId);
  }
}
