import { newApp } from "./app.ts";
import { createDb } from "./db/client.ts";
import { consumeJobEvents } from "./runs/job-events.ts";
import { reconcile } from "./runs/reconcile.ts";

export { AgentPool } from "../durable/agent-pool.ts";
export { RunLog } from "../durable/run-log.ts";

const app = newApp();

export default {
  fetch: app.fetch,
  /** Job endings the pools created on their own, from the `JOB_EVENTS` queue. */
  async queue(batch, env) {
    await consumeJobEvents(batch, env);
  },
  /** Every minute: reconcile runs with the pool queues (see src/runs/reconcile.ts). */
  async scheduled(_controller, env, ctx) {
    ctx.waitUntil(
      reconcile({ env, db: createDb(env.DB) }).then((report) => {
        const repaired = Object.values(report).reduce((n, ids) => n + ids.length, 0);
        if (repaired > 0) {
          console.log(JSON.stringify({ level: "info", msg: "reconciled runs", ...report }));
        }
      }),
    );
  },
} satisfies ExportedHandler<Env>;
