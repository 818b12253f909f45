/**
 * The cron reconciler (every minute), level-triggered: whatever message was lost, the D1 runs and
 * the pool queues converge. A run waiting for a job that its pool does not have is re-enqueued
 * (idempotent by job id); a job the pool ended but whose run did not move is applied again; a
 * phase running past its timeout errors the run; a free workspace promotes its next run.
 */
import { and, eq, inArray, isNull, sql } from "drizzle-orm";
import { runs, workspaces } from "../db/schema.ts";
import { poolStub } from "../pools/service.ts";
import type { Deps } from "./deps.ts";
import { handleJobEnded } from "./events.ts";
import { cancelPoolJob, enqueueJob } from "./jobs.ts";
import { jobId } from "./model.ts";
import { advanceWorkspace, endRun, queueApply } from "./progress.ts";
import { moveRun, type RunRow } from "./queries.ts";

export const DEFAULT_PLAN_TIMEOUT_MS = 2 * 60 * 60 * 1000;
export const DEFAULT_APPLY_TIMEOUT_MS = 24 * 60 * 60 * 1000;
/** Runs looked at per pass; the next minute takes the rest. */
const BATCH = 200;

export type ReconcileReport = {
  reenqueued: string[];
  endedFromPool: string[];
  timedOut: string[];
  promoted: string[];
};

function timeouts(env: Env) {
  const plan = Number(env.PLAN_TIMEOUT_MS);
  const apply = Number(env.APPLY_TIMEOUT_MS);
  return {
    plan: Number.isFinite(plan) && plan > 0 ? plan : DEFAULT_PLAN_TIMEOUT_MS,
    apply: Number.isFinite(apply) && apply > 0 ? apply : DEFAULT_APPLY_TIMEOUT_MS,
  };
}

function poolOf(run: RunRow, workspace: { poolId: string | null } | undefined): string | null {
  return run.plannedPoolId ?? workspace?.poolId ?? null;
}

/** One reconciliation pass; returns what it repaired (for logs and tests). */
export async function reconcile(deps: Deps, now = Date.now()): Promise<ReconcileReport> {
  const report: ReconcileReport = { reenqueued: [], endedFromPool: [], timedOut: [], promoted: [] };
  const limits = timeouts(deps.env);
  const active = await deps.db
    .select()
    .from(runs)
    .where(
      inArray(runs.status, ["plan_queued", "planning", "confirmed", "apply_queued", "applying"]),
    )
    .limit(BATCH);
  for (const run of active) {
    const workspace = await deps.db.query.workspaces.findFirst({
      where: eq(workspaces.id, run.workspaceId),
    });
    if (run.status === "confirmed") {
      await queueApply(deps, run);
      report.reenqueued.push(run.id);
      continue;
    }
    const phase = run.status === "plan_queued" || run.status === "planning" ? "plan" : "apply";
    const entered = run.statusTimestamps?.[run.status] ?? run.updatedAt;
    const limit = phase === "plan" ? limits.plan : limits.apply;
    if ((run.status === "planning" || run.status === "applying") && now - entered > limit) {
      const hours = (limit / 3_600_000).toFixed(limit % 3_600_000 === 0 ? 0 : 2);
      const errored = await moveRun(deps.db, run.id, [run.status], "errored", now, {
        statusReason: `${phase} ran longer than its ${hours} h timeout`,
      });
      if (errored) {
        await cancelPoolJob(deps, errored, { force: true });
        await endRun(deps, errored);
        report.timedOut.push(run.id);
      }
      continue;
    }
    const poolId = poolOf(run, workspace);
    if (!poolId) {
      continue;
    }
    const job = await poolStub(deps.env, poolId).getJob(jobId(run.id, phase));
    if (!job) {
      await enqueueJob(deps, run, phase);
      report.reenqueued.push(run.id);
      continue;
    }
    if (job.state === "ended" && job.outcome) {
      await handleJobEnded(deps, {
        jobId: job.jobId,
        runId: run.id,
        workspaceId: run.workspaceId,
        orgId: run.orgId,
        phase,
        outcome: job.outcome,
        action: job.outcome === "errored" ? "job.errored" : "job.finished",
        actor: "system",
        agentId: job.agentId,
        reason: job.reason,
        exitCode: job.exitCode,
        planSummary: job.planSummary,
        forced: false,
        endedAt: job.endedAt ?? now,
      });
      report.endedFromPool.push(run.id);
    }
  }
  // Workspaces with pending runs and nobody holding them.
  const free = await deps.db
    .selectDistinct({ id: runs.workspaceId })
    .from(runs)
    .innerJoin(workspaces, eq(workspaces.id, runs.workspaceId))
    .where(
      and(
        eq(runs.status, "pending"),
        eq(runs.isSpeculative, false),
        isNull(workspaces.currentRunId),
        isNull(workspaces.lockedBy),
      ),
    )
    .limit(BATCH);
  for (const { id } of free) {
    await advanceWorkspace(deps, id);
    report.promoted.push(id);
  }
  // A current run that already ended (its cleanup was lost) still holds its workspace.
  const stuck = await deps.db
    .select({ run: runs })
    .from(workspaces)
    .innerJoin(runs, eq(runs.id, workspaces.currentRunId))
    .where(
      sql`${runs.status} IN ('planned_and_finished','applied','discarded','errored','canceled','force_canceled')`,
    )
    .limit(BATCH);
  for (const { run } of stuck) {
    await endRun(deps, run);
  }
  return report;
}
