import { type ChildProcess, spawn } from "node:child_process";
import { closeSync, openSync } from "node:fs";

/** How a child process ended. */
export type ProcessExit = {
  /** Exit status, or null when it died of a signal. */
  code: number | null;
  signal: NodeJS.Signals | null;
};

/** A child running in its own process group (so signals reach its children, e.g. providers). */
export type RunningProcess = {
  readonly pid: number;
  /** Resolves once the process exited and its output was fully delivered. */
  readonly exited: Promise<ProcessExit>;
  /** SIGINT to the whole group now, and again after `graceMs` if it is still running; idempotent. */
  cancel(graceMs: number): void;
  /** SIGKILL to the whole group. */
  forceKill(): void;
};

export type StartOptions = {
  command: string;
  args: string[];
  cwd: string;
  env: Record<string, string>;
  /** Receives stdout and stderr bytes as they arrive (merged, in arrival order). */
  onOutput: (chunk: Buffer) => void;
  /** When set, stdout goes to this file instead of `onOutput` (e.g. `show -json`). */
  stdoutFile?: string;
  /** Written to stdin, which is then closed (e.g. a secret `pulumi config set` reads there). */
  stdinText?: string;
};

/**
 * Spawns `command` detached in a new process group with exactly `env` (nothing inherited).
 * Rejects `exited` if the command cannot be started. Once the group leader exits, anything it
 * left running in its group is SIGKILLed, so no job leaves stray processes behind.
 */
export function startProcess(options: StartOptions): RunningProcess {
  const stdoutFd = options.stdoutFile === undefined ? null : openSync(options.stdoutFile, "w");
  let child: ChildProcess;
  try {
    child = spawn(options.command, options.args, {
      cwd: options.cwd,
      env: options.env,
      detached: true,
      stdio: [options.stdinText === undefined ? "ignore" : "pipe", stdoutFd ?? "pipe", "pipe"],
    });
  } finally {
    if (stdoutFd !== null) {
      closeSync(stdoutFd);
    }
  }
  // A command that exits without reading its stdin must not crash the agent with EPIPE.
  child.stdin?.on("error", () => undefined);
  child.stdin?.end(options.stdinText);
  child.stdout?.on("data", options.onOutput);
  child.stderr?.on("data", options.onOutput);

  let exited = false;
  let secondInterrupt: NodeJS.Timeout | null = null;
  const signalGroup = (signal: NodeJS.Signals) => {
    if (child.pid === undefined) {
      return;
    }
    try {
      process.kill(-child.pid, signal);
    } catch {
      // ESRCH: the group is already gone.
    }
  };

  const done = new Promise<ProcessExit>((resolve, reject) => {
    child.once("error", (error) => {
      if (child.pid === undefined) {
        reject(new Error(`cannot start ${options.command}: ${error.message}`, { cause: error }));
      }
    });
    child.once("exit", () => {
      exited = true;
      if (secondInterrupt) {
        clearTimeout(secondInterrupt);
      }
      signalGroup("SIGKILL");
    });
    child.once("close", (code, signal) => resolve({ code, signal }));
  });

  return {
    pid: child.pid ?? -1,
    exited: done,
    cancel(graceMs) {
      // Idempotent: a repeated cancel must not become terraform's "two interrupts" early.
      if (exited || secondInterrupt !== null) {
        return;
      }
      signalGroup("SIGINT");
      secondInterrupt = setTimeout(() => {
        if (!exited) {
          signalGroup("SIGINT");
        }
      }, graceMs);
    },
    forceKill() {
      if (!exited) {
        signalGroup("SIGKILL");
      }
    },
  };
}
