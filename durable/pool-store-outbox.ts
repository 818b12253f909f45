/**
 * The outbox: job endings the pool made on its own, kept until the `JOB_EVENTS` queue took them
 * (`outbox.ts` sends them). An ending is added in the same transaction that ended its job.
 */
import type { PoolStore } from "./pool-store.ts";
import type { JobEndedEvent } from "./pool-types.ts";

/** One stored ending: its row id, the event as JSON, and how many sends were tried. */
export type OutboxRow = { id: number; event: string; attempts: number };

export class OutboxTable {
  /**
   * False once a look at the outbox found nothing due, until an ending is added or the alarm
   * runs: most changes then skip looking again.
   */
  mayBeDue = true;

  constructor(private readonly store: PoolStore) {}

  private get sql(): SqlStorage {
    return this.store.sql;
  }

  /** Keeps an ending for sending, due at once. */
  add(event: JobEndedEvent, now: number): void {
    this.mayBeDue = true;
    this.sql.exec(
      "INSERT INTO outbox (event, next_attempt_at) VALUES (?, ?)",
      JSON.stringify(event),
      now,
    );
  }

  /**
   * Claims up to `limit` due events for sending (oldest first): each is not due again for
   * `claimMs`, so a send that never returns is retried, and one in flight is not sent twice.
   */
  claim(now: number, claimMs: number, limit: number): OutboxRow[] {
    if (!this.mayBeDue) {
      return [];
    }
    const rows = this.sql
      .exec<OutboxRow>(
        "SELECT id, event, attempts FROM outbox WHERE next_attempt_at <= ? ORDER BY id LIMIT ?",
        now,
        limit,
      )
      .toArray();
    if (rows.length === 0) {
      this.mayBeDue = false;
    }
    for (const row of rows) {
      this.sql.exec(
        "UPDATE outbox SET attempts = attempts + 1, next_attempt_at = ? WHERE id = ?",
        now + claimMs,
        row.id,
      );
    }
    return rows;
  }

  /** The events were handed to the queue. */
  delete(ids: readonly number[]): void {
    for (const id of ids) {
      this.sql.exec("DELETE FROM outbox WHERE id = ?", id);
    }
  }

  /** A send failed: try these events again at `at`. */
  retry(ids: readonly number[], at: number): void {
    for (const id of ids) {
      this.sql.exec("UPDATE outbox SET next_attempt_at = ? WHERE id = ?", at, id);
    }
  }
}
