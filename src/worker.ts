/**
 * The Worker's handlers over one clock: `fetch` (the Hono app), `queue` (job endings the pools
 * made on their own) and `scheduled` (the reconciler, schedules and assessments). Each invocation builds its own deps from
 * the clock; `src/index.ts` gives the real one.
 */
import { newApp } from "./app.ts";
import { tickAssessments } from "./assessments/service.ts";
import { buildDeps, type Clock } from "./deps.ts";
import { consumeJobEvents } from "./runs/job-events.ts";
import { reconcile } from "./runs/reconcile.ts";
import { tickSchedules } from "./schedules/service.ts";

/** The handlers of a Worker whose code reads the time from `clock`. */
export function newWorker(clock: Clock) {
  const app = newApp(clock);
  return {
    fetch: app.fetch,
    /** Job endings the pools created on their own, from the `JOB_EVENTS` queue. */
    async queue(batch, env) {
      await consumeJobEvents(batch, buildDeps(env, clock));
    },
    /**
     * Every minute: reconcile runs with the pool queues (src/runs/reconcile.ts), then queue the
     * runs of due schedules (src/schedules/service.ts) and start due assessments
     * (src/assessments/service.ts). Each is safe to run twice or late.
     */
    async scheduled(_controller, env, ctx) {
      ctx.waitUntil(tick(buildDeps(env, clock)));
    },
  } satisfies ExportedHandler<Env>;
}

/**
 * One cron tick: the reconciler first (it repairs what the others read), then the schedules,
 * then the assessments.
 */
export async function tick(deps: ReturnType<typeof buildDeps>): Promise<void> {
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
}
