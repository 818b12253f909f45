/**
 * D1 access for state versions and state locks. Every lookup is scoped by org or workspace id.
 * Writes that depend on what was read are single conditional statements (D1 has no interactive
 * transactions), so a concurrent change makes them insert nothing instead of breaking a rule.
 */
import {
  and,
  desc,
  eq,
  exists,
  getTableColumns,
  gte,
  isNull,
  lt,
  ne,
  notExists,
  or,
  type SQL,
  sql,
} from "drizzle-orm";
import type { SQLiteTable } from "drizzle-orm/sqlite-core";
import type { Database } from "../db/client.ts";
import { runs, stateLocks, stateVersions, workspaces } from "../db/schema.ts";

export type StateVersionRow = typeof stateVersions.$inferSelect;
export type StateLockRow = typeof stateLocks.$inferSelect;

/** The workspace fields the state backend needs, within the org. */
export function findStateWorkspace(db: Database, orgId: string, workspaceId: string) {
  return db.query.workspaces.findFirst({
    where: and(eq(workspaces.orgId, orgId), eq(workspaces.id, workspaceId)),
    columns: {
      id: true,
      orgId: true,
      executionMode: true,
      lockedBy: true,
      lockReason: true,
      lockedAt: true,
      remoteStateSharing: true,
      remoteStateConsumerIds: true,
    },
  });
}

export type StateWorkspace = NonNullable<Awaited<ReturnType<typeof findStateWorkspace>>>;

/** A run's status, within the org; undefined when there is no such run. */
export async function findRunStatus(
  db: Database,
  orgId: string,
  runId: string,
): Promise<string | undefined> {
  return (await findRunFacts(db, orgId, runId))?.status;
}

/** What state access needs to know of a run, within the org. */
export function findRunFacts(db: Database, orgId: string, runId: string) {
  return db.query.runs.findFirst({
    where: and(eq(runs.orgId, orgId), eq(runs.id, runId)),
    columns: { status: true, isSpeculative: true, isFork: true },
  });
}

/** Who queued and who confirmed a run, within the org. */
export function findRunActors(db: Database, orgId: string, runId: string) {
  return db.query.runs.findFirst({
    where: and(eq(runs.orgId, orgId), eq(runs.id, runId)),
    columns: { createdBy: true, confirmedBy: true },
  });
}

/** The live version with the highest serial: the current state. */
export async function findCurrentVersion(
  db: Database,
  workspaceId: string,
): Promise<StateVersionRow | undefined> {
  const [row] = await db
    .select()
    .from(stateVersions)
    .where(and(eq(stateVersions.workspaceId, workspaceId), isNull(stateVersions.discardedAt)))
    .orderBy(desc(stateVersions.serial))
    .limit(1);
  return row;
}

/** A version by id alone, in the organization `orgId` (another organization's id: none). */
export function findVersionInOrg(db: Database, orgId: string, id: string) {
  return db.query.stateVersions.findFirst({
    where: and(eq(stateVersions.orgId, orgId), eq(stateVersions.id, id)),
  });
}

export function findVersion(db: Database, workspaceId: string, id: string) {
  return db.query.stateVersions.findFirst({
    where: and(eq(stateVersions.workspaceId, workspaceId), eq(stateVersions.id, id)),
  });
}

/** The highest state serial a run wrote (its apply's snapshots), or null when it wrote none. */
export async function latestSerialWrittenBy(db: Database, runId: string): Promise<number | null> {
  const [row] = await db
    .select({ serial: sql<number | null>`max(${stateVersions.serial})` })
    .from(stateVersions)
    .where(and(eq(stateVersions.runId, runId), isNull(stateVersions.discardedAt)));
  return row?.serial ?? null;
}

/** One page of a workspace's versions, newest first, `limit + 1` rows to detect a next page. */
export function listVersionRows(
  db: Database,
  workspaceId: string,
  page: { limit: number; after?: readonly [number, string] },
): Promise<StateVersionRow[]> {
  const after = page.after;
  return db
    .select()
    .from(stateVersions)
    .where(
      and(
        eq(stateVersions.workspaceId, workspaceId),
        after === undefined
          ? undefined
          : or(
              lt(stateVersions.createdAt, after[0]),
              and(eq(stateVersions.createdAt, after[0]), lt(stateVersions.id, after[1])),
            ),
      ),
    )
    .orderBy(desc(stateVersions.createdAt), desc(stateVersions.id))
    .limit(page.limit + 1);
}

