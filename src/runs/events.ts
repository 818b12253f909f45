/**
 * The scheduler's job events applied to runs, the one place they touch D1: a lease gets its
 * per-run token and variables, a start moves the run to planning/applying, and an ending moves
 * it on (planned, applied, errored, canceled). Whoever learnt of the event calls these: the agent
 * routes (lease, start, finish), the run service (cancel), the `JOB_EVENTS` queue consumer
 * (endings the pool created on its own) and the reconciler. Every handler is idempotent: events
 * may arrive more than once.
 */

import type { JobVariable } from "@outpost/protocol";
import type { JobEndedEvent, LeasedJob } from "../../durable/pool-types.ts";
import { newId } from "../db/ids.ts";
import { generateToken, hashToken } from "../tokens/model.ts";
import { listVariableRows } from "../variables/queries.ts";
import { loadVariablesForJob } from "../variables/service.ts";
import { getWorkspaceById } from "../workspaces/queries.ts";
import { logKey, runLog } from "./blobs.ts";
import type { Deps } from "./deps.ts";
import { cancelPoolJob } from "./jobs.ts";
import { isTerminal, moveForEnding, planningContextChanged } from "./model.ts";
import { afterRunEnded, endRun, endRunQueries, queueApply } from "./progress.ts";
import {
  getRunById,
  insertRunTokenQuery,
  jobEndedAuditQuery,
  moveRun,
  moveRunQuery,
  revokeRunTokensQuery,
  runByIdQuery,
  startPlanningQuery,
} from "./queries.ts";

/**
 * What a lease adds to the job for its agent: a fresh per-run token (older tokens of the same
 * job die, since only this lease may act) and the workspace variables, sensitive ones decrypted
 * only into this answer (never for a pull request from a fork). Opens the job's log for the lease.
 */
export async function prepareLease(
  deps: Deps,
  leased: LeasedJob,
): Promise<{ runToken: string; variables: JobVariable[] } | null> {
  const now = Date.now();
  const secret = generateToken("run");
  // One round trip: the run, its workspace's variables, and the lease's token (older tokens of
  // the job die); the job's log opens at the same time.
  const read = deps.db.batch([
    runByIdQuery(deps.db, leased.runId),
    listVariableRows(deps.db, leased.workspaceId),
    revokeRunTokensQuery(deps.db, leased.runId, now, leased.jobId),
    insertRunTokenQuery(deps.db, {
      id: newId("runToken"),
      orgId: leased.orgId,
      runId: leased.runId,
      workspaceId: leased.workspaceId,
      jobId: leased.jobId,
      tokenHash: await hashToken(secret),
      createdAt: now,
    }),
  ]);
  const [batch] = await Promise.all([
    read.catch((err: unknown) => {
      // The run is gone (its workspace was deleted): the token cannot reference it.
      const text = err instanceof Error ? `${err.message} ${err.cause}` : String(err);
      if (/FOREIGN KEY constraint failed/i.test(text)) {
        return null;
      }
      throw err;
    }),
    runLog(deps.env, leased.workspaceId).open(leased.jobId, leased.leaseId),
  ]);
  const [[run], rows] = batch ?? [[], []];
  if (!run || run.status.endsWith("canceled") || run.status === "errored") {
    // The run ended meanwhile: the token just minted must not outlive it.
    await revokeRunTokensQuery(deps.db, leased.runId, now);
    return null;
  }
  const variables = await loadVariablesForJob(deps.env, deps.db, run.workspaceId, {
    includeSensitive: !run.isFork,
    rows,
  });
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
 * The agent acknowledged the job: the run is planning or applying. An apply whose workspace
 * changed execution mode or pool since the plan errors instead, and its job is canceled.
 */
export async function handleJobStarted(
  deps: Deps,
  job: { runId: string; phase: "plan" | "apply" },
): Promise<void> {
  const now = Date.now();
  if (job.phase === "plan") {
    // One statement: the run records the execution mode and pool it is planned under.
    await startPlanningQuery(deps.db, job.runId, now);
    return;
  }
  const run = await getRunById(deps.db, job.runId);
  if (!run) {
    return;
  }
  const workspace = await getWorkspaceById(deps.db, run.workspaceId);
  const changed = workspace ? planningContextChanged(run, workspace) : "the workspace was deleted";
  if (changed) {
    const errored = await moveRun(deps.db, run.id, ["apply_queued"], "errored", now, {
      statusReason: changed,
    });
    if (errored) {
      await applyEndings(deps, await cancelPoolJob(deps, errored, { force: true }));
      await endRun(deps, errored);
    }
    return;
  }
  await moveRun(deps.db, run.id, ["apply_queued"], "applying", now);
}

/** Applies endings the pool answered to a call, in order. */
export async function applyEndings(deps: Deps, endings: readonly JobEndedEvent[]): Promise<void> {
  for (const ending of endings) {
    await handleJobEnded(deps, ending);
  }
}

/**
 * A job ended; the run follows, and the ending is audited (`job.finished`, `job.errored` or
 * `job.canceled`, by its agent or by "system"). The move, the end-of-run effects and the audit
 * row land in one batch. Repeated events find the run already moved and change nothing; the
 * audit row has an id derived from the ending, so it is written once.
 */
export async function handleJobEnded(deps: Deps, event: JobEndedEvent): Promise<void> {
  const { db } = deps;
  // The log is stored first; the run moves only once the log is final.
  const [, { query: audit }] = await Promise.all([
    runLog(deps.env, event.workspaceId).finish(event.jobId, logKey(event, event.phase)),
    jobEndedAuditQuery(db, event),
  ]);
  const move = moveForEnding(event, event);
  const now = Date.now();
  const extra = {
    ...(move.statusReason ? { statusReason: move.statusReason } : {}),
    ...(move.planSummary ? { planSummary: move.planSummary } : {}),
  };
  // Compare-and-set all the way: a run already moved (a repeated ending) matches nothing. A
  // success whose start was never recorded first catches up (queued → running).
  const first = move.catchUp
    ? moveRunQuery(db, event.runId, [move.catchUp.from], move.catchUp.to, now)
    : runByIdQuery(db, event.runId);
  const moveQuery = moveRunQuery(db, event.runId, move.from, move.to, now, extra);
  if (isTerminal(move.to)) {
    const ended = { id: event.runId, workspaceId: event.workspaceId };
    const [, [moved], , , locks] = await db.batch([
      first,
      moveQuery,
      ...endRunQueries(db, ended, now),
      audit,
    ]);
    if (moved) {
      await afterRunEnded(deps, moved, locks.length > 0);
    }
    return;
  }
  const [, [moved]] = await db.batch([first, moveQuery, audit]);
  if (moved?.status === "planned" && moved.isAutoApply) {
    const confirmed = await moveRun(db, moved.id, ["planned"], "confirmed", Date.now());
    if (confirmed) {
      await queueApply(deps, confirmed);
    }
  }
}
