/**
 * D1 access for runs (the per-run tokens are in `token-queries.ts`). Status changes are
 * compare-and-set on the status.
 */

import { base32 } from "@outpost/common";
import {
  and,
  asc,
  count,
  desc,
  eq,
  exists,
  inArray,
  isNotNull,
  isNull,
  lt,
  ne,
  or,
  type SQL,
  sql,
} from "drizzle-orm";
import type { JobEndedEvent } from "../../durable/pool-types.ts";
import { actorColumns } from "../audit/service.ts";
import { type Actor, agentActor, SYSTEM_ACTOR } from "../authz/actor.ts";
import { type Database, prepared } from "../db/client.ts";
import { agentPools, auditEvents, runJobs, runs, stateLocks, workspaces } from "../db/schema.ts";
import {
  ACTIVE_STATUSES,
  canTransition,
  type RunStatus,
  TERMINAL_STATUSES,
  WAITING_STATUSES,
} from "./model.ts";

export type RunRow = typeof runs.$inferSelect;

export function insertRunQuery(db: Database, row: typeof runs.$inferInsert) {
  return db.insert(runs).values(row);
}

export function getRun(db: Database, orgId: string, id: string): Promise<RunRow | undefined> {
  return prepared(db, "run.inOrg", (d) =>
    d
      .select()
      .from(runs)
      .where(and(eq(runs.orgId, sql.placeholder("orgId")), eq(runs.id, sql.placeholder("id"))))
      .prepare(),
  ).get({ orgId, id });
}

/** A run by id alone: for the scheduler's callbacks, which carry no principal. */
export function getRunById(db: Database, id: string): Promise<RunRow | undefined> {
  return prepared(db, "run.byId", (d) =>
    d
      .select()
      .from(runs)
      .where(eq(runs.id, sql.placeholder("id")))
      .prepare(),
  ).get({ id });
}

/** {@link getRunById} as a query to put in a batch: zero or one row. */
export function runByIdQuery(db: Database, id: string) {
  return db.select().from(runs).where(eq(runs.id, id)).limit(1);
}

/** A page of runs, newest first, after the keyset `after` ([createdAt, id]) when given. */
export function listRunsPage(
  db: Database,
  filter: {
    orgId: string;
    workspaceId?: string;
    /** Runs of the project's workspaces (those in it now). */
    projectId?: string;
    commitSha?: string;
    status?: RunStatus;
    source?: RunRow["source"];
    /** The pool a run planned in, or (not yet planned) its workspace's pool. */
    poolId?: string;
    /** An agent that ran one of the run's phases. */
    agentId?: string;
    /** Keeps the runs of workspaces the caller may see (`authz/queries.ts`). */
    visible?: SQL | undefined;
  },
  page: { limit: number; after?: readonly [number, string] },
) {
  const poolOf = sql`coalesce(${runs.plannedPoolId}, (SELECT ${workspaces.poolId} FROM ${workspaces} WHERE ${workspaces.id} = ${runs.workspaceId}))`;
  return db
    .select()
    .from(runs)
    .where(
      and(
        eq(runs.orgId, filter.orgId),
        filter.workspaceId ? eq(runs.workspaceId, filter.workspaceId) : undefined,
        filter.projectId
          ? inArray(
              runs.workspaceId,
              db
                .select({ id: workspaces.id })
                .from(workspaces)
                .where(eq(workspaces.projectId, filter.projectId)),
            )
          : undefined,
        filter.commitSha ? eq(runs.commitSha, filter.commitSha) : undefined,
        filter.status ? eq(runs.status, filter.status) : undefined,
        filter.source ? eq(runs.source, filter.source) : undefined,
        filter.poolId ? sql`${poolOf} = ${filter.poolId}` : undefined,
        filter.agentId
          ? exists(
              db
                .select({ one: sql`1` })
                .from(runJobs)
                .where(and(eq(runJobs.runId, runs.id), eq(runJobs.agentId, filter.agentId))),
            )
          : undefined,
        filter.visible,
        page.after
          ? or(
              lt(runs.createdAt, page.after[0]),
              and(eq(runs.createdAt, page.after[0]), lt(runs.id, page.after[1])),
            )
          : undefined,
      ),
    )
    .orderBy(desc(runs.createdAt), desc(runs.id))
    .limit(page.limit + 1);
}

/** Runs of an org waiting in a queue: what admission control counts. */
export async function countQueuedRuns(db: Database, orgId: string): Promise<number> {
  const [row] = await countQueuedRunsQuery(db, orgId);
  return row?.n ?? 0;
}

/** {@link countQueuedRuns} as a query to put in a batch: one row `{ n }`. */
export function countQueuedRunsQuery(db: Database, orgId: string) {
  return db
    .select({ n: count() })
    .from(runs)
    .where(and(eq(runs.orgId, orgId), inArray(runs.status, [...WAITING_STATUSES])));
}

