/**
 * The `JOB_EVENTS` queue consumer: job endings the pools created on their own (an alarm, a lost
 * agent, a revoked token, a retired pool), applied to the runs. Delivery is at least once and
 * `handleJobEnded` is idempotent, so a redelivered ending changes nothing. A message that fails
 * is retried with backoff by the queue; one that is not an ending at all is dropped with a log
 * line (retrying cannot fix it). The reconciler repairs whatever still got lost.
 */
import { JobEndedEvent } from "../../durable/pool-types.ts";
import type { Deps } from "../deps.ts";
import { handleJobEnded } from "./events.ts";

/** Seconds before a failed message is delivered again: 2, 4, 8 … at most 5 minutes. */
export function retryDelaySeconds(attempts: number): number {
  return Math.min(300, 2 ** Math.min(Math.max(attempts, 1), 9));
}

/** Applies a batch of job endings, acknowledging each message on its own. */
export async function consumeJobEvents(batch: MessageBatch<unknown>, deps: Deps): Promise<void> {
  for (const message of batch.messages) {
    const event = JobEndedEvent.safeParse(message.body);
    if (!event.success) {
      console.error(
        JSON.stringify({
          level: "error",
          msg: "dropped a message that is not a job ending",
          id: message.id,
          issue: event.error.issues[0]?.message,
        }),
      );
      message.ack();
      continue;
    }
    try {
      await handleJobEnded(deps, event.data);
      message.ack();
    } catch (err) {
      console.error(
        JSON.stringify({
          level: "error",
          msg: "job ending not applied; the queue retries it",
          jobId: event.data.jobId,
          attempts: message.attempts,
          err: String(err),
        }),
      );
      message.retry({ delaySeconds: retryDelaySeconds(message.attempts) });
    }
  }
}
