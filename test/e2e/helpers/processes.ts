/**
 * Real processes the end-to-end tests start (agents, the CLI, install commands as pasted), with their
 * output kept for the world's log dump, and the one way to wait on them: `vi.waitFor`.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { chmodSync, mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { setTimeout as delay } from "node:timers/promises";
import { vi } from "vitest";

/** The agent bin from the sources, as Node runs it (type stripping). */
export const AGENT_BIN = path.resolve(
  import.meta.dirname,
  "../../../agent/src/bin/outpost-agent.ts",
);
/**
 * The CLI as users run it: the single-file bundle the package ships (the global setup makes it
 * current). It starts in a third of the time the sources take, and the CLI tests start it ~80 times.
 */
export const CLI_BIN = path.resolve(import.meta.dirname, "../../../agent/dist/outpost.mjs");

export type Exit = { code: number | null; signal: NodeJS.Signals | null };

/** A running process and everything it printed. */
export type AgentProcess = {
  child: ChildProcess;
  /** What the log dump calls it. */
  label: string;
  /** Its data directory (hooks live in `<dataDir>/hooks`). */
  dataDir: string;
  output(): string;
  exited: Promise<Exit>;
  /**
   * Resolves once the output matches; throws at once if the process exits first, or after
   * `timeoutMs`.
   */
  waitForOutput(pattern: RegExp, timeoutMs?: number): Promise<void>;
  kill(signal?: NodeJS.Signals): void;
  /**
   * Stops it as an operator would: SIGCONT (were it frozen) and SIGTERM, then SIGKILL if it is
   * still running after `graceMs`. Resolves once it is gone.
   */
  stop(graceMs?: number): Promise<void>;
};

/** Whether the process has ended (by exit or by signal). */
export function hasExited(process: AgentProcess): boolean {
  return process.child.exitCode !== null || process.child.signalCode !== null;
}

/** Watches `child`'s output and exit; `kill` is how a signal reaches it (it or its group). */
export function watch(
  child: ChildProcess,
  options: { label: string; dataDir: string; kill: (signal: NodeJS.Signals) => void },
): AgentProcess {
  let text = "";
  // Set once its output streams ended too: nothing more will be printed.
  let isClosed = false;
  child.on("close", () => {
    isClosed = true;
  });
  child.stdout?.on("data", (d) => {
    text += d;
  });
  child.stderr?.on("data", (d) => {
    text += d;
  });
  const exited = new Promise<Exit>((resolve) =>
    child.on("exit", (code, signal) => resolve({ code, signal })),
  );
  const watched: AgentProcess = {
    child,
    label: options.label,
    dataDir: options.dataDir,
    output: () => text,
    exited,
    async waitForOutput(pattern, timeoutMs = 20_000) {
      const matched = await vi.waitFor(
        () => {
          if (pattern.test(text)) {
            return true;
          }
          if (isClosed) {
            return false;
          }
          throw new Error(`${options.label}: output never matched ${pattern} in ${timeoutMs} ms`);
        },
        { timeout: timeoutMs, interval: 50 },
      );
      if (!matched) {
        throw new Error(`${options.label} exited before its output matched ${pattern}:\n${text}`);
      }
    },
    kill(signal = "SIGTERM") {
      options.kill(signal);
    },
    async stop(graceMs = 10_000) {
      if (hasExited(watched)) {
        return;
      }
      options.kill("SIGCONT");
      options.kill("SIGTERM");
      const gone = await Promise.race([exited.then(() => true), delay(graceMs, false)]);
      if (!gone) {
        options.kill("SIGKILL");
        await exited;
      }
    },
  };
  return watched;
}

/** How one agent process is started. */
export type AgentOptions = {
  args?: string[];
  env?: Record<string, string>;
  /** Another agent token (the world's by default). */
  token?: string;
  /** Read the token from this file (`--token-file`) instead of `OUTPOST_TOKEN`. */
  tokenFile?: string;
  /** `<world dir>/agent-data` by default (shared by the agents that take the default). */
  dataDir?: string;
  /** Another agent entry point, e.g. a built single-file agent; the sources by default. */
  bin?: string;
  /** Another release mirror (the world's by default; null: none). */
  releaseMirror?: string | null;
  /** Another `--engine-keyring` (the world's by default; null: none). */
  engineKeyring?: string | null;
};

/** What an agent gets unless its options say otherwise: the world's parts. */
export type AgentDefaults = {
  label: string;
  address: string;
  token: string;
  dataDir: string;
  home: string;
  releaseMirror: string;
  engineKeyring: string;
  /** Added to the environment before `options.env`. */
  env: Record<string, string>;
};

