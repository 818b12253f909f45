/**
 * The run events outbox and its dispatcher. D1 records every run creation and status change in
 * `run_events` in the statement that makes it (SQLite triggers, migration 0014); other features
 * add their own events with {@link emitRunEvent}. {@link flushRunEvents} sends what is unsent to
 * the `RUN_EVENTS` queue and marks it sent, so every event reaches the sinks at least once: after
 * a request that may have changed a run, after a batch of job endings, and on every cron tick,
 * which also resends anything a crash left unsent.
 */
import { and, asc, eq, inArray, isNotNull, isNull, lt } from "drizzle-orm";
import type { Database } from "../db/client.ts";
import { runEvents, runs } from "../db/schema.ts";
import type { Deps } from "../deps.ts";
import type { RunStatus } from "../runs/model.ts";
import { type EventType, eventOfOutboxRow, type RunEvent } from "./model.ts";

/** Events sent per flush; a larger backlog drains over the next flushes and ticks. */
const FLUSH_BATCH = 100;
/** How long a sent event stays in the outbox (for support and replays) before it is pruned. */
export const SENT_EVENT_RETENTION_MS = 7 * 24 * 3600 * 1000;

/** An event another feature adds to the queue: an assessment's result, say. */
export type EmittedRunEvent = {
  /**
   * Names the event, unique across all events and stable across retries (e.g.
   * `<assessment id>:drifted`): emitting the same id twice records and delivers it once.
   */
  id: string;
  type: EventType;
  orgId: string;
  workspaceId: string;
  /** The run the event is about (an assessment's run). */
  runId: string;
  /** That run's status when the event happened. */
  status: RunStatus;
  /** What the event adds beyond the run, shown to sinks as is: never a secret. */
  data?: Record<string, unknown> | null;
};

/**
 * The statement that records `event` in the outbox, to put in the same `db.batch` as the change
 * it reports, so one is never stored without the other. Recording an id twice is one row.
 */
export function emitRunEventQuery(db: Database, event: EmittedRunEvent, now: number) {
  return db
    .insert(runEvents)
    .values({
      id: event.id,
      type: event.type,
      orgId: event.orgId,
      workspaceId: event.workspaceId,
      runId: event.runId,
      status: event.status,
      occurredAt: now,
      data: event.data ?? null,
    })
    .onConflictDoNothing({ target: runEvents.id });
}

/**
 * Emits a run event: records it in the outbox (once per `event.id`) and sends it to the
 * `RUN_EVENTS` queue, whose sinks (notifications, run triggers, and later VCS feedback) each
 * handle it at least once and idempotently by id. Guaranteed: once this resolves, the event is
 * durable and will be delivered even if the send fails now (the cron sends it again). Use
 * {@link emitRunEventQuery} instead when the event must be stored atomically with a change.
 */
export async function emitRunEvent(deps: Deps, event: EmittedRunEvent): Promise<void> {
  await emitRunEventQuery(deps.db, event, deps.now());
  await flushRunEvents(deps);
}

/**
 * Sends up to {@link FLUSH_BATCH} unsent events, oldest first, to the `RUN_EVENTS` queue and
 * marks them sent; changes that are no lifecycle event are marked without sending. Two flushes
 * at once may send an event twice, which sinks tolerate. Returns how many messages it sent.
 */
export async function flushRunEvents(deps: Deps): Promise<number> {
  const { db } = deps;
  const rows = await db
    .select({ event: runEvents, isAutoApply: runs.isAutoApply })
    .from(runEvents)
    .innerJoin(runs, eq(runs.id, runEvents.runId))
    .where(isNull(runEvents.sentAt))
    .orderBy(asc(runEvents.occurredAt))
    .limit(FLUSH_BATCH);
  if (rows.length === 0) {
    return 0;
  }
  const events = rows.flatMap(({ event, isAutoApply }) => {
    const found = eventOfOutboxRow(event, { isAutoApply });
    return found ? [found] : [];
  });
  if (events.length > 0) {
    await deps.env.RUN_EVENTS.sendBatch(events.map((body) => ({ body })));
  }
  await db
    .update(runEvents)
    .set({ sentAt: deps.now() })
    .where(
      inArray(
        runEvents.id,
        rows.map((r) => r.event.id),
      ),
    );
  return events.length;
}

/** Deletes events sent longer ago than {@link SENT_EVENT_RETENTION_MS}. */
export async function pruneRunEvents(deps: Deps): Promise<void> {
  await deps.db
    .delete(runEvents)
    .where(
      and(isNotNull(runEvents.sentAt), lt(runEvents.sentAt, deps.now() - SENT_EVENT_RETENTION_MS)),
    );
}

/** The events recorded for a run, oldest first (for tests and support). */
export function listRunEvents(db: Database, runId: string): Promise<RunEvent[]> {
  return db
    .select({ event: runEvents, isAutoApply: runs.isAutoApply })
    .from(runEvents)
    .innerJoin(runs, eq(runs.id, runEvents.runId))
    .where(eq(runEvents.runId, runId))
    .orderBy(asc(runEvents.occurredAt))
    .then((rows) =>
      rows.flatMap(({ event, isAutoApply }) => {
        const found = eventOfOutboxRow(event, { isAutoApply });
        return found ? [found] : [];
      }),
    );
}
