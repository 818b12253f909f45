/** The public shape of a run's VCS feedback records. */
import type { FeedbackRow } from "./queries.ts";

/** Each kind's last post: what it said, whether the VCS took it, and why not. */
export function presentFeedback(rows: readonly FeedbackRow[]) {
  return rows.map((row) => ({
    kind: row.kind,
    runStatus: row.runStatus,
    state: row.state,
    description: row.description,
    posted: row.posted,
    error: row.error,
    attempts: row.attempts,
    updatedAt: new Date(row.updatedAt).toISOString(),
  }));
}
