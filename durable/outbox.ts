/**
 * Delivery of job-ended events to `onJobEnded`, at least once. Events are written to the
 * `outbox` table in the same transaction as the job's end (see `endJob`); here each due event is
 * claimed, delivered, and deleted, or rescheduled with backoff when delivery throws.
 */
import type { JobEndedEvent } from "./pool-types.ts";
import { outboxRetryDelayMs } from "./queue.ts";

/** An event being delivered is not picked up again (by the alarm) for this long. */
const CLAIM_MS = 60_000;
const BATCH = 100;

type OutboxRow = { id: number; event: string; attempts: number };

/**
 * Delivers the due events (all of them with `ignoreSchedule`), oldest first. Returns how many
 * were delivered and how many failed; failures stay in the outbox for the alarm to retry.
 */
export async function deliverDue(
  sql: SqlStorage,
  deliver: (event: JobEndedEvent) => Promise<void>,
  options: { ignoreSchedule: boolean },
): Promise<{ delivered: number; failed: number }> {
  const now = Date.now();
  const rows = options.ignoreSchedule
    ? sql.exec<OutboxRow>(`SELECT id, event, attempts FROM outbox ORDER BY id LIMIT ${BATCH}`)
    : sql.exec<OutboxRow>(
        `SELECT id, event, attempts FROM outbox WHERE next_attempt_at <= ? ORDER BY id LIMIT ${BATCH}`,
        now,
      );
  const due = rows.toArray();
  for (const row of due) {
    sql.exec(
      "UPDATE outbox SET attempts = attempts + 1, next_attempt_at = ? WHERE id = ?",
      now + CLAIM_MS,
      row.id,
    );
  }
  let delivered = 0;
  let failed = 0;
  for (const row of due) {
    try {
      await deliver(JSON.parse(row.event) as JobEndedEvent);
      sql.exec("DELETE FROM outbox WHERE id = ?", row.id);
      delivered++;
    } catch (err) {
      failed++;
      console.error(
        JSON.stringify({ level: "error", msg: "onJobEnded failed; will retry", err: String(err) }),
      );
      sql.exec(
        "UPDATE outbox SET next_attempt_at = ? WHERE id = ?",
        Date.now() + outboxRetryDelayMs(row.attempts + 1),
        row.id,
      );
    }
  }
  return { delivered, failed };
}

/** True while any event waits for delivery. */
export function hasPending(sql: SqlStorage): boolean {
  return sql.exec("SELECT 1 FROM outbox LIMIT 1").toArray().length > 0;
}