/** Starts the real agent bin (the sources unless `options.bin`), not waiting for it. */
export function spawnAgent(options: AgentOptions, defaults: AgentDefaults): AgentProcess {
  const dataDir = options.dataDir ?? defaults.dataDir;
  mkdirSync(dataDir, { recursive: true });
  const mirror =
    options.releaseMirror === undefined ? defaults.releaseMirror : options.releaseMirror;
  const keyring =
    options.engineKeyring === undefined ? defaults.engineKeyring : options.engineKeyring;
  const child = spawn(
    process.execPath,
    [
      options.bin ?? AGENT_BIN,
      ...(mirror === null ? [] : ["--release-mirror", mirror]),
      ...(keyring === null ? [] : ["--engine-keyring", keyring]),
      ...["--data-dir", dataDir, "--hooks-dir", path.join(dataDir, "hooks")],
      ...(options.tokenFile === undefined ? [] : ["--token-file", options.tokenFile]),
      ...(options.args ?? []),
    ],
    {
      env: {
        PATH: process.env.PATH ?? "",
        HOME: defaults.home,
        OUTPOST_ADDRESS: defaults.address,
        ...(options.tokenFile === undefined
          ? { OUTPOST_TOKEN: options.token ?? defaults.token }
          : {}),
        ...defaults.env,
        ...options.env,
      },
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  return watch(child, { label: defaults.label, dataDir, kill: (signal) => child.kill(signal) });
}

/** Resolves with the exit, or throws (after killing it) when the process outlives `timeoutMs`. */
export async function exitWithin(agent: AgentProcess, timeoutMs: number): Promise<Exit> {
  const result = await Promise.race([agent.exited, delay(timeoutMs, null)]);
  if (result === null) {
    agent.kill("SIGKILL");
    throw new Error(`${agent.label} did not exit within ${timeoutMs} ms:\n${agent.output()}`);
  }
  return result;
}

/**
 * Runs `command` with `sh -c` in `cwd` and its own process group, as an operator pastes or types
 * it: the install commands the dashboard shows, `npm start`. The process is the shell; its exit
 * is that of the last command. Signals reach the whole group, even after the shell ended, so
 * what it left running (a server's child slow to stop) is reached too.
 */
export function runShellCommand(
  command: string,
  env: NodeJS.ProcessEnv,
  cwd: string,
  names: { label: string; dataDir: string },
): AgentProcess {
  const child = spawn("sh", ["-c", command], {
    env,
    cwd,
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
  });
  return watch(child, {
    ...names,
    kill: (signal) => {
      if (child.pid === undefined) {
        return;
      }
      try {
        process.kill(-child.pid, signal);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "ESRCH") {
          throw error;
        }
      }
    },
  });
}

/** What a CLI run printed and how it ended. */
export type CliResult = { code: number | null; stdout: string; stderr: string };

export type CliOptions = {
  /** Its HOME, with its config (XDG_CONFIG_HOME) under it: where `outpost login` keeps tokens. */
  home: string;
  /** Added to its environment (OUTPOST_ADDRESS, OUTPOST_TOKEN, ...). */
  env?: Record<string, string>;
  /** Written to its standard input, which is then closed (empty by default). */
  stdin?: string;
  /** Sees its whole stdout so far as it arrives (to interrupt it at the right moment). */
  onStdout?: (text: string, child: ChildProcess) => void;
  /** Sees its whole stderr so far as it arrives. */
  onStderr?: (text: string) => void;
  /** After this long it is killed (SIGKILL), so a hung prompt fails its test, not the run. */
  timeoutMs?: number;
};

/** Runs the `outpost` CLI as a user does (the bundled bin, a child process) to its end. */
export function runCli(args: string[], options: CliOptions): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI_BIN, ...args], {
      env: {
        PATH: process.env.PATH ?? "",
        HOME: options.home,
        XDG_CONFIG_HOME: path.join(options.home, ".config"),
        ...options.env,
      },
      stdio: ["pipe", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    const timer = setTimeout(() => child.kill("SIGKILL"), options.timeoutMs ?? 45_000);
    child.stdout.on("data", (d) => {
      stdout += d;
      options.onStdout?.(stdout, child);
    });
    child.stderr.on("data", (d) => {
      stderr += d;
      options.onStderr?.(stderr);
    });
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    child.stdin.end(options.stdin ?? "");
  });
}

/** Writes an executable hook script into the agent data dir's hooks folder. */
export function writeHook(dataDir: string, name: string, script: string): void {
  const hooks = path.join(dataDir, "hooks");
  mkdirSync(hooks, { recursive: true });
  const file = path.join(hooks, name);
  writeFileSync(file, `#!/bin/sh\n${script}\n`);
  chmodSync(file, 0o755);
}
