/**
 * Job directories a dead agent left behind are removed when an agent starts (never resumed), and
 * logged; directories whose owner (another agent on the same data dir, a watchdog still stopping
 * its engine) still runs are left alone.
 */
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createJobDir, recordOwner, removeStaleJobDirs } from "../../agent/src/job/workdirs.ts";
import { AGENT_BIN } from "../e2e/helpers/processes.ts";

let base: string;

beforeAll(() => {
  base = mkdtempSync(path.join(tmpdir(), "outpost-jobdirs-"));
});
afterAll(() => {
  rmSync(base, { recursive: true, force: true });
});

/** A pid that is certainly not running: a process that has exited and been reaped. */
async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ["-e", ""]);
  await new Promise((resolve) => child.on("close", resolve));
  return child.pid ?? 0;
}

/** A job dir as a dead agent leaves it: secrets inside, owner file naming dead pids. */
async function leftBehind(dataDir: string, name: string, owners: number[]): Promise<string> {
  const root = path.join(dataDir, "jobs", name);
  mkdirSync(path.join(root, "config"), { recursive: true });
  writeFileSync(path.join(root, "config", "outpost.auto.tfvars.json"), '{"secret":"s3cr3t"}');
  writeFileSync(`${root}.owner`, owners.map((p) => `${p}\n`).join(""));
  return root;
}

describe("removeStaleJobDirs", () => {
  it("removes directories whose agent and watchdogs are all gone, and keeps live ones", async () => {
    const dataDir = path.join(base, "data-1");
    const dead = await deadPid();
    const stale = await leftBehind(dataDir, "run_a_apply-1", [dead, dead]);
    // A watchdog still stopping its engine after the agent died: the directory is in use.
    const live = spawn(process.execPath, ["-e", "setTimeout(() => {}, 60000)"]);
    const stopping = await leftBehind(dataDir, "run_b_apply-2", [dead, live.pid ?? 0]);
    // Another live agent sharing the data dir owns this one.
    const mine = await createJobDir(dataDir, "run_c:plan");
    recordOwner(mine, live.pid ?? 0);
    // No owner file at all (an agent from before owner files): nothing vouches for it.
    const unowned = path.join(dataDir, "jobs", "run_d_plan-3");
    mkdirSync(unowned);
    // An owner file whose directory is already gone.
    writeFileSync(path.join(dataDir, "jobs", "run_e_plan-4.owner"), `${dead}\n`);
    try {
      const result = await removeStaleJobDirs(dataDir);
      expect(result.removed.sort()).toEqual([stale, unowned].sort());
      expect(result.inUse.map((u) => u.dir).sort()).toEqual([mine.root, stopping].sort());
      expect(existsSync(stale)).toBe(false);
      expect(existsSync(`${stale}.owner`)).toBe(false);
      expect(existsSync(stopping)).toBe(true);
      expect(readdirSync(path.join(dataDir, "jobs")).sort()).toEqual(
        [
          path.basename(stopping),
          `${path.basename(stopping)}.owner`,
          path.basename(mine.root),
          `${path.basename(mine.root)}.owner`,
        ].sort(),
      );
    } finally {
      live.kill("SIGKILL");
    }
  });

  it("ignores its own pid (pids repeat across container restarts) and a missing jobs dir", async () => {
    const dataDir = path.join(base, "data-2");
    expect(await removeStaleJobDirs(dataDir)).toEqual({ removed: [], inUse: [] });
    const root = await leftBehind(dataDir, "run_f_plan-5", [process.pid]);
    expect((await removeStaleJobDirs(dataDir)).removed).toEqual([root]);
  });
});

describe("an agent starting on a data dir a dead agent used", () => {
  it("removes the dead agent's job directories before it takes work, and logs each", async () => {
    const dataDir = path.join(base, "data-3");
    const stale = await leftBehind(dataDir, "run_g_apply-6", [await deadPid()]);
    // The coordinator is unreachable: the cleanup comes first, registration then retries.
    const agent = spawn(
      process.execPath,
      [AGENT_BIN, "--data-dir", dataDir, "--isolation", "none", "--log-json"],
      {
        env: {
          PATH: process.env.PATH ?? "",
          HOME: base,
          OUTPOST_ADDRESS: "http://127.0.0.1:9",
          OUTPOST_TOKEN: "op_agent_cleanup-test-token",
        },
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    let output = "";
    agent.stdout?.on("data", (d) => {
      output += d;
    });
    try {
      await expect
        .poll(() => output, { timeout: 20_000 })
        .toContain("removed a job directory left by an agent that died");
      const line = output.split("\n").find((l) => l.includes("removed a job directory"));
      expect(JSON.parse(line ?? "{}")).toMatchObject({ level: 40, dir: stale });
      expect(existsSync(stale)).toBe(false);
    } finally {
      agent.kill("SIGKILL");
    }
  });
});
