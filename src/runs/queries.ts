/** D1 access for runs and per-run tokens. Status changes are compare-and-set on the status. */
import { and, asc, count, desc, eq, inArray, isNotNull, isNull, lt, or, sql } from "drizzle-orm";
import type { Database } from "../db/client.ts";
import { runs, runTokens, stateVersions, workspaces } from "../db/schema.ts";
import { canTransition, type RunStatus, WAITING_STATUSES } from "./model.ts";

export type RunRow = typeof runs.$inferSelect;

export function insertRunQuery(db: Database, row: typeof runs.$inferInsert) {
  return db.insert(runs).values(row);
}

export function getRun(db: Database, orgId: string, id: string): Promise<RunRow | undefined> {
  return db.query.runs.findFirst({ where: and(eq(runs.orgId, orgId), eq(runs.id, id)) });
}

/** A run by id alone: for the scheduler's callbacks, which carry no principal. */
export function getRunById(db: Database, id: string): Promise<RunRow | undefined> {
  return db.query.runs.findFirst({ where: eq(runs.id, id) });
}

/** A page of runs, newest first, after the keyset `after` ([createdAt, id]) when given. */
export function listRunsPage(
  db: Database,
  filter: { orgId: string; workspaceId?: string; commitSha?: string; status?: string },
  page: { limit: number; after?: readonly [number, string] },
) {
  return db
    .select()
    .from(runs)
    .where(
      and(
        eq(runs.orgId, filter.orgId),
        filter.workspaceId ? eq(runs.workspaceId, filter.workspaceId) : undefined,
        filter.commitSha ? eq(runs.commitSha, filter.commitSha) : undefined,
        filter.status ? eq(runs.status, filter.status) : undefined,
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
  const [row] = await db
    .select({ n: count() })
    .from(runs)
    .where(and(eq(runs.orgId, orgId), inArray(runs.status, [...WAITING_STATUSES])));
  return row?.n ?? 0;
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
      | "plannedExecutionMode"
      | "plannedPoolId"
      | "planSha256"
    >
  > = {},
): Promise<RunRow | undefined> {
  for (const status of from) {
    if (!canTransition(status, to)) {
      throw new Error(`moveRun: ${status} → ${to} is not a run transition`);
    }
  }
  const [row] = await db
    .update(runs)
    .set({
      ...extra,
      status: to,
      updatedAt: now,
      statusTimestamps: sql`json_set(coalesce(${runs.statusTimestamps}, '{}'), ${`$.${to}`}, ${now})`,
    })
    .where(and(eq(runs.id, id), inArray(runs.status, [...from])))
    .returning();
  return row;
}

export function setCancelRequested(db: Database, id: string, now: number) {
  return db
    .update(runs)
    .set({ cancelRequestedAt: now, updatedAt: now })
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

/** Frees the workspace if `runId` holds it; idempotent. */
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
    .where(and(eq(workspaces.id, workspaceId), eq(workspaces.currentRunId, runId)));
}

export function insertRunTokenQuery(db: Database, row: typeof runTokens.$inferInsert) {
  return db.insert(runTokens).values(row);
}

/** Revokes every token of a run (or only those of one job). */
export function revokeRunTokensQuery(db: Database, runId: string, now: number, jobId?: string) {
  return db
    .update(runTokens)
    .set({ revokedAt: now })
    .where(
      and(
        eq(runTokens.runId, runId),
        isNull(runTokens.revokedAt),
        jobId ? eq(runTokens.jobId, jobId) : undefined,
      ),
    );
}

/**
 * The agent acknowledged `leaseId` of `jobId`: that lease's token becomes usable. A token of
 * another lease, or one already revoked, is left as it is.
 */
export function startRunTokenQuery(db: Database, jobId: string, leaseId: string, now: number) {
  return db
    .update(runTokens)
    .set({ startedAt: now })
    .where(
      and(
        eq(runTokens.jobId, jobId),
        eq(runTokens.leaseId, leaseId),
        isNull(runTokens.revokedAt),
        isNull(runTokens.startedAt),
      ),
    );
}

/** True while `jobId` has a started, unrevoked token: its lease is live. */
export async function isJobLive(db: Database, jobId: string): Promise<boolean> {
  const row = await db.query.runTokens.findFirst({
    where: and(
      eq(runTokens.jobId, jobId),
      isNull(runTokens.revokedAt),
      isNotNull(runTokens.startedAt),
    ),
    columns: { id: true },
  });
  return row !== undefined;
}

/** The highest state serial a run wrote (its apply's snapshots), or null when it wrote none. */
export async function latestSerialWrittenBy(db: Database, runId: string): Promise<number | null> {
  const [row] = await db
    .select({ serial: sql<number | null>`max(${stateVersions.serial})` })
    .from(stateVersions)
    .where(and(eq(stateVersions.runId, runId), isNull(stateVersions.discardedAt)));
  return row?.serial ?? null;
}
