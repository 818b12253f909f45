/**
 * The Worker's handlers over one clock: `fetch` (the Hono app), `queue` (job endings the pools
 * made on their own) and `scheduled` (the reconciler). Each invocation builds its own deps from
 * the clock; `src/index.ts` gives the real one.
 */
import { newApp } from "./app.ts";
import { buildDeps, type Clock } from "./deps.ts";
import { consumeJobEvents } from "./runs/job-events.ts";
import { reconcile } from "./runs/reconcile.ts";

/** The handlers of a Worker whose code reads the time from `clock`. */
export function newWorker(clock: Clock) {
  const app = newApp(clock);
  return {
    fetch: app.fetch,
    /** Job endings the pools created on their own, from the `JOB_EVENTS` queue. */
    async queue(batch, env) {
      await consumeJobEvents(batch, buildDeps(env, clock));
    },
    /** Every minute: reconcile runs with the pool queues (see src/runs/reconcile.ts). */
    async scheduled(_controller, env, ctx) {
      ctx.waitUntil(
        reconcile(buildDeps(env, clock)).then((report) => {
          const repaired = Object.values(report).reduce((n, ids) => n + ids.length, 0);
          if (repaired > 0) {
            console.log(JSON.stringify({ level: "info", msg: "reconciled runs", ...report }));
          }
        }),
      );
    },
  } satisfies ExportedHandler<Env>;
}
