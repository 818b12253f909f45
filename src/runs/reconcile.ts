/**
 * The cron reconciler (every minute), the level-triggered safety net: whatever message was lost,
 * the D1 runs and the pool queues converge. It pages through every run in the scheduler's hands
 * with a cursor, asking each pool about a page's jobs in one call: a queued run whose job its
 * pool does not have is re-enqueued (idempotent by job id); a job the pool ended whose run did
 * not move has its ending applied; a running phase past its timeout errors (the same timeout and
 * words as the pool's); a running phase whose job the pool no longer knows errors, never re-runs.
 * Then free workspaces promote their next run, and workspaces held by an ended run are freed.
 */
import { and, asc, eq, gt, inArray, isNull } from "drizzle-orm";
import type { JobView } from "../../durable/pool-types.ts";
import { endingOf } from "../../durable/pool-views.ts";
import { phaseTimeoutReason } from "../../durable/queue.ts";
import { runs, workspaces } from "../db/schema.ts";
import type { Deps } from "../deps.ts";
import { poolStub } from "../pools/service.ts";
import { getWorkspacesByIds, type WorkspaceRow } from "../workspaces/queries.ts";
import { applyEndings, handleJobEnded } from "./events.ts";
import { cancelPoolJob } from "./jobs.ts";
import {
  jobId,
  phaseOf,
  phaseTimeoutMs,
  RUNNING_STATUSES,
  SCHEDULED_STATUSES,
  TERMINAL_STATUSES,
} from "./model.ts";
import { advanceWorkspace, endRun, queueApply, scheduleJob } from "./progress.ts";
import { moveRun, type RunRow } from "./queries.ts";

/** Rows read per page; every page is looked at, the cursor carries on after the last one. */
export const RECONCILE_PAGE_SIZE = 200;

export type ReconcileReport = {
  reenqueued: string[];
  endedFromPool: string[];
  timedOut: string[];
  lostJobs: string[];
  promoted: string[];
  freed: string[];
};

/** One reconciliation pass over every scheduled run; returns what it repaired. */
export async function reconcile(
  deps: Deps,
  pageSize = RECONCILE_PAGE_SIZE,
): Promise<ReconcileReport> {
  const now = deps.now();
  const report: ReconcileReport = {
    reenqueued: [],
    endedFromPool: [],
    timedOut: [],
    lostJobs: [],
    promoted: [],
    freed: [],
  };
  await eachPage(
    (after) =>
      deps.db
        .select()
        .from(runs)
        .where(
          and(
            inArray(runs.status, [...SCHEDULED_STATUSES]),
            after ? gt(runs.id, after) : undefined,
          ),
        )
        .orderBy(asc(runs.id))
        .limit(pageSize),
    (run) => run.id,
    pageSize,
    (page) => reconcileRuns(deps, page, now, report),
  );
  await eachPage(
    (after) => freeWorkspacesPage(deps, after, pageSize),
    (row) => row.id,
    pageSize,
    async (page) => {
      for (const { id } of page) {
        await advanceWorkspace(deps, id);
        report.promoted.push(id);
      }
    },
  );
  await eachPage(
    (after) => heldByEndedRunPage(deps, after, pageSize),
    (row) => row.workspaceId,
    pageSize,
    async (page) => {
      for (const { run } of page) {
        await endRun(deps, run);
        report.freed.push(run.workspaceId);
      }
    },
  );
  return report;
}

/** Reads pages after a cursor until one comes back short, handling each as it arrives. */
async function eachPage<T>(
  read: (after: string | null) => Promise<T[]>,
  key: (row: T) => string,
  pageSize: number,
  handle: (page: T[]) => Promise<void>,
): Promise<void> {
  let after: string | null = null;
  for (;;) {
    const page = await read(after);
    if (page.length > 0) {
      await handle(page);
    }
    const last = page.at(-1);
    if (page.length < pageSize || !last) {
      return;
    }
    after = key(last);
  }
}

