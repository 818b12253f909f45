/**
 * The `RUN_EVENTS` queue consumer: hands each event to every sink (`sinks.ts`). Messages of a
 * batch are handled at once and sinks of one message side by side, so a slow sink delays no
 * other event. A message whose sinks all succeeded is acknowledged; one where a sink failed is
 * retried with backoff (every sink runs again: they are idempotent by event id); one that is not
 * an event is dropped with a log line.
 */
import type { Deps } from "../deps.ts";
import { RetryLater, RunEvent, sinkRetryDelaySeconds } from "./model.ts";
import { RUN_EVENT_SINKS, type RunEventSink } from "./sinks.ts";

/** The queue's name in wrangler.toml: the queue handler tells its batches apart by it. */
export const RUN_EVENTS_QUEUE = "outpost-run-events";

/** Handles a batch of run events, acknowledging or retrying each message on its own. */
export async function consumeRunEvents(
  batch: MessageBatch<unknown>,
  deps: Deps,
  sinks: readonly RunEventSink[] = RUN_EVENT_SINKS,
): Promise<void> {
  await Promise.all(batch.messages.map((message) => consumeOne(message, deps, sinks)));
}

async function consumeOne(
  message: Message<unknown>,
  deps: Deps,
  sinks: readonly RunEventSink[],
): Promise<void> {
  const parsed = RunEvent.safeParse(message.body);
  if (!parsed.success) {
    console.error(
      JSON.stringify({
        level: "error",
        msg: "dropped a message that is not a run event",
        id: message.id,
      }),
    );
    message.ack();
    return;
  }
  const event = parsed.data;
  const results = await Promise.allSettled(sinks.map((sink) => sink.handle(deps, event)));
  const failed = results.flatMap((result, i) =>
    result.status === "rejected" ? [{ sink: sinks[i]?.name, err: String(result.reason) }] : [],
  );
  if (failed.length === 0) {
    message.ack();
    return;
  }
  console.error(
    JSON.stringify({
      level: "error",
      msg: "run event not handled by every sink; the queue retries it",
      eventId: event.id,
      attempts: message.attempts,
      failed,
    }),
  );
  const asked = results.map((r) =>
    r.status === "rejected" && r.reason instanceof RetryLater ? r.reason.delaySeconds : 0,
  );
  message.retry({ delaySeconds: sinkRetryDelaySeconds(message.attempts, Math.max(...asked)) });
}
