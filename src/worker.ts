/**
 * The Worker's handlers over one clock: `fetch` (the Hono app), `queue` (job endings the pools
 * made on their own, and run events for their sinks) and `scheduled` (the reconciler, schedules,
 * assessments, the run events outbox and the notification retries). Each invocation builds its
 * own deps from the clock; `src/index.ts` gives the real one.
 */
import { newApp } from "./app.ts";
import { tickAssessments } from "./assessments/service.ts";
import { buildDeps, type Clock, type Deps } from "./deps.ts";
import { consumeRunEvents, RUN_EVENTS_QUEUE } from "./events/consumer.ts";
import { flushRunEvents, pruneRunEvents } from "./events/outbox.ts";
import { sweepDeliveries } from "./notifications/deliver.ts";
import { consumeJobEvents } from "./runs/job-events.ts";
import { reconcile } from "./runs/reconcile.ts";
import { tickSchedules } from "./schedules/service.ts";

function logFailure(msg: string) {
  return (err: unknown) => {
    console.error(JSON.stringify({ level: "error", msg, err: String(err) }));
  };
}

/**
 * One cron tick: reconcile runs with the pool queues (it repairs what the others read), queue the
 * runs of due schedules and start due assessments (each safe to run twice or late), then send
 * the run events still in the outbox (those changes included), retry the due notification
 * deliveries and prune old events.
 */
export async function tick(deps: Deps): Promise<void> {
  const report = await reconcile(deps);
  const repaired = Object.values(report).reduce((n, ids) => n + ids.length, 0);
  if (repaired > 0) {
    console.log(JSON.stringify({ level: "info", msg: "reconciled runs", ...report }));
  }
  const schedules = await tickSchedules(deps);
  if (schedules.queued.length + schedules.skipped.length + schedules.failed.length > 0) {
    console.log(JSON.stringify({ level: "info", msg: "schedules ticked", ...schedules }));
  }
  const assessments = await tickAssessments(deps);
  if (assessments.started.length + assessments.settled.length > 0) {
    console.log(JSON.stringify({ level: "info", msg: "assessments ticked", ...assessments }));
  }
  await Promise.all([
    flushRunEvents(deps).catch(logFailure("run events not flushed")),
    sweepDeliveries(deps).catch(logFailure("notification deliveries not swept")),
    pruneRunEvents(deps).catch(logFailure("run events not pruned")),
  ]);
}

/** The handlers of a Worker whose code reads the time from `clock`. */
export function newWorker(clock: Clock) {
  const app = newApp(clock);
  return {
    fetch: app.fetch,
    /** Run events for their sinks, or job endings the pools created on their own. */
    async queue(batch, env, ctx) {
      const deps = buildDeps(env, clock);
      if (batch.queue === RUN_EVENTS_QUEUE) {
        await consumeRunEvents(batch, deps);
        return;
      }
      await consumeJobEvents(batch, deps);
      // The endings changed runs: their events go out now rather than at the next tick.
      ctx.waitUntil(flushRunEvents(deps).catch(logFailure("run events not flushed")));
    },
    /** Every minute: see {@link tick}. */
    async scheduled(_controller, env, ctx) {
      ctx.waitUntil(tick(buildDeps(env, clock)));
    },
  } satisfies ExportedHandler<Env>;
}
