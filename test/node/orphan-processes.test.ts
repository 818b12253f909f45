/**
 * The engine never outlives its agent: a process standing in for the agent starts a job process
 * exactly as the runner does and is then SIGKILLed. The job process's watchdog sees its pipe to
 * the agent close, sends SIGINT (the engine's graceful stop, which persists state), SIGKILL after
 * the grace period, and removes the job's directory; with and without the bubblewrap sandbox.
 */
import { type ChildProcess, spawn } from "node:child_process";
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readlinkSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { JobIsolation } from "../../agent/src/job/containment.ts";
import type { JobSettings } from "../../agent/src/job/types.ts";
import type { JobDir } from "../../agent/src/job/workdirs.ts";
import { bubblewrapIsolation, NO_ISOLATION } from "./helpers/isolation.ts";
import { httpBackend, runStandin, STANDIN_PATH } from "./helpers/standin.ts";
import { StateServer } from "./helpers/state-server.ts";

const ORPHAN_AGENT = path.resolve(import.meta.dirname, "helpers/orphan-agent.ts");
const TOKEN = "op_run_orphan-token-0123456789";
const state = new StateServer({ ws_none: TOKEN, ws_bwrap: TOKEN, ws_stuck: TOKEN });
let base: string;
let sandboxed: JobIsolation;
const agents: ChildProcess[] = [];

beforeAll(async () => {
  await state.start();
  // Outside /tmp, which the sandbox replaces with a private one.
  base = mkdtempSync(path.join("/var/tmp", "outpost-orphans-"));
  sandboxed = await bubblewrapIsolation();
});

afterAll(async () => {
  for (const agent of agents) {
    agent.kill("SIGKILL");
  }
  await state.stop();
  rmSync(base, { recursive: true, force: true });
});

/** A job directory with an engine in the data dir's cache and a configuration of `resources`. */
function prepareJob(name: string, ws: string, resources: number) {
  const dataDir = path.join(base, name);
  const engineDir = path.join(dataDir, "engines", "terraform", "1.9.5");
  mkdirSync(engineDir, { recursive: true });
  const engine = path.join(engineDir, "terraform");
  copyFileSync(STANDIN_PATH, engine);
  const root = path.join(dataDir, "jobs", `run_${name}_apply-x`);
  const config = path.join(root, "config");
  for (const sub of ["home", "tmp", "config"]) {
    mkdirSync(path.join(root, sub), { recursive: true });
  }
  writeFileSync(`${root}.owner`, `${process.pid}\n`);
  const main = Array.from(
    { length: resources },
    (_, i) => `resource "null_resource" "r${i}" { value = "${i}" }\n`,
  );
  writeFileSync(path.join(config, "main.tf"), main.join(""));
  writeFileSync(path.join(config, "outpost_override.tf"), httpBackend(state.stateAddress(ws)));
  const dir: JobDir = { root, ownerFile: `${root}.owner` };
  return { dataDir, engine, root, config, dir };
}

function settings(dataDir: string, isolation: JobIsolation): JobSettings {
  return {
    dataDir,
    hooksDir: path.join(dataDir, "hooks"),
    hookTimeoutMs: 10_000,
    envForward: [],
    hostEnv: {},
    networkEnv: {},
    releaseMirror: null,
    allowFileRepos: false,
    cancelGraceMs: 10_000,
    maxConfigurationBytes: 1024,
    isolation,
  };
}

/** Starts the stand-in agent with one job process; resolves once `ready` shows in its output. */
async function orphanAgent(request: Record<string, unknown>, ready: RegExp) {
  const agent = spawn(process.execPath, [ORPHAN_AGENT, JSON.stringify(request)], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  agents.push(agent);
  let output = "";
  agent.stdout?.on("data", (d) => {
    output += d;
  });
  agent.stderr?.on("data", (d) => {
    output += d;
  });
  await expect.poll(() => output, { timeout: 20_000 }).toMatch(ready);
  return { agent, output: () => output };
}

/** Pids of the processes whose working directory is inside `root` (the job's, its watchdog's). */
function processesIn(root: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) {
      continue;
    }
    try {
      const cwd = readlinkSync(`/proc/${entry}/cwd`);
      if (cwd === root || cwd.startsWith(`${root}/`)) {
        pids.push(Number(entry));
      }
    } catch {
      // Gone, or not ours to read.
    }
  }
  return pids;
}

/** Waits (bounded) until no process works in `root`; returns how long that took. */
async function goneWithin(root: string, since: number, timeoutMs: number): Promise<number> {
  await expect.poll(() => processesIn(root), { timeout: timeoutMs, interval: 50 }).toEqual([]);
  return Date.now() - since;
}

