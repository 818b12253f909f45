/**
 * Time in Worker tests. The Worker reads the time from its deps (`src/deps.ts`), so a test that
 * needs time to pass builds the Worker on a clock it moves, and sends every helper's requests
 * there: nothing sleeps and no stored time is rewritten. Only tests reach this clock; a deployed
 * Worker is built on the real one (`src/index.ts`). Pools keep their own clock
 * (`advancePoolClock` in pools.ts).
 */
import { env } from "cloudflare:workers";
import { afterEach, beforeEach } from "vitest";
import { createDb } from "../../../src/db/client.ts";
import type { Deps } from "../../../src/deps.ts";
import { newWorker } from "../../../src/worker.ts";
import { routeRequests } from "./api.ts";

/** Real time plus how far the test has moved it. */
export type TestClock = {
  now(): number;
  /** Moves the Worker's time forward by `ms`. */
  advance(ms: number): void;
  /** Deps on this clock, for calling services directly. */
  deps: Deps;
};

/**
 * For the tests of the calling file or describe block: a clock starting at the real time, and
 * every request of the helpers sent to a Worker built on it (deferred work awaited, so what a
 * request queued in `waitUntil` is done when it returns).
 */
export function useTestClock(): TestClock {
  let offsetMs = 0;
  const now = () => Date.now() + offsetMs;
  const worker = newWorker(now);
  beforeEach(() => {
    offsetMs = 0;
    routeRequests(worker);
  });
  afterEach(() => routeRequests(null));
  return {
    now,
    advance(ms) {
      offsetMs += ms;
    },
    deps: { env, db: createDb(env.DB), now },
  };
}
