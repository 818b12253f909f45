/**
 * A run's jobs in its pool's queue: what is enqueued (the spec the agent gets back, the phase
 * timeout), and the cancel path. The pool object is told after D1 changed; the endings it
 * answers to a cancel go back to the caller to apply, and the reconciler repeats anything lost.
 */

import { fail, ok, type Result } from "@outpost/common";
import type { JobSpec } from "@outpost/protocol";
import type { JobEndedEvent, QueuedJob, WaitInfo } from "../../durable/pool-types.ts";
import { getConfigurationVersion } from "../configuration-versions/queries.ts";
import type { configurationVersions } from "../db/schema.ts";
import type { Deps } from "../deps.ts";
import { type PoolScope, poolScopeRefusal } from "../pools/model.ts";
import { poolScopeQuery } from "../pools/queries.ts";
import { poolStub } from "../pools/service.ts";
import { getWorkspaceById, type WorkspaceRow } from "../workspaces/queries.ts";
import { plannedEngineVersion } from "./job-records.ts";
import { jobId, phaseTimeoutMs, priorityClass } from "./model.ts";
import type { RunRow } from "./queries.ts";

type ConfigurationRow = typeof configurationVersions.$inferSelect;

/** What the scope rule reads of a pool (`poolScopeQuery`). */
export type PoolScopeRow = PoolScope & { name: string };

/** Rows the caller already holds, so queueing a job does not read them again. */
export type Known = {
  workspace?: WorkspaceRow;
  configuration?: ConfigurationRow | null;
  /** The scope of the pool the job goes to. */
  pool?: PoolScopeRow;
};

/**
 * The non-secret description of a job, fixed when it is queued. Variables and the per-run token
 * are added only at lease time (`events.ts`). An apply runs the exact engine version its plan
 * ran (a plan file is only valid for that version), whatever constraint the workspace names.
 */
export async function buildSpec(
  deps: Deps,
  run: RunRow,
  phase: "plan" | "apply",
  known: Omit<Known, "pool"> = {},
): Promise<JobSpec> {
  const workspace = known.workspace ?? (await workspaceOf(deps, run));
  const configuration =
    known.configuration !== undefined
      ? known.configuration
      : run.configurationVersionId
        ? await getConfigurationVersion(deps.db, run.workspaceId, run.configurationVersionId)
        : undefined;
  const planned = phase === "apply" ? await plannedEngineVersion(deps.db, run.id) : null;
  return {
    operation: run.operation,
    phase,
    isSpeculative: run.isSpeculative,
    isDestroy: run.operation === "destroy",
    workspaceName: workspace?.name ?? "",
    engine: workspace?.engine ?? "terraform",
    engineVersion: planned ?? workspace?.engineVersion ?? "",
    stackName: workspace?.stackName ?? null,
    workingDirectory: workspace?.workingDirectory ?? "",
    configuration: configuration
      ? {
          id: configuration.id,
          source: configuration.source,
          sha256: configuration.sha256,
          sizeBytes: configuration.sizeBytes,
          repoUrl: configuration.repoUrl,
          commitSha: configuration.commitSha,
        }
      : null,
    isFork: run.isFork,
    targetAddrs: run.targetAddrs ?? [],
    replaceAddrs: run.replaceAddrs ?? [],
    refresh: run.refresh,
    planSha256: phase === "apply" ? run.planSha256 : null,
  };
}

/**
 * Puts the run's job for `phase` in its pool's queue with its phase timeout; idempotent by job
 * id. Answers where the job waits, or null when the workspace has no pool; refuses, with the
 * sentence, when the pool does not allow the workspace (`poolScopeRefusal`), and then nothing
 * reaches the pool. Callers go through `progress.ts`'s `scheduleJob`, which errors the run then.
 */
export async function enqueueJob(
  deps: Deps,
  run: RunRow,
  phase: "plan" | "apply",
  known: Known = {},
): Promise<Result<WaitInfo | null, string>> {
  const workspace = known.workspace ?? (await workspaceOf(deps, run));
  const poolId = run.plannedPoolId ?? workspace?.poolId ?? null;
  if (!poolId) {
    return ok(null);
  }
  const pool = known.pool ?? (await poolScopeQuery(deps.db, poolId))[0];
  const refusal = pool && workspace ? poolScopeRefusal(pool, workspace) : null;
  if (refusal !== null) {
    return fail(refusal);
  }
  const job: QueuedJob = {
    jobId: jobId(run.id, phase),
    runId: run.id,
    workspaceId: run.workspaceId,
    orgId: run.orgId,
    phase,
    priorityClass: priorityClass(phase, run.isSpeculative),
    spec: await buildSpec(deps, run, phase, { ...known, ...(workspace ? { workspace } : {}) }),
    timeoutMs: phaseTimeoutMs(deps.env, phase),
  };
  const result = await poolStub(deps.env, poolId).enqueue(job);
  if (!result.ok) {
    throw new Error(`enqueue of ${job.jobId} refused: ${result.reason}`);
  }
  return ok(result.value.wait);
}

function workspaceOf(deps: Deps, run: RunRow): Promise<WorkspaceRow | undefined> {
  return getWorkspaceById(deps.db, run.workspaceId);
}

/**
 * True when an online agent (one still heartbeating) holds one of the run's jobs, leased or
 * started: only then is there an engine that a graceful cancel could still stop cleanly.
 */
export async function heldByLiveAgent(deps: Deps, run: RunRow): Promise<boolean> {
  const poolId = run.plannedPoolId ?? (await workspaceOf(deps, run))?.poolId ?? null;
  if (!poolId) {
    return false;
  }
  const jobIds = (["plan", "apply"] as const).map((phase) => jobId(run.id, phase));
  return poolStub(deps.env, poolId).heldByLiveAgent(jobIds);
}

/**
 * Asks the pool to cancel the run's current job (removing it if queued). Returns the endings
 * this made, for the caller to apply (`applyEndings`), so D1 follows the pool.
 */
export async function cancelPoolJob(
  deps: Deps,
  run: RunRow,
  options: { force: boolean },
): Promise<JobEndedEvent[]> {
  const poolId = run.plannedPoolId ?? (await workspaceOf(deps, run))?.poolId ?? null;
  if (!poolId) {
    return [];
  }
  const pool = poolStub(deps.env, poolId);
  const endings: JobEndedEvent[] = [];
  for (const phase of ["apply", "plan"] as const) {
    const result = await pool.cancelJob(jobId(run.id, phase), options);
    if (result.ok && result.value.ending) {
      endings.push(result.value.ending);
    }
  }
  return endings;
}
