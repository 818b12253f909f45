import { readFileSync, rmSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startProcess } from "../../agent/src/exec/process.ts";
import { httpBackend, runStandin, STANDIN_PATH, tempConfig } from "./helpers/standin.ts";
import { StateServer } from "./helpers/state-server.ts";

const TOKEN = "op_run_exec-token";
const server = new StateServer({ ws_x: TOKEN });
const creds = { TF_HTTP_USERNAME: "outpost", TF_HTTP_PASSWORD: TOKEN };
let dir: string;

beforeAll(async () => {
  await server.start();
  dir = tempConfig({
    "main.tf": 'resource "x" "a" { value = "1" }\n',
    "o_override.tf": httpBackend(server.stateAddress("ws_x")),
  });
  expect((await runStandin(dir, ["init"], creds)).code).toBe(0);
});
afterAll(async () => {
  await server.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** Starts the stand-in's plan with a long sleep and resolves once it is planning. */
async function startSlowPlan(extraEnv: Record<string, string>) {
  let output = "";
  let notify: () => void = () => {};
  const planning = new Promise<void>((resolve) => {
    notify = resolve;
  });
  const child = startProcess({
    command: STANDIN_PATH,
    args: ["plan", "-input=false"],
    cwd: dir,
    env: { PATH: process.env.PATH ?? "", ...creds, STANDIN_PLAN_SLEEP_MS: "60000", ...extraEnv },
    onOutput: (chunk) => {
      output += chunk.toString();
      if (output.includes("standin: planning")) {
        notify();
      }
    },
  });
  await planning;
  return { child, output: () => output };
}

/** Running (a zombie waiting for a reaper that may not exist in a container counts as dead). */
function isAlive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return !/^\d+ \(.*\) Z/.test(stat);
  } catch {
    return false;
  }
}

describe("startProcess", () => {
  it("merges stdout and stderr and passes exactly the given environment", async () => {
    let output = "";
    const child = startProcess({
      command: process.execPath,
      args: [
        "-e",
        "console.log(JSON.stringify(Object.keys(process.env).sort())); console.error('to-stderr'); process.exit(7)",
      ],
      cwd: dir,
      env: { ONLY_THIS: "1" },
      onOutput: (c) => {
        output += c.toString();
      },
    });
    expect(await child.exited).toEqual({ code: 7, signal: null });
    expect(output).toContain('["ONLY_THIS"]');
    expect(output).toContain("to-stderr");
  });

  it("rejects when the command cannot be started", async () => {
    const child = startProcess({
      command: "/nonexistent/terraform",
      args: [],
      cwd: dir,
      env: {},
      onOutput: () => {},
    });
    await expect(child.exited).rejects.toThrow(/cannot start/);
  });

  it("cancel: the engine gets SIGINT, stops gracefully (releasing its lock) and exits 1", async () => {
    const { child, output } = await startSlowPlan({});
    expect(server.workspaces.get("ws_x")?.lock).not.toBeNull();
    const started = Date.now();
    child.cancel(30_000);
    expect(await child.exited).toEqual({ code: 1, signal: null });
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(output()).toContain("Interrupt received.");
    expect(output()).toContain("Error: execution halted");
    expect(server.workspaces.get("ws_x")?.lock).toBeNull();
  });

  it("cancel: a second SIGINT follows after the grace period and ends a stuck engine", async () => {
    const { child, output } = await startSlowPlan({ STANDIN_HANG_ON_INTERRUPT: "1" });
    const started = Date.now();
    child.cancel(400);
    child.cancel(400); // repeated cancels must not turn into an immediate second interrupt
    expect(await child.exited).toEqual({ code: 1, signal: null });
    expect(Date.now() - started).toBeGreaterThanOrEqual(380);
    expect(output()).toContain("Two interrupts received. Exiting immediately.");
    server.workspaces.delete("ws_x"); // the engine died holding the lock, as terraform would
  });

  it("force: SIGKILL ends an engine that ignores SIGINT", async () => {
    const { child, output } = await startSlowPlan({ STANDIN_IGNORE_SIGINT: "1" });
    child.cancel(60_000);
    await expect.poll(output, { timeout: 10_000, interval: 20 }).toContain("ignoring SIGINT");
    child.forceKill();
    expect(await child.exited).toEqual({ code: null, signal: "SIGKILL" });
    server.workspaces.delete("ws_x");
  });

  it("signals reach the whole process group, and strays are killed when the leader exits", async () => {
    let output = "";
    const script = "sleep 300 & echo child=$!; wait";
    const child = startProcess({
      command: "/bin/sh",
      args: ["-c", script],
      cwd: dir,
      env: { PATH: "/usr/bin:/bin" },
      onOutput: (c) => {
        output += c.toString();
      },
    });
    await expect.poll(() => /child=(\d+)/.exec(output)?.[1]).toBeDefined();
    const grandchild = Number(/child=(\d+)/.exec(output)?.[1]);
    expect(isAlive(grandchild)).toBe(true);
    child.forceKill();
    await child.exited;
    await expect.poll(() => isAlive(grandchild)).toBe(false);

    let out2 = "";
    const leader = startProcess({
      command: "/bin/sh",
      args: ["-c", "sleep 300 >/dev/null 2>&1 & echo child=$!"],
      cwd: dir,
      env: { PATH: "/usr/bin:/bin" },
      onOutput: (c) => {
        out2 += c.toString();
      },
    });
    expect((await leader.exited).code).toBe(0);
    const stray = Number(/child=(\d+)/.exec(out2)?.[1]);
    await expect.poll(() => isAlive(stray)).toBe(false);
  });

  it("unsandboxed, a process that left the job's session (setsid, orphaned) is killed when the leader exits", async () => {
    // Issue 25, finding 3: only the process group was killed, so this one outlived the job.
    let output = "";
    const script = [
      // Its own session and group, directly below the leader…
      "setsid sleep 300 >/dev/null 2>&1 & echo session=$!",
      // …and a daemon's double fork: its parent is gone before the leader exits.
      "(setsid sh -c 'sleep 300 >/dev/null 2>&1 & echo daemon=$!' &)",
      "sleep 0.2",
    ].join("\n");
    const leader = startProcess({
      command: "/bin/sh",
      args: ["-c", script],
      cwd: dir,
      env: { PATH: "/usr/bin:/bin" },
      onOutput: (c) => {
        output += c.toString();
      },
    });
    expect((await leader.exited).code).toBe(0);
    const pids = ["session", "daemon"].map((name) =>
      Number(new RegExp(`${name}=(\\d+)`).exec(output)?.[1]),
    );
    expect(
      pids.every((pid) => pid > 1),
      output,
    ).toBe(true);
    for (const pid of pids) {
      await expect.poll(() => isAlive(pid)).toBe(false);
    }
  });
});
