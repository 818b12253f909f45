/**
 * The engine's state calls outlive a coordinator outage, end to end: the agent's backend override
 * sets the `http` backend's retry settings (retry_max 12, waits 1 s doubling up to 30 s: 241 s in
 * all), and the stand-in terraform retries as terraform's backend client does. The coordinator is
 * stopped while the engine is planning, so its state unlock (and then the plan's upload) meets a
 * dead coordinator; the outage lasts 20 s, far past the 3 s terraform's default retries (2, from
 * 1 s) survive, and the run still succeeds. A two-minute outage works the same way; 20 s keeps the
 * test short and proves the retries carry the call, since the defaults give up after 3 s.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import { STATE_RETRY } from "../../agent/src/engines/terraform-files.ts";
import {
  createWorkspace,
  queueRun,
  readRunLog,
  uploadConfiguration,
  waitForLog,
  waitForRun,
} from "./helpers/e2e.ts";
import { useWorld } from "./helpers/world.ts";

const OUTAGE_MS = 20_000;
const world = useWorld({ agents: [{}] });

/** Seconds one state call keeps retrying: the backoff of terraform's http backend client. */
function retryBudgetSeconds(retry: {
  max: number;
  waitMinSeconds: number;
  waitMaxSeconds: number;
}) {
  let total = 0;
  for (let attempt = 0; attempt < retry.max; attempt++) {
    total += Math.min(retry.waitMaxSeconds, retry.waitMinSeconds * 2 ** attempt);
  }
  return total;
}

describe("a coordinator outage during a plan", () => {
  it("is ridden out by the engine's state calls, which terraform's default retries would not survive", async () => {
    expect(retryBudgetSeconds(STATE_RETRY)).toBeGreaterThanOrEqual(120);
    const defaults = { max: 2, waitMinSeconds: 1, waitMaxSeconds: 30 };
    expect(retryBudgetSeconds(defaults) * 1000).toBeLessThan(OUTAGE_MS);

    const ws = await createWorkspace(world, "outage", {
      env: { STANDIN_PLAN_SLEEP_MS: "1500" },
    });
    await uploadConfiguration(world, ws, {
      "main.tf": 'resource "null_resource" "a" { value = "1" }\n',
    });
    const runId = await queueRun(world, ws, { operation: "plan" });
    await waitForLog(world, runId, "plan", "standin: planning");
    // The engine holds the state lock and unlocks 1.5 s from now: into the outage.
    await world.coordinator.stop();
    await sleep(OUTAGE_MS);
    await world.coordinator.restart();

    const run = await waitForRun(world, runId, ["planned_and_finished", "errored"], 90_000);
    expect(run.status, String(run.statusReason)).toBe("planned_and_finished");
    const log = await readRunLog(world, runId, "plan");
    expect(log).toContain("Plan: 1 to add, 0 to change, 0 to destroy.");
    // The lock was released through the retries: a new plan takes it at once.
    const next = await queueRun(world, ws, { operation: "plan" });
    expect(
      (await waitForRun(world, next, ["planned_and_finished", "errored"], 60_000)).status,
    ).toBe("planned_and_finished");
  }, 180_000);
});