/** One page of scheduled runs: their pools are asked about all of the page's jobs at once. */
async function reconcileRuns(deps: Deps, page: RunRow[], now: number, report: ReconcileReport) {
  const ids = [...new Set(page.map((run) => run.workspaceId))];
  const rows = await getWorkspacesByIds(deps.db, ids);
  const workspaceOf = new Map(rows.map((w) => [w.id, w]));
  const jobs = await poolJobs(deps, page, workspaceOf);
  for (const run of page) {
    const workspace = workspaceOf.get(run.workspaceId);
    await reconcileRun(
      deps,
      run,
      workspace,
      jobs.get(jobId(run.id, phaseOf(run.status))),
      now,
      report,
    );
  }
}

function poolOf(run: RunRow, workspace: WorkspaceRow | undefined): string | null {
  return run.plannedPoolId ?? workspace?.poolId ?? null;
}

/** The pools' view of the page's jobs, by job id; one call per pool. */
async function poolJobs(
  deps: Deps,
  page: RunRow[],
  workspaceOf: Map<string, WorkspaceRow>,
): Promise<Map<string, JobView>> {
  const byPool = new Map<string, string[]>();
  for (const run of page) {
    const poolId = poolOf(run, workspaceOf.get(run.workspaceId));
    if (poolId) {
      byPool.set(poolId, [...(byPool.get(poolId) ?? []), jobId(run.id, phaseOf(run.status))]);
    }
  }
  const out = new Map<string, JobView>();
  for (const [poolId, jobIds] of byPool) {
    for (const job of await poolStub(deps.env, poolId).getJobs(jobIds)) {
      out.set(job.jobId, job);
    }
  }
  return out;
}

async function reconcileRun(
  deps: Deps,
  run: RunRow,
  workspace: WorkspaceRow | undefined,
  job: JobView | undefined,
  now: number,
  report: ReconcileReport,
): Promise<void> {
  if (run.status === "confirmed") {
    await queueApply(deps, run);
    report.reenqueued.push(run.id);
    return;
  }
  const phase = phaseOf(run.status);
  const ending = job ? endingOf(job) : null;
  if (ending) {
    await handleJobEnded(deps, ending);
    report.endedFromPool.push(run.id);
    return;
  }
  const isRunning = RUNNING_STATUSES.includes(run.status);
  if (!isRunning) {
    if (!job && poolOf(run, workspace)) {
      await scheduleJob(deps, run, phase, workspace ? { workspace } : {});
      report.reenqueued.push(run.id);
    }
    return;
  }
  const limitMs = phaseTimeoutMs(deps.env, phase);
  const entered = run.statusTimestamps?.[run.status] ?? run.updatedAt;
  const reason = !job
    ? `its ${phase} job is no longer known to its agent pool; it is not run again`
    : now - entered > limitMs
      ? phaseTimeoutReason(phase, limitMs)
      : null;
  if (!reason) {
    return;
  }
  const errored = await moveRun(deps.db, run.id, [run.status], "errored", now, {
    statusReason: reason,
  });
  if (errored) {
    await applyEndings(deps, await cancelPoolJob(deps, errored, { force: true }));
    await endRun(deps, errored);
    (job ? report.timedOut : report.lostJobs).push(run.id);
  }
}

/** Workspaces with a pending run and nobody holding them, by id after the cursor. */
function freeWorkspacesPage(deps: Deps, after: string | null, pageSize: number) {
  return deps.db
    .selectDistinct({ id: runs.workspaceId })
    .from(runs)
    .innerJoin(workspaces, eq(workspaces.id, runs.workspaceId))
    .where(
      and(
        eq(runs.status, "pending"),
        eq(runs.isSpeculative, false),
        isNull(workspaces.currentRunId),
        isNull(workspaces.lockedBy),
        after ? gt(runs.workspaceId, after) : undefined,
      ),
    )
    .orderBy(asc(runs.workspaceId))
    .limit(pageSize);
}

/** Workspaces whose current run already ended (its cleanup was lost), by id after the cursor. */
function heldByEndedRunPage(deps: Deps, after: string | null, pageSize: number) {
  return deps.db
    .select({ workspaceId: workspaces.id, run: runs })
    .from(workspaces)
    .innerJoin(runs, eq(runs.id, workspaces.currentRunId))
    .where(
      and(
        inArray(runs.status, [...TERMINAL_STATUSES]),
        after ? gt(workspaces.id, after) : undefined,
      ),
    )
    .orderBy(asc(workspaces.id))
    .limit(pageSize);
}
