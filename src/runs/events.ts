/**
 * The scheduler's job events applied to runs, the one place they touch D1: a lease gets its
 * per-job token and variables, a start makes that token usable and moves the run to
 * planning/applying, and an ending revokes the job's token, releases its state locks, records the
 * plan's hash and moves the run on (planned, applied, errored, canceled). Whoever learnt of the event calls these: the agent
 * routes (lease, start, finish), the run service (cancel), the `JOB_EVENTS` queue consumer
 * (endings the pool created on its own) and the reconciler. Every handler is idempotent: events
 * may arrive more than once.
 */

import { newId } from "@outpost/common";
import type { JobVariable, WithheldVariable, WorkloadIdentity } from "@outpost/protocol";
import type { JobEndedEvent, LeasedJob, StartingAgent } from "../../durable/pool-types.ts";
import type { Deps } from "../deps.ts";
import { workloadIdentityFor, workloadSubjectQuery } from "../oidc/workload.ts";
import { poolScopeRefusal } from "../pools/model.ts";
import { poolScopeQuery } from "../pools/queries.ts";
import { releaseJobStateLocks } from "../state/locks.ts";
import { latestSerialWrittenBy } from "../state/queries.ts";
import { generateToken, hashToken } from "../tokens/model.ts";
import { loadVariablesForJob, variableInputQueries } from "../variables/effective.ts";
import { getWorkspaceById, workspacePlacementQuery } from "../workspaces/queries.ts";
import {
  artifactKey,
  logKey,
  PLAN_FILE_ARTIFACT,
  type RunRef,
  runLog,
  SHA256_METADATA,
} from "./blobs.ts";
import { endRunJobQuery, insertRunJobQuery } from "./job-records.ts";
import { cancelPoolJob } from "./jobs.ts";
import { closingLogLine } from "./log-closing.ts";
import {
  type EmptyApplyGuard,
  isTerminal,
  moveForEnding,
  planningContextChanged,
} from "./model.ts";
import { afterRunEnded, endRun, endRunQueries, queueApply } from "./progress.ts";
import {
  getRunById,
  jobEndedAuditQuery,
  jobHoldsStateLockQuery,
  moveRun,
  moveRunQuery,
  type RunRow,
  runByIdQuery,
  startPlanningQuery,
} from "./queries.ts";
import { openRunVariables, withRunVariables } from "./run-variables.ts";
import { insertRunTokenQuery, revokeRunTokensQuery, startRunTokenQuery } from "./token-queries.ts";

/** What a lease adds to the job for its agent. */
export type LeaseExtras = {
  runToken: string;
  variables: JobVariable[];
  withheldVariables?: WithheldVariable[];
  workloadIdentity?: WorkloadIdentity;
};

/**
 * A lease as the Worker prepares it: `ready` with what the agent receives, `ended` when the run
 * ended meanwhile (nothing is minted), `refused` when the pool does not allow the run's
 * workspace any more (nothing is minted; the caller errors the run with `reason`).
 */
export type PreparedLease =
  | { kind: "ready"; extras: LeaseExtras }
  | { kind: "ended" }
  | { kind: "refused"; run: RunRow; reason: string };

/**
 * What a lease adds to the job for its agent: a fresh token bound to this lease (older tokens of
 * the same job die, since only this lease may act; this one grants nothing until the lease is
 * started) and the variables a run of the workspace gets (its own merged with the variable sets
 * that reach it, `variables/effective.ts`), sensitive ones decrypted only into this answer (never
 * for a pull request from a fork, whose job hears only the names of those it lacks, so its
 * engine can say what it cannot do without them), and the job's workload identity token when
 * its workspace has one enabled (never for a fork). Opens the job's log for the lease. First,
 * the pool's scope is checked against the workspace (`poolScopeRefusal`, read in the same round
 * trip): a pool that no longer allows it gets nothing, whatever was queued before the change.
 */
