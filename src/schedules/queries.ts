/** The SQL of schedules and their occurrences. */
import { and, asc, eq, inArray, lte, sql } from "drizzle-orm";
import type { Database } from "../db/client.ts";
import { scheduleOccurrences, schedules } from "../db/schema.ts";

export type ScheduleRow = typeof schedules.$inferSelect;
export type OccurrenceRow = typeof scheduleOccurrences.$inferSelect;

export function insertScheduleQuery(db: Database, row: typeof schedules.$inferInsert) {
  return db.insert(schedules).values(row).returning();
}

/** A workspace's schedules, oldest first. */
export function listScheduleRows(db: Database, workspaceId: string): Promise<ScheduleRow[]> {
  return db
    .select()
    .from(schedules)
    .where(eq(schedules.workspaceId, workspaceId))
    .orderBy(asc(schedules.createdAt), asc(schedules.id));
}

export function countSchedulesQuery(db: Database, workspaceId: string) {
  return db
    .select({ n: sql<number>`count(*)` })
    .from(schedules)
    .where(eq(schedules.workspaceId, workspaceId));
}

export function deleteScheduleQuery(db: Database, workspaceId: string, id: string) {
  return db
    .delete(schedules)
    .where(and(eq(schedules.id, id), eq(schedules.workspaceId, workspaceId)))
    .returning();
}

/** The latest occurrence of each schedule in `ids` (one row each at most). */
export async function latestOccurrences(
  db: Database,
  ids: readonly string[],
): Promise<Map<string, OccurrenceRow>> {
  if (ids.length === 0) {
    return new Map();
  }
  const rows = await db
    .select()
    .from(scheduleOccurrences)
    .where(
      and(
        inArray(scheduleOccurrences.scheduleId, [...ids]),
        sql`${scheduleOccurrences.occurrenceAt} = (select max(o.occurrence_at) from schedule_occurrences o where o.schedule_id = ${scheduleOccurrences.scheduleId})`,
      ),
    );
  return new Map(rows.map((row) => [row.scheduleId, row]));
}

/** Schedules whose next occurrence is at or before `now`, the most overdue first. */
export function dueSchedules(db: Database, now: number, limit: number): Promise<ScheduleRow[]> {
  return db
    .select()
    .from(schedules)
    .where(lte(schedules.nextRunAt, now))
    .orderBy(asc(schedules.nextRunAt))
    .limit(limit);
}

/** Moves the schedule's next occurrence on, only if no other tick moved it first. */
export function advanceScheduleQuery(db: Database, id: string, from: number, to: number) {
  return db
    .update(schedules)
    .set({ nextRunAt: to })
    .where(and(eq(schedules.id, id), eq(schedules.nextRunAt, from)));
}

/**
 * Records an occurrence unless one is already recorded: answers the row when this call recorded
 * it, nothing when another tick did. The primary key (schedule, occurrence) is the idempotency.
 */
export function claimOccurrenceQuery(db: Database, row: OccurrenceRow) {
  return db.insert(scheduleOccurrences).values(row).onConflictDoNothing().returning();
}

export function settleOccurrenceQuery(
  db: Database,
  scheduleId: string,
  occurrenceAt: number,
  values: Pick<OccurrenceRow, "status" | "runId" | "reason">,
) {
  return db
    .update(scheduleOccurrences)
    .set(values)
    .where(
      and(
        eq(scheduleOccurrences.scheduleId, scheduleId),
        eq(scheduleOccurrences.occurrenceAt, occurrenceAt),
      ),
    );
}

export function setLastRunQuery(db: Database, id: string, runId: string) {
  return db.update(schedules).set({ lastRunId: runId }).where(eq(schedules.id, id));
}
