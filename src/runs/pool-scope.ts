/**
 * A pool's scope over the runs in its hands. The rule is `pools/model.ts`'s `poolScopeRefusal`;
 * it is asked when a job would be queued (`progress.ts`'s `scheduleJob`), when a leased job would
 * reach an agent (`agent-jobs.ts`), and here, when a pool's scope changed: every run waiting for
 * the pool whose workspace the new scope leaves out errors with the rule's sentence, and its job
 * leaves the pool's queue, so no new job of theirs reaches the pool.
 */
import { and, eq, inArray, isNull, or } from "drizzle-orm";
import { runs, workspaces } from "../db/schema.ts";
import type { Deps } from "../deps.ts";
import { type PoolRow, poolScopeRefusal } from "../pools/model.ts";
import { applyEndings } from "./events.ts";
import { cancelPoolJob } from "./jobs.ts";
import type { RunStatus } from "./model.ts";
import { endRun } from "./progress.ts";
import { moveRun, type RunRow } from "./queries.ts";

/** Runs waiting for their pool: not yet on an agent, their job queued or about to be. */
const WAITING_FOR_POOL: RunStatus[] = ["pending", "plan_queued", "confirmed", "apply_queued"];

/**
 * Errors a run its pool no longer allows (compare-and-set from the status it was read in),
 * takes its job out of the pool (a queued or leased job ends there and then) and frees its
 * workspace for the next run. Answers the errored run, or undefined when it had moved on.
 */
export async function errorRunOutsideScope(
  deps: Deps,
  run: RunRow,
  reason: string,
): Promise<RunRow | undefined> {
  const errored = await moveRun(deps.db, run.id, [run.status], "errored", deps.now(), {
    statusReason: reason,
  });
  if (errored) {
    await applyEndings(deps, await cancelPoolJob(deps, errored, { force: true }));
    await endRun(deps, errored);
  }
  return errored;
}

/**
 * After `pool`'s scope changed: errors every run waiting for it (planned on it, or of a
 * workspace assigned to it) whose workspace the scope no longer allows. Answers their ids.
 */
export async function enforcePoolScope(deps: Deps, pool: PoolRow): Promise<string[]> {
  if (pool.organizationScoped) {
    return [];
  }
  const waiting = await deps.db
    .select({
      run: runs,
      workspace: { id: workspaces.id, name: workspaces.name, projectId: workspaces.projectId },
    })
    .from(runs)
    .innerJoin(workspaces, eq(workspaces.id, runs.workspaceId))
    .where(
      and(
        eq(runs.orgId, pool.orgId),
        inArray(runs.status, WAITING_FOR_POOL),
        or(
          eq(runs.plannedPoolId, pool.id),
          and(isNull(runs.plannedPoolId), eq(workspaces.poolId, pool.id)),
        ),
      ),
    );
  const errored: string[] = [];
  for (const { run, workspace } of waiting) {
    const refusal = poolScopeRefusal(pool, workspace);
    if (refusal !== null && (await errorRunOutsideScope(deps, run, refusal))) {
      errored.push(run.id);
    }
  }
  return errored;
}