export async function prepareLease(
  deps: Deps,
  leased: LeasedJob,
  poolId: string,
): Promise<PreparedLease> {
  const now = deps.now();
  const secret = generateToken("run");
  // One round trip: the run, the pool's scope and the workspace's place, its variables and
  // workload identity subject, and the lease's token (older tokens of the job die); the job's
  // log opens at the same time.
  const read = deps.db.batch([
    runByIdQuery(deps.db, leased.runId),
    poolScopeQuery(deps.db, poolId),
    workspacePlacementQuery(deps.db, leased.workspaceId),
    ...variableInputQueries(deps.db, { id: leased.workspaceId, orgId: leased.orgId }),
    workloadSubjectQuery(deps.db, leased.workspaceId),
    revokeRunTokensQuery(deps.db, leased.runId, now, leased.jobId),
    insertRunTokenQuery(deps.db, {
      id: newId("runToken"),
      orgId: leased.orgId,
      runId: leased.runId,
      workspaceId: leased.workspaceId,
      jobId: leased.jobId,
      leaseId: leased.leaseId,
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
  const [[run], [pool], [placement], own, sets, [subject]] = batch ?? [[], [], [], [], [], []];
  const refusal = pool && placement ? poolScopeRefusal(pool, placement) : null;
  if (!run || run.status.endsWith("canceled") || run.status === "errored" || refusal !== null) {
    // The run ended meanwhile, or may not run here: the token just minted must not outlive it.
    await revokeRunTokensQuery(deps.db, leased.runId, now);
    return run && refusal !== null ? { kind: "refused", run, reason: refusal } : { kind: "ended" };
  }
  const { variables, withheld } = await loadVariablesForJob(
    deps.env,
    deps.db,
    { id: run.workspaceId, orgId: run.orgId },
    { includeSensitive: !run.isFork, inputs: { own, sets } },
  );
  const runOwn = await openRunVariables(deps.env, run);
  const workloadIdentity = await workloadIdentityFor(deps, subject, run, leased);
  return {
    kind: "ready",
    extras: {
      ...(workloadIdentity ? { workloadIdentity } : {}),
      ...(withheld.length > 0 ? { withheldVariables: withheld } : {}),
      runToken: secret,
      variables: withRunVariables(
        variables.map((v) => ({
          key: v.key,
          value: v.value,
          category: v.category,
          isHcl: v.hcl,
          isSensitive: v.sensitive,
        })),
        runOwn,
      ),
    },
  };
}

/**
 * The agent acknowledged the lease: the run is planning or applying, and the lease's token
 * becomes usable. An apply whose workspace changed execution mode or pool since the plan errors
 * instead, and its job is canceled (its token never becomes usable).
 */
export async function handleJobStarted(
  deps: Deps,
  job: {
    runId: string;
    orgId: string;
    jobId: string;
    leaseId: string;
    phase: "plan" | "apply";
    poolId: string;
    agent: StartingAgent;
  },
): Promise<void> {
  const now = deps.now();
  const record = insertRunJobQuery(deps.db, job, job.agent, now);
  if (job.phase === "plan") {
    // One round trip: the run records the execution mode and pool it is planned under, and the
    // job the agent that runs it.
    await deps.db.batch([
      startPlanningQuery(deps.db, job.runId, now),
      startRunTokenQuery(deps.db, job.jobId, job.leaseId, now),
      record,
    ]);
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
  await deps.db.batch([
    moveRunQuery(deps.db, run.id, ["apply_queued"], "applying", now),
    startRunTokenQuery(deps.db, job.jobId, job.leaseId, now),
    record,
  ]);
}

/** Applies endings the pool answered to a call, in order. */
export async function applyEndings(deps: Deps, endings: readonly JobEndedEvent[]): Promise<void> {
  for (const ending of endings) {
    await handleJobEnded(deps, ending);
  }
}

/**
 * What a finished plan of an apply run needs to be checked against emptying the state: the
 * workspace's engine and the run's `allowEmptyApply`. Null for every other ending.
 */
async function emptyApplyGuard(deps: Deps, event: JobEndedEvent): Promise<EmptyApplyGuard | null> {
  if (event.phase !== "plan" || event.outcome !== "succeeded" || event.operation !== "apply") {
    return null;
  }
  const [run, workspace] = await Promise.all([
    getRunById(deps.db, event.runId),
    getWorkspaceById(deps.db, event.workspaceId),
  ]);
  return run && workspace
    ? { engine: workspace.engine, allowEmptyApply: run.allowEmptyApply }
    : null;
}

/**
 * A job ended: its token dies and its state locks are released at once, whatever the run does
 * next; then the run follows and the ending is audited (`job.finished`, `job.errored` or
 * `job.canceled`, by its agent or by "system"). The move, the end-of-run effects and the audit
 * row land in one batch. Repeated events find the run already moved and change nothing; the
 * audit row has an id derived from the ending, so it is written once.
 */
export async function handleJobEnded(deps: Deps, event: JobEndedEvent): Promise<void> {
  const { db } = deps;
  const [[, jobLocks], { query: audit }, planSha256] = await Promise.all([
    db.batch([
      revokeRunTokensQuery(db, event.runId, deps.now(), event.jobId),
      jobHoldsStateLockQuery(db, event.jobId),
      endRunJobQuery(db, event.jobId, event.endedAt),
    ]),
    jobEndedAuditQuery(db, event),
    event.phase === "plan" && event.outcome === "succeeded" ? storedPlanSha256(deps, event) : null,
  ]);
  if (jobLocks.length > 0) {
    await releaseJobStateLocks(deps, event.jobId);
  }
  // The log is stored before the run moves: a run that reads ended has its whole log.
  await runLog(deps.env, event.workspaceId).finish(
    event.jobId,
    logKey(event, event.phase),
    closingLogLine(event),
  );
  // What the run's engine saved is the truth of what it did, however the run ended: say so.
  const saved = event.outcome === "succeeded" ? null : await latestSerialWrittenBy(db, event.runId);
  const move = moveForEnding(event, event, saved, await emptyApplyGuard(deps, event));
  const now = deps.now();
  const extra = {
    ...(move.statusReason ? { statusReason: move.statusReason } : {}),
    ...(move.planSummary ? { planSummary: move.planSummary, planSha256 } : {}),
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
    const confirmed = await moveRun(db, moved.id, ["planned"], "confirmed", deps.now());
    if (confirmed) {
      await queueApply(deps, confirmed);
    }
  }
}

/** The SHA-256 of the plan file the plan job stored (write-once), or null when it stored none. */
async function storedPlanSha256(deps: Deps, run: RunRef): Promise<string | null> {
  const object = await deps.env.BLOBS.head(artifactKey(run, PLAN_FILE_ARTIFACT));
  return object?.customMetadata?.[SHA256_METADATA] ?? null;
}
