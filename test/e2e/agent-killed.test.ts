/**
 * The engine never outlives its agent, end to end: two real agents (one with `--isolation bwrap`,
 * one with `none`, both `--orphan-grace 5`) are SIGKILLed in the middle of a slow apply. Each
 * engine gets SIGINT from its watchdog within 2 s, persists what it applied (the stand-in's
 * STANDIN_PERSIST=end writes state only on its way out, as terraform does when interrupted),
 * and no process of the job is left after the grace period. The coordinator stores that state as
 * a version of the run, and once the pool declares the agent lost the run ends `errored` with
 * "agent lost during apply; state saved at serial N".
 */
import { readdirSync, readFileSync, readlinkSync } from "node:fs";
import { describe, expect, it } from "vitest";
import {
  createWorkspace,
  expectStatus,
  type Json,
  queueRun,
  stateVersions,
  uploadConfiguration,
  waitForLog,
  waitForRun,
} from "./helpers/e2e.ts";
import { useWorld } from "./helpers/world.ts";

const ORPHAN_GRACE_S = 5;
const RESOURCES = 40;
// The shortest liveness windows a pool allows: unknown after 10 s, errored 30 s later.
const world = useWorld({ pool: { unknownAfterSeconds: 10, erroredAfterSeconds: 30 } });

/**
 * Host processes that belong to jobs of the agent whose data directory is `dataDir`: working in
 * it (the engine, its watchdog) or started from it (the engine binary, bubblewrap's command).
 */
function jobProcesses(dataDir: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync("/proc").filter((name) => /^\d+$/.test(name))) {
    try {
      const cwd = readlinkSync(`/proc/${entry}/cwd`);
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, "utf8");
      if (cwd.startsWith(`${dataDir}/`) || cmdline.includes(`${dataDir}/`)) {
        pids.push(Number(entry));
      }
    } catch {
      // Gone, or not ours to read.
    }
  }
  return pids;
}

/** An agent that has started a slow apply: its run is applying and the engine has begun. */
async function slowApplyOn(mode: "bwrap" | "none") {
  const dataDir = world.freshDir(`killed-${mode}`);
  const agent = world.startAgent({
    dataDir,
    args: ["--isolation", mode, "--orphan-grace", String(ORPHAN_GRACE_S)],
  });
  await agent.waitForOutput(/registered/);
  const ws = await createWorkspace(world, `killed-${mode}`, {
    autoApply: true,
    env: { STANDIN_APPLY_SLEEP_MS: "2500", STANDIN_PERSIST: "end" },
  });
  // 100 s in all: still running when the second agent has started its own, even on a loaded
  // host (the SIGKILL interrupts both, so the test does not wait for it).
  const main = Array.from(
    { length: RESOURCES },
    (_, i) => `resource "null_resource" "r${i}" { value = "${i}" }\n`,
  );
  await uploadConfiguration(world, ws, { "main.tf": main.join("") });
  const runId = await queueRun(world, ws, { operation: "apply" });
  await waitForRun(world, runId, ["applying"]);
  await waitForLog(world, runId, "apply", "null_resource.r0: Creating...");
  expect(jobProcesses(dataDir).length).toBeGreaterThan(0);
  return { mode, agent, dataDir, ws, runId, serial: 0 };
}

function downloadState(ws: string, id: string): Promise<Json> {
  return expectStatus(
    world.api("GET", `/api/v1/workspaces/${ws}/state-versions/${id}/download`),
    200,
  );
}

describe("the agent SIGKILLed during a slow apply", () => {
  it("stops every job process within the grace period, stores the state written on interrupt, and errors the run saying so", async () => {
    // One at a time, so each agent takes its own workspace's run.
    const jobs = [await slowApplyOn("bwrap"), await slowApplyOn("none")];
    const killedAt = Date.now();
    for (const job of jobs) {
      job.agent.kill("SIGKILL");
    }

    for (const job of jobs) {
      // SIGINT at once; the current resource finishes (2.5 s), the engine persists and exits.
      await expect
        .poll(() => jobProcesses(job.dataDir), {
          timeout: ORPHAN_GRACE_S * 1000 + 3_000,
          interval: 100,
        })
        .toEqual([]);
      // The watchdog removed the job's directory on its way out.
      expect(readdirSync(`${job.dataDir}/jobs`)).toEqual([]);
    }
    const goneAfter = Date.now() - killedAt;
    expect(goneAfter).toBeLessThan(ORPHAN_GRACE_S * 1000 + 3_000);

    for (const job of jobs) {
      const versions = await stateVersions(world, job.ws);
      expect(versions, job.mode).toHaveLength(1);
      const [version] = versions as [Json];
      expect(version).toMatchObject({ runId: job.runId, isCurrent: true });
      job.serial = Number(version.serial);
      const state = (await downloadState(job.ws, String(version.id))) as {
        resources: { name: string }[];
        outputs: { standin_interrupted_at: { value: string } };
      };
      // What was applied before the interrupt, not all of it: one snapshot per finished resource.
      expect(state.resources.length).toBe(job.serial);
      expect(job.serial).toBeGreaterThanOrEqual(1);
      expect(job.serial).toBeLessThan(RESOURCES);
      // The watchdog's SIGINT reached the engine within 2 s of the agent's death.
      const interruptedAt = Number(state.outputs.standin_interrupted_at.value);
      expect(interruptedAt - killedAt).toBeGreaterThanOrEqual(0);
      expect(interruptedAt - killedAt).toBeLessThan(2_000);
    }

    // The pool declares the agents lost (unknown after 10 s, errored 30 s later).
    for (const job of jobs) {
      const run = await waitForRun(world, job.runId, ["errored", "applied"], 75_000);
      expect(run.status, job.mode).toBe("errored");
      expect(run.statusReason).toBe(`agent lost during apply; state saved at serial ${job.serial}`);
    }
  }, 150_000);
});