export function findLock(db: Database, workspaceId: string): Promise<StateLockRow | undefined> {
  return db.query.stateLocks.findFirst({ where: eq(stateLocks.workspaceId, workspaceId) });
}

export function findRunLocks(db: Database, runId: string): Promise<StateLockRow[]> {
  return db.select().from(stateLocks).where(eq(stateLocks.runId, runId));
}

export function findJobLocks(db: Database, jobId: string): Promise<StateLockRow[]> {
  return db.select().from(stateLocks).where(eq(stateLocks.jobId, jobId));
}

/** Takes the lock if nobody holds it; returns the inserted row, or nothing when it was held. */
export function insertLockQuery(db: Database, row: typeof stateLocks.$inferInsert) {
  return db.insert(stateLocks).values(row).onConflictDoNothing().returning();
}

/** Releases exactly this lock (not one taken since). */
export function deleteLockQuery(db: Database, workspaceId: string, lockId: string) {
  return db
    .delete(stateLocks)
    .where(and(eq(stateLocks.workspaceId, workspaceId), eq(stateLocks.lockId, lockId)))
    .returning({ lockId: stateLocks.lockId });
}

/**
 * `INSERT … SELECT <row> WHERE <condition>`: inserts the complete row only while the condition
 * holds, in one statement. Every column must be given (null for none).
 */
function insertWhere<T extends SQLiteTable>(
  db: Database,
  table: T,
  row: T["$inferInsert"],
  condition: SQL,
) {
  const values: Record<string, unknown> = row;
  const list = Object.entries(getTableColumns(table)).map(([key, column]) => {
    const value = values[key];
    return value === undefined || value === null ? sql`null` : sql.param(value, column);
  });
  return db.insert(table).select(sql`select ${sql.join(list, sql`, `)} where ${condition}`);
}

/** What must still be true when a version is inserted. */
export type VersionGuard = {
  /** The lock that must be held (by id), or null when no lock may be held. */
  lockId: string | null;
  /** The principal allowed through a workspace user lock. */
  principalId: string;
};

/**
 * Inserts a version only if it is still newer than every live version of the same lineage,
 * the state lock is as the caller saw it, and no user lock of someone else appeared.
 */
export function insertVersionQuery(
  db: Database,
  row: typeof stateVersions.$inferInsert,
  guard: VersionGuard,
) {
  const one = sql`1`;
  const ws = row.workspaceId;
  const newerOrForeign = db
    .select({ one })
    .from(stateVersions)
    .where(
      and(
        eq(stateVersions.workspaceId, ws),
        isNull(stateVersions.discardedAt),
        or(gte(stateVersions.serial, row.serial), ne(stateVersions.lineage, row.lineage)),
      ),
    );
  const lock = db
    .select({ one })
    .from(stateLocks)
    .where(
      and(
        eq(stateLocks.workspaceId, ws),
        guard.lockId === null ? undefined : eq(stateLocks.lockId, guard.lockId),
      ),
    );
  const workspaceFree = db
    .select({ one })
    .from(workspaces)
    .where(
      and(
        eq(workspaces.id, ws),
        or(isNull(workspaces.lockedBy), eq(workspaces.lockedBy, guard.principalId)),
      ),
    );
  const condition = and(
    notExists(newerOrForeign),
    guard.lockId === null ? notExists(lock) : exists(lock),
    exists(workspaceFree),
  );
  return insertWhere(db, stateVersions, row, condition ?? sql`1`).returning({
    id: stateVersions.id,
  });
}

/** Marks every live version discarded (the state is deleted; history stays). */
export function discardLiveVersionsQuery(db: Database, workspaceId: string, now: number) {
  return db
    .update(stateVersions)
    .set({ discardedAt: now })
    .where(and(eq(stateVersions.workspaceId, workspaceId), isNull(stateVersions.discardedAt)));
}

/** True in a batch when the statement just before changed a row: audits a release that took effect. */
export const PREVIOUS_STATEMENT_CHANGED = sql`changes() > 0`;

/** True when the state version exists: audits an insert that took effect. */
export function versionExists(stateVersionId: string): SQL {
  return sql`exists (select 1 from ${stateVersions} where ${stateVersions.id} = ${stateVersionId})`;
}
