/**
 * What Worker code needs from the invocation it runs in: the bindings, D1, and the clock. Built
 * once per request, queue batch or cron tick by {@link buildDeps}; code reads the time from
 * `deps.now()`, never from `Date.now()`, so tests move time by giving the Worker another clock.
 */
import { createDb, type Database } from "./db/client.ts";
import type { Clock } from "./lib/clock.ts";

export type { Clock } from "./lib/clock.ts";
export { systemClock } from "./lib/clock.ts";

export type Deps = { env: Env; db: Database; now: Clock };

/** The dependencies of one invocation: its bindings, D1 over them, and `clock`. */
export function buildDeps(env: Env, clock: Clock): Deps {
  return { env, db: createDb(env.DB), now: clock };
}
