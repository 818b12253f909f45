/**
 * A run's jobs in its pool's queue: what is enqueued (the spec the agent gets back), and the
 * cancel path. The pool object is told after D1 changed; the reconciler repeats anything lost.
 */

import type { JobSpec } from "@outpost/protocol";
import type { QueuedJob } from "../../durable/pool-types.ts";
import { poolStub } from "../pools/service.ts";
import type { Deps } from "./deps.ts";
import { jobId, priorityClass } from "./model.ts";
import type { RunRow } from "./queries.ts";

/**
 * The non-secret description of a job, fixed when it is queued. Variables and the per-run token
 * are added only at lease time (`events.ts`).
 */
export async function buildSpec(
  deps: Deps,
  run: RunRow,
  phase: "plan" | "apply",
): Promise<JobSpec> {
  const workspace = await deps.db.query.workspaces.findFirst({
    where: (w, { eq }) => eq(w.id, run.workspaceId),
  });
  const configuration = run.configurationVersionId
    ? await deps.db.query.configurationVersions.findFirst({
        where: (cv, { eq }) => eq(cv.id, run.configurationVersionId ?? ""),
      })
    : undefined;
  return {
    operation: run.operation,
    phase,
    isSpeculative: run.isSpeculative,
    isDestroy: run.operation === "destroy",
    workspaceName: workspace?.name ?? "",
    engine: workspace?.engine ?? "terraform",
    engineVersion: workspace?.engineVersion ?? "",
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
    planSha256: phase === "apply" ? run.planSha256 : null,
  };
}

/** Puts the run's job for `phase` in its pool's queue; idempotent by job id. */
export async function enqueueJob(deps: Deps, run: RunRow, phase: "plan" | "apply"): Promise<void> {
  const poolId = run.plannedPoolId ?? (await currentPoolId(deps, run));
  if (!poolId) {
    return;
  }
  const job: QueuedJob = {
    jobId: jobId(run.id, phase),
    runId: run.id,
    workspaceId: run.workspaceId,
    orgId: run.orgId,
    phase,
    priorityClass: priorityClass(phase, run.isSpeculative),
    spec: await buildSpec(deps, run, phase),
  };
  const result = await poolStub(deps.env, poolId).enqueue(job);
  if (!result.ok) {
    throw new Error(`enqueue of ${job.jobId} refused: ${result.reason}`);
  }
}

async function currentPoolId(deps: Deps, run: RunRow): Promise<string | null> {
  const workspace = await deps.db.query.workspaces.findFirst({
    where: (w, { eq }) => eq(w.id, run.workspaceId),
  });
  return workspace?.poolId ?? null;
}

/** Asks the pool to cancel the run's current job (removing it if queued). */
export async function cancelPoolJob(
  deps: Deps,
  run: RunRow,
  options: { force: boolean },
): Promise<void> {
  const poolId = run.plannedPoolId ?? (await currentPoolId(deps, run));
  if (!poolId) {
    return;
  }
  const pool = poolStub(deps.env, poolId);
  for (const phase of ["apply", "plan"] as const) {
    await pool.cancelJob(jobId(run.id, phase), options);
  }
}
