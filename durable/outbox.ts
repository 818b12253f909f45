/**
 * Hands the job endings the pool created on its own (alarm, lost agent, revoked token, retired
 * pool) to the `JOB_EVENTS` queue, at least once. Each ending was written to the outbox in the
 * same transaction that ended the job (`JobsTable.end`); here due events are claimed, sent
 * in one batch and deleted, or kept for the alarm to retry with backoff when the send fails.
 */
import type { PoolStore } from "./pool-store.ts";
import type { JobEndedEvent } from "./pool-types.ts";
import { outboxRetryDelayMs } from "./queue.ts";

/** A claimed event is not picked up again (by the alarm) for this long. */
const CLAIM_MS = 60_000;
/** At most this many messages in one `sendBatch` (the queue's own limit is 100). */
const BATCH = 100;

/** Where the events go: the `JOB_EVENTS` producer binding, or a stand-in in tests. */
export type EventSink = { sendBatch(messages: { body: JobEndedEvent }[]): Promise<unknown> };

/** Sends every due event, oldest first. Returns how many were sent and how many wait for a retry. */
export async function sendDue(
  store: PoolStore,
  sink: EventSink,
  now: () => number,
): Promise<{ sent: number; failed: number }> {
  let sent = 0;
  for (;;) {
    const rows = store.outbox.claim(now(), CLAIM_MS, BATCH);
    if (rows.length === 0) {
      return { sent, failed: 0 };
    }
    const ids = rows.map((row) => row.id);
    try {
      await sink.sendBatch(rows.map((row) => ({ body: JSON.parse(row.event) as JobEndedEvent })));
    } catch (err) {
      const attempts = Math.max(...rows.map((row) => row.attempts)) + 1;
      store.outbox.retry(ids, now() + outboxRetryDelayMs(attempts));
      console.error(
        JSON.stringify({
          level: "error",
          msg: "job events not sent; will retry",
          err: String(err),
        }),
      );
      return { sent, failed: rows.length };
    }
    store.outbox.delete(ids);
    sent += rows.length;
    if (rows.length < BATCH) {
      return { sent, failed: 0 };
    }
  }
}
