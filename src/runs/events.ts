/**
 * The scheduler's job events applied to runs: a lease gets its per-job token and variables, a
 * start makes that token usable and moves the run to planning/applying, and an ending revokes
 * the job's token, releases its state locks, records the plan's hash and moves the run on
 * (planned, applied, errored, canceled). Every handler is idempotent: events may arrive more
 * than once.
 */

import type { JobVariable } from "@outpost/protocol";
import type { JobEndedEvent, LeasedJob } from "../../durable/pool-types.ts";
import { newId } from "../db/ids.ts";
import { releaseJobStateLocks } from "../state/locks.ts";
import { generateToken, hashToken } from "../tokens/model.ts";
import { loadVariablesForJob } from "../variables/service.ts";
import { artifactKey, logKey, PLAN_FILE_ARTIFACT, type RunRef, SHA256_METADATA } from "./blobs.ts";
import type { Deps } from "./deps.ts";
import { cancelPoolJob } from "./jobs.ts";
import { erroredReason, type RunStatus, statusAfterPlan } from "./model.ts";
import { endRun, queueApply } from "./progress.ts";
import {
  getRunById,
  insertRunTokenQuery,
  latestSerialWrittenBy,
  moveRun,
  type RunRow,
  revokeRunTokensQuery,
  startRunTokenQuery,
} from "./queries.ts";
import { planningContextChanged } from "./service.ts";

/**
 * What a lease adds to the job for its agent: a fresh token bound to this lease (older tokens of
 * the same job die, since only this lease may act; this one grants nothing until the lease is
 * started) and the workspace variables, sensitive ones decrypted only into this answer (never
 * for a pull request from a fork). Opens the job's log for the lease.
 */
export async function prepareLease(
  deps: Deps,
  leased: LeasedJob,
): Promise<{ runToken: string; variables: JobVariable[] } | null> {
  const run = await getRunById(deps.db, leased.runId);
  if (!run || run.status.endsWith("canceled") || run.status === "errored") {
    return null;
  }
  const now = Date.now();
  const secret = generateToken("run");
  await deps.db.batch([
    revokeRunTokensQuery(deps.db, run.id, now, leased.jobId),
    insertRunTokenQuery(deps.db, {
      id: newId("runToken"),
      orgId: run.orgId,
      runId: run.id,
      workspaceId: run.workspaceId,
      jobId: leased.jobId,
      leaseId: leased.leaseId,
      tokenHash: await hashToken(secret),
      createdAt: now,
    }),
  ]);
  const variables = await loadVariablesForJob(deps.env, deps.db, run.workspaceId, {
    includeSensitive: !run.isFork,
  });
  await deps.env.RUN_LOG.getByName(leased.jobId).open(leased.jobId, leased.leaseId);
  return {
    runToken: secret,
    variables: variables.map((v) => ({
      key: v.key,
      value: v.value,
      category: v.category,
      isHcl: v.hcl,
      isSensitive: v.sensitive,
    })),
  };
}

/**
 * The agent acknowledged the lease: the run is planning or applying, and the lease's token
 * becomes usable. An apply whose workspace changed execution mode or pool since the plan errors
 * instead, and its job is canceled (its token never becomes usable).
 */
export async function handleJobStarted(
  deps: Deps,
  job: { runId: string; jobId: string; leaseId: string; phase: "plan" | "apply" },
) {
  const now = Date.now();
  const run = await getRunById(deps.db, job.runId);
  if (!run) {
    return;
  }
  const workspace = await deps.db.query.workspaces.findFirst({
    where: (w, { eq }) => eq(w.id, run.workspaceId),
  });
  if (job.phase === "plan") {
    await moveRun(deps.db, run.id, ["plan_queued"], "planning", now, {
      plannedExecutionMode: workspace?.executionMode ?? null,
      plannedPoolId: workspace?.poolId ?? null,
    });
    await startRunTokenQuery(deps.db, job.jobId, job.leaseId, now);
    return;
  }
  const changed = workspace ? planningContextChanged(run, workspace) : "the workspace was deleted";
  if (changed) {
    const errored = await moveRun(deps.db, run.id, ["apply_queued"], "errored", now, {
      statusReason: changed,
    });
    if (errored) {
      await cancelPoolJob(deps, errored, { force: true });
      await endRun(deps, errored);
    }
    return;
  }
  await moveRun(deps.db, run.id, ["apply_queued"], "applying", now);
  await startRunTokenQuery(deps.db, job.jobId, job.leaseId, now);
}

