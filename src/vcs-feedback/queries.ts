/** D1 access for VCS feedback: what was last posted for a run, per kind. */
import { eq } from "drizzle-orm";
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
