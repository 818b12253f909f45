/**
 * Recovery without a human, end to end: a real agent SIGKILLed mid-apply and started again with
 * the same data directory names its predecessor at registration, and the pool ends the dead
 * agent's apply at once (its liveness windows are minutes long here, so nothing else could):
 * the state the watchdog made the engine save is kept, the run says at which serial, and the
 * closing line says the agent restarted. The workspace is free again without a cancel.
 */
import { describe, expect, it, vi } from "vitest";
import {
  createWorkspace,
  queueRun,
  readRunLog,
  stateVersions,
  uploadConfiguration,
  waitForLog,
  waitForRun,
} from "./helpers/e2e.ts";
import { useWorld } from "./helpers/world.ts";

// Unknown after 2 min, errored 5 min later: far beyond this test's bounds.
const world = useWorld({ pool: { unknownAfterSeconds: 120, erroredAfterSeconds: 300 } });

describe("an agent restarted with the same data directory", () => {
  it("ends its predecessor's apply at once, keeping the state the engine saved", async () => {
    const dataDir = world.freshDir("restart");
    const first = world.startAgent({ dataDir, args: ["--orphan-grace", "5"] });
    await first.waitForOutput(/registered/);
    const ws = await createWorkspace(world, "restart", {
      autoApply: true,
      env: { STANDIN_APPLY_SLEEP_MS: "1500", STANDIN_PERSIST: "end" },
    });
    const main = Array.from(
      { length: 40 },
      (_, i) => `resource "null_resource" "r${i}" { value = "${i}" }\n`,
    );
    await uploadConfiguration(world, ws, { "main.tf": main.join("") });
    const runId = await queueRun(world, ws, { operation: "apply" });
    await waitForLog(world, runId, "apply", "null_resource.r0: Creating...", 60_000);

    first.kill("SIGKILL");
    // The watchdog interrupts the engine, which saves what it applied with the run token.
    const version = await vi.waitFor(
      async () => {
        const versions = await stateVersions(world, ws);
        expect(versions).toHaveLength(1);
        return versions[0];
      },
      { timeout: 20_000, interval: 200 },
    );
    const serial = Number(version?.serial);
    expect(serial).toBeGreaterThanOrEqual(1);

    const second = world.startAgent({ dataDir });
    await second.waitForOutput(/registered/);
    const run = await waitForRun(world, runId, ["errored", "applied"], 20_000);
    expect(run.status).toBe("errored");
    expect(run.statusReason).toBe(`agent lost during apply; state saved at serial ${serial}`);
    expect(await readRunLog(world, runId, "apply")).toMatch(
      /Outpost: the apply ended without its agent's report: agent agt_\w+ restarted \(as agt_\w+, same data directory\) while running this job\./,
    );
    // The workspace is not blocked: the restarted agent takes the next run.
    const next = await queueRun(world, ws, { operation: "plan" });
    expect(
      (await waitForRun(world, next, ["planned_and_finished", "errored"], 60_000)).status,
    ).toBe("planned_and_finished");
  }, 180_000);
});