/** Long enough that an engine still there when it ends was killed, not stopped gracefully. */
const GRACE_MS = 20_000;
const isolations: [string, () => JobIsolation][] = [
  ["none", () => ({ ...NO_ISOLATION, orphanGraceMs: GRACE_MS })],
  ["bwrap", () => ({ ...sandboxed, orphanGraceMs: GRACE_MS })],
];

describe.each(isolations)(
  "the agent SIGKILLed during an apply (isolation %s)",
  (mode, isolation) => {
    it("interrupts the engine within 2 s; it saves state and exits; nothing of the job is left", async () => {
      const ws = `ws_${mode}`;
      const job = prepareJob(`graceful-${mode}`, ws, 3);
      const env = {
        PATH: process.env.PATH ?? "",
        HOME: path.join(job.root, "home"),
        TF_HTTP_USERNAME: "outpost",
        TF_HTTP_PASSWORD: TOKEN,
        TF_HTTP_RETRY_WAIT_MIN: "0",
        STANDIN_APPLY_SLEEP_MS: "1500",
        STANDIN_PERSIST: "end",
      };
      expect((await runStandin(job.config, ["init"], env)).code).toBe(0);
      expect((await runStandin(job.config, ["plan", "-out=plan.tfplan"], env)).code).toBe(0);
      const { agent, output } = await orphanAgent(
        {
          command: job.engine,
          args: ["apply", "-input=false", "plan.tfplan"],
          cwd: job.config,
          env,
          settings: settings(job.dataDir, isolation()),
          dir: job.dir,
        },
        /null_resource\.r0: Creating\.\.\./,
      );
      expect(processesIn(job.root).length).toBeGreaterThan(0);
      const killedAt = Date.now();
      agent.kill("SIGKILL");

      // The current resource finishes (1.5 s), then the engine persists and exits on its own:
      // well before the grace period ends, when the watchdog's SIGKILL would have ended it. The
      // wait outlasts the grace period, so an engine that only the SIGKILL stopped fails here.
      const took = await goneWithin(job.root, killedAt, GRACE_MS + 10_000);
      expect(took).toBeLessThan(GRACE_MS);
      const saved = state.currentState(ws) as {
        serial: number;
        resources: unknown[];
        outputs: { standin_interrupted_at?: { value: string } };
      };
      expect(saved.resources).toHaveLength(1);
      expect(saved.serial).toBe(1);
      const interruptedAt = Number(saved.outputs.standin_interrupted_at?.value);
      expect(interruptedAt - killedAt).toBeGreaterThanOrEqual(0);
      expect(interruptedAt - killedAt).toBeLessThan(2_000);
      expect(state.workspaces.get(ws)?.lock).toBeNull();
      // The watchdog removed the job's directory and its owner file on its way out.
      await expect.poll(() => existsSync(job.root)).toBe(false);
      expect(existsSync(job.dir.ownerFile)).toBe(false);
      expect(output()).not.toContain("orphan-agent: exited");
    });
  },
);

describe.each(isolations)("an engine that ignores SIGINT (isolation %s)", (mode, isolation) => {
  it("is SIGKILLed once the grace period after the agent's death is over", async () => {
    const job = prepareJob(`stuck-${mode}`, "ws_stuck", 1);
    const env = {
      PATH: process.env.PATH ?? "",
      HOME: path.join(job.root, "home"),
      TF_HTTP_USERNAME: "outpost",
      TF_HTTP_PASSWORD: TOKEN,
      STANDIN_PLAN_SLEEP_MS: "120000",
      STANDIN_IGNORE_SIGINT: "1",
    };
    expect((await runStandin(job.config, ["init"], env)).code).toBe(0);
    const graceMs = 2_000;
    const { agent, output } = await orphanAgent(
      {
        command: job.engine,
        args: ["plan", "-input=false", "-lock=false"],
        cwd: job.config,
        env,
        settings: settings(job.dataDir, { ...isolation(), orphanGraceMs: graceMs }),
        dir: job.dir,
      },
      /standin: planning/,
    );
    const killedAt = Date.now();
    agent.kill("SIGKILL");
    const took = await goneWithin(job.root, killedAt, graceMs + 20_000);
    // It got its grace period (SIGINT first, ignored), then SIGKILL, not much later.
    expect(took).toBeGreaterThanOrEqual(graceMs - 100);
    expect(took).toBeLessThan(graceMs + 10_000);
    expect(output()).toContain("standin: planning");
    await expect.poll(() => existsSync(job.root)).toBe(false);
  });
});