/**
 * A job ended: its token dies and its state locks are released at once, whatever the run does
 * next; then the run follows. Repeated events find the run already moved and do nothing.
 */
export async function handleJobEnded(deps: Deps, event: JobEndedEvent): Promise<void> {
  await revokeRunTokensQuery(deps.db, event.runId, Date.now(), event.jobId);
  await releaseJobStateLocks(deps.db, event.jobId);
  await deps.env.RUN_LOG.getByName(event.jobId).finish(event.jobId, logKey(event, event.phase));
  const run = await getRunById(deps.db, event.runId);
  if (!run) {
    return;
  }
  const moved = await applyEnding(deps, run, event);
  if (moved?.status === "planned" && moved.isAutoApply) {
    const confirmed = await moveRun(deps.db, run.id, ["planned"], "confirmed", Date.now());
    if (confirmed) {
      await queueApply(deps, confirmed);
    }
    return;
  }
  if (moved && moved.status !== "planned") {
    await endRun(deps, moved);
  }
}

/** Moves the run as the job's ending says; undefined when it had already moved on. */
async function applyEnding(
  deps: Deps,
  run: RunRow,
  event: JobEndedEvent,
): Promise<RunRow | undefined> {
  const now = Date.now();
  const running: RunStatus[] =
    event.phase === "plan" ? ["plan_queued", "planning"] : ["apply_queued", "applying"];
  if (event.outcome === "succeeded") {
    // A job can only succeed after it started; if the start event was lost, catch up first.
    const [queued, started] = running as [RunStatus, RunStatus];
    if (run.status === queued) {
      await moveRun(deps.db, run.id, [queued], started, now);
    }
    return succeed(deps, run, event, started, now);
  }
  if (event.outcome === "canceled") {
    return moveRun(deps.db, run.id, running, event.forced ? "force_canceled" : "canceled", now, {
      statusReason: event.reason ?? `${event.phase} canceled`,
    });
  }
  const agentLost = event.agentLost === true;
  // What an engine saved after its agent died is the truth of what the apply did: say so.
  const saved = agentLost ? await latestSerialWrittenBy(deps.db, run.id) : null;
  return moveRun(deps.db, run.id, running, "errored", now, {
    statusReason: erroredReason({ ...event, agentLost }, saved),
  });
}

async function succeed(
  deps: Deps,
  run: RunRow,
  event: JobEndedEvent,
  started: RunStatus,
  now: number,
): Promise<RunRow | undefined> {
  if (event.phase === "apply") {
    return moveRun(deps.db, run.id, [started], "applied", now);
  }
  const summary = event.planSummary ?? {
    adds: 0,
    changes: 0,
    destroys: 0,
    imports: 0,
    hasChanges: false,
  };
  const next = statusAfterPlan(run, { hasChanges: summary.hasChanges });
  const planSha256 = await storedPlanSha256(deps, event);
  return moveRun(deps.db, run.id, [started], next, now, { planSummary: summary, planSha256 });
}

/** The SHA-256 of the plan file the plan job stored (write-once), or null when it stored none. */
async function storedPlanSha256(deps: Deps, run: RunRef): Promise<string | null> {
  const object = await deps.env.BLOBS.head(artifactKey(run, PLAN_FILE_ARTIFACT));
  return object?.customMetadata?.[SHA256_METADATA] ?? null;
}
