/** D1 access for VCS feedback: what was last posted for a run, per kind. */
import { eq, inArray } from "drizzle-orm";
import type { Database } from "../db/client.ts";
import { vcsFeedback } from "../db/schema.ts";

export type FeedbackRow = typeof vcsFeedback.$inferSelect;
export type FeedbackKind = FeedbackRow["kind"];

/** The run's feedback records (status, comment), as last written. */
export function feedbackOfRun(db: Database, runId: string): Promise<FeedbackRow[]> {
  return db.select().from(vcsFeedback).where(eq(vcsFeedback.runId, runId));
}

/** Records the outcome of a post, replacing the previous one of the same kind. */
export async function recordFeedback(
  db: Database,
  row: Omit<FeedbackRow, "attempts">,
  previous: FeedbackRow | undefined,
): Promise<FeedbackRow> {
  const sameTry = previous !== undefined && previous.runStatus === row.runStatus;
  const attempts = sameTry ? previous.attempts + 1 : 1;
  const full = { ...row, attempts };
  await db
    .insert(vcsFeedback)
    .values(full)
    .onConflictDoUpdate({ target: [vcsFeedback.runId, vcsFeedback.kind], set: full });
  return full;
}

/** D1 binds at most 100 parameters a query: run ids are looked up this many at a time. */
const RUN_IDS_PER_QUERY = 90;

/** The feedback records of every run in `runIds`, by run id (runs with none are absent). */
export async function feedbackOfRuns(
  db: Database,
  runIds: readonly string[],
): Promise<Map<string, FeedbackRow[]>> {
  const byRun = new Map<string, FeedbackRow[]>();
  const unique = [...new Set(runIds)];
  for (let at = 0; at < unique.length; at += RUN_IDS_PER_QUERY) {
    const slice = unique.slice(at, at + RUN_IDS_PER_QUERY);
    for (const row of await db
      .select()
      .from(vcsFeedback)
      .where(inArray(vcsFeedback.runId, slice))) {
      byRun.set(row.runId, [...(byRun.get(row.runId) ?? []), row]);
    }
  }
  return byRun;
}