/** Whether the job holds any state lock: zero or one row. */
export function jobHoldsStateLockQuery(db: Database, jobId: string) {
  return db
    .select({ lockId: stateLocks.lockId })
    .from(stateLocks)
    .where(eq(stateLocks.jobId, jobId))
    .limit(1);
}

/** Whether the run holds any state lock: zero or one row. */
export function runHoldsStateLockQuery(db: Database, runId: string) {
  return db
    .select({ lockId: stateLocks.lockId })
    .from(stateLocks)
    .where(eq(stateLocks.runId, runId))
    .limit(1);
}

/** A pool's name, for the words of why a run waits: zero or one row `{ name }`. */
export function poolNameQuery(db: Database, poolId: string) {
  return db
    .select({ name: agentPools.name })
    .from(agentPools)
    .where(eq(agentPools.id, poolId))
    .limit(1);
}

/** The oldest non-speculative pending run of a workspace: the next to become current. */
export function nextPendingRun(db: Database, workspaceId: string) {
  return db.query.runs.findFirst({
    where: and(
      eq(runs.workspaceId, workspaceId),
      eq(runs.status, "pending"),
      eq(runs.isSpeculative, false),
    ),
    orderBy: [asc(runs.createdAt), asc(runs.id)],
  });
}

/**
 * Moves a run from one of `from` to `to` only if it is still in one of them (compare-and-set),
 * stamping the time it entered `to`. Returns the updated row, or undefined when someone else
 * moved it first. A transition outside the state machine is a bug and throws.
 */
export async function moveRun(
  db: Database,
  id: string,
  from: readonly RunStatus[],
  to: RunStatus,
  now: number,
  extra: Partial<
    Pick<
      RunRow,
      | "statusReason"
      | "planSummary"
      | "cancelRequestedAt"
      | "planSha256"
      | "confirmedBy"
      | "discardedBy"
      | "canceledBy"
    >
  > & {
    plannedExecutionMode?: RunRow["plannedExecutionMode"] | SQL;
    plannedPoolId?: RunRow["plannedPoolId"] | SQL;
  } = {},
): Promise<RunRow | undefined> {
  const [row] = await moveRunQuery(db, id, from, to, now, extra);
  return row;
}

/** {@link moveRun} as a query to put in a batch: the moved row, or none. */
export function moveRunQuery(
  db: Database,
  id: string,
  from: readonly RunStatus[],
  to: RunStatus,
  now: number,
  extra: Parameters<typeof moveRun>[5] = {},
) {
  for (const status of from) {
    if (!canTransition(status, to)) {
      throw new Error(`moveRun: ${status} → ${to} is not a run transition`);
    }
  }
  return db
    .update(runs)
    .set({
      ...extra,
      status: to,
      updatedAt: now,
      statusTimestamps: sql`json_set(coalesce(${runs.statusTimestamps}, '{}'), ${`$.${to}`}, ${now})`,
    })
    .where(and(eq(runs.id, id), inArray(runs.status, [...from])))
    .returning();
}

/** True (in SQL) while the run is in a terminal status: what every end-of-run effect waits for. */
/** SQL: the run has ended (a terminal status). */
export function runHasEnded(db: Database, runId: string) {
  return exists(
    db
      .select({ one: sql`1` })
      .from(runs)
      .where(and(eq(runs.id, runId), inArray(runs.status, [...TERMINAL_STATUSES]))),
  );
}

/**
 * Forgets an ended run's own variables (`run-variables.ts`): sealed as they are, they are kept
 * no longer than a job of the run may need them.
 */
export function forgetRunVariablesQuery(db: Database, runId: string) {
  return db
    .update(runs)
    .set({ runVariables: null })
    .where(and(eq(runs.id, runId), isNotNull(runs.runVariables), runHasEnded(db, runId)));
}

/**
 * plan_queued → planning in one statement, recording the execution mode and pool the run is
 * planned under (an apply later checks them against the workspace).
 */
export function startPlanningQuery(db: Database, runId: string, now: number) {
  return moveRunQuery(db, runId, ["plan_queued"], "planning", now, {
    plannedExecutionMode: sql`(SELECT ${workspaces.executionMode} FROM ${workspaces} WHERE ${workspaces.id} = ${runs.workspaceId})`,
    plannedPoolId: sql`(SELECT ${workspaces.poolId} FROM ${workspaces} WHERE ${workspaces.id} = ${runs.workspaceId})`,
  });
}

/**
 * The audit row of a job's ending, with an id derived from the ending: recording the same
 * ending twice (a redelivered event, a repeated finish) is one row.
 */
