/**
 * Issue 25, finding 3: under `--isolation none` only a job process's group was killed, so a
 * background process of the job that made its own session (`setsid`) outlived the job, with the
 * job's environment and files. Here the real agent runs a real job whose pre-plan hook starts
 * one such process and one daemon (double fork, its parent gone at once), and both must be dead
 * once the job is over, while the job itself succeeds.
 */
import { mkdtempSync, readFileSync } from "node:fs";
import path from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import {
  createWorkspace,
  queueRun,
  readRunLog,
  uploadConfiguration,
  waitForRun,
} from "../../e2e/helpers/e2e.ts";
import { type AgentProcess, writeHook } from "../../e2e/helpers/processes.ts";
import { useWorld } from "../../e2e/helpers/world.ts";

const world = useWorld();
let agent: AgentProcess;
let pids = "";

/** Running: present and not a zombie (a zombie waiting for a reaper counts as dead). */
function isAlive(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return false;
  }
}

beforeAll(async () => {
  // Outside the job's directory, which goes with the job.
  pids = path.join(mkdtempSync(path.join(world.dir, "pids-")), "pids");
  const dataDir = path.join(world.dir, "agent-data");
  writeHook(
    dataDir,
    "pre-plan",
    [
      `setsid sh -c 'echo "session=$$ $OUTPOST_RUN_ID" >> ${pids}; exec sleep 300' >/dev/null 2>&1 &`,
      `(setsid sh -c 'sleep 300 >/dev/null 2>&1 & echo "daemon=$! $OUTPOST_RUN_ID" >> ${pids}' &)`,
      // Both wrote their line before the hook ends, so the test can name them.
      "i=0",
      `while [ "$(grep -c "$OUTPOST_RUN_ID" ${pids} 2>/dev/null)" != 2 ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done`,
    ].join("\n"),
  );
  agent = world.startAgent({ dataDir, args: ["--isolation", "none"] });
  await agent.waitForOutput(/registered/, 60_000);
}, 120_000);

describe("--isolation none", () => {
  it("kills a job's setsid'd process and its daemon when the job's process ends; the job succeeds", async () => {
    expect(agent.output()).toMatch(/isolation[":= ]+none/);
    expect(agent.output()).not.toContain("no subreaper");
    const ws = await createWorkspace(world, "setsid-hook");
    await uploadConfiguration(world, ws, { "main.tf": 'resource "null_resource" "a" {}\n' });
    const runId = await queueRun(world, ws, { operation: "plan", isSpeculative: true });
    const run = await waitForRun(world, runId, ["planned_and_finished", "errored"], 60_000);
    expect(run.status, await readRunLog(world, runId, "plan")).toBe("planned_and_finished");
    const started = readFileSync(pids, "utf8")
      .split("\n")
      .filter((line) => line.endsWith(` ${runId}`))
      .map((line) => Number(/=(\d+) /.exec(line)?.[1]));
    expect(started).toHaveLength(2);
    for (const pid of started) {
      expect(pid).toBeGreaterThan(1);
      await expect.poll(() => isAlive(pid)).toBe(false);
    }
  });
});
