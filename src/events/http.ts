/**
 * The HTTP edge of the run events outbox: after a request that may have changed a run, the
 * events it recorded are sent to the queue in the background (`waitUntil`), so notifications
 * follow within moments rather than at the next cron tick. Reads, refused requests (a 4xx or
 * 5xx: a refusal changes nothing, so it writes nothing either) and the agents' frequent calls
 * that change no run (heartbeats, polls, log appends, the state backend) skip it; the rare
 * refusal that did end a run (a confirm that errors it) is sent by the next tick.
 */
import type { MiddlewareHandler } from "hono";
import type { AppEnv } from "../env.ts";
import { flushRunEvents } from "./outbox.ts";

const QUIET_PATHS = [
  /^\/agent\/v1\/heartbeat$/,
  /^\/agent\/v1\/jobs\/next$/,
  /\/logs$/,
  /^\/state\//,
];

/** Whether a request may have changed a run's status. */
export function mayChangeRuns(method: string, path: string): boolean {
  if (method === "GET" || method === "HEAD" || method === "OPTIONS") {
    return false;
  }
  return !QUIET_PATHS.some((pattern) => pattern.test(path));
}

/** Middleware: flush the outbox after a request that may have changed a run. */
export function flushAfterChanges(): MiddlewareHandler<AppEnv> {
  return async function flushRunEventsAfter(c, next) {
    await next();
    if (c.res.status >= 400 || !mayChangeRuns(c.req.method, c.req.path)) {
      return;
    }
    const flushing = flushRunEvents(c.var.deps).catch((err: unknown) => {
      console.error(
        JSON.stringify({
          level: "error",
          msg: "run events not flushed; the cron sends them",
          err: String(err),
        }),
      );
    });
    try {
      c.executionCtx.waitUntil(flushing);
    } catch {
      // No execution context (a bare app.request in a test): the flush still runs, unawaited.
    }
  };
}