export async function jobEndedAuditQuery(db: Database, event: JobEndedEvent) {
  const key = `${event.jobId}:${event.action}:${event.endedAt}`;
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(key));
  // Wrapped: a drizzle query is thenable, and awaiting this function must not run it.
  const query = db
    .insert(auditEvents)
    .values({
      id: `evt_${base32(new Uint8Array(digest).slice(0, 16))}`,
      orgId: event.orgId,
      ...actorColumns(event.actor === "system" ? SYSTEM_ACTOR : agentActor(event.actor)),
      action: event.action,
      targetType: "job",
      targetId: event.jobId,
      data: {
        runId: event.runId,
        workspaceId: event.workspaceId,
        phase: event.phase,
        outcome: event.outcome,
        agentId: event.agentId,
        reason: event.reason,
        exitCode: event.exitCode,
        planSummary: event.planSummary,
        forced: event.forced,
      },
      createdAt: event.endedAt,
    })
    .onConflictDoNothing({ target: auditEvents.id });
  return { query };
}

export function setCancelRequested(db: Database, id: string, now: number, by: Actor) {
  return db
    .update(runs)
    .set({ cancelRequestedAt: now, canceledBy: by, updatedAt: now })
    .where(and(eq(runs.id, id), isNull(runs.cancelRequestedAt)))
    .returning({ id: runs.id });
}

/**
 * Makes `runId` the workspace's current run and its lock holder, if the workspace has neither.
 * True when this call took it.
 */
export async function claimWorkspace(
  db: Database,
  workspaceId: string,
  runId: string,
  now: number,
) {
  const rows = await db
    .update(workspaces)
    .set({ currentRunId: runId, lockedBy: runId, lockReason: null, lockedAt: now, updatedAt: now })
    .where(
      and(
        eq(workspaces.id, workspaceId),
        isNull(workspaces.currentRunId),
        isNull(workspaces.lockedBy),
      ),
    )
    .returning({ id: workspaces.id });
  return rows.length === 1;
}

/** Frees the workspace if `runId` holds it and has ended; idempotent. */
export function releaseWorkspaceQuery(
  db: Database,
  workspaceId: string,
  runId: string,
  now: number,
) {
  return db
    .update(workspaces)
    .set({
      currentRunId: null,
      lockedBy: sql`CASE WHEN ${workspaces.lockedBy} = ${runId} THEN NULL ELSE ${workspaces.lockedBy} END`,
      lockedAt: sql`CASE WHEN ${workspaces.lockedBy} = ${runId} THEN NULL ELSE ${workspaces.lockedAt} END`,
      updatedAt: now,
    })
    .where(
      and(
        eq(workspaces.id, workspaceId),
        eq(workspaces.currentRunId, runId),
        runHasEnded(db, runId),
      ),
    );
}

/** Sources of the runs a webhook queued. */
const VCS_SOURCES = ["github", "gitlab"] as const;

/**
 * The run that makes a VCS event a repeat on the workspace, or undefined. A push: any run a
 * webhook queued for the commit, whatever its status (a commit is never applied twice through
 * VCS). A pull request: an active speculative plan the hook queued for the commit.
 */
export async function vcsRunForCommit(
  db: Database,
  target: { workspaceId: string; commitSha: string; isPush: boolean; hookId: string },
): Promise<string | undefined> {
  const { isPush } = target;
  const [found] = await db
    .select({ id: runs.id })
    .from(runs)
    .where(
      and(
        eq(runs.workspaceId, target.workspaceId),
        eq(runs.commitSha, target.commitSha),
        eq(runs.isSpeculative, !isPush),
        isPush
          ? inArray(runs.source, [...VCS_SOURCES])
          : and(
              // Runs name their actor as JSON; a webhook's is the hook.
              sql`json_extract(${runs.createdBy}, '$.id') = ${target.hookId}`,
              inArray(runs.status, [...ACTIVE_STATUSES]),
            ),
      ),
    )
    .limit(1);
  return found?.id;
}

/**
 * The active speculative plans of pull request `number` on the workspace, queued by `source`;
 * with `otherThan`, only those at another commit (a newer commit supersedes them).
 */
export function activePullRequestPlans(
  db: Database,
  target: {
    workspaceId: string;
    source: RunRow["source"];
    number: number;
    otherThan: string | null;
  },
): Promise<RunRow[]> {
  return db
    .select()
    .from(runs)
    .where(
      and(
        eq(runs.workspaceId, target.workspaceId),
        eq(runs.source, target.source),
        eq(runs.pullRequestNumber, target.number),
        eq(runs.isSpeculative, true),
        inArray(runs.status, [...ACTIVE_STATUSES]),
        target.otherThan === null ? undefined : ne(runs.commitSha, target.otherThan),
      ),
    );
}
