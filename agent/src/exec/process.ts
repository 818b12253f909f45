import { type ChildProcess, spawn } from "node:child_process";
import path from "node:path";
import { createInterface } from "node:readline";
import type { Readable } from "node:stream";
import { subreaperLauncher } from "./subreaper.ts";
import type { WatchdogSpec } from "./watchdog-main.ts";

/** Set by the build (agent/scripts/build.ts): the watchdog bundled as one ES module. */
declare const OUTPOST_WATCHDOG_SOURCE: string | undefined;

/** How a child process ended. */
export type ProcessExit = {
  /** Exit status, or null when it died of a signal. */
  code: number | null;
  signal: NodeJS.Signals | null;
};

/** A child running in its own process group (so signals reach its children, e.g. providers). */
export type RunningProcess = {
  /** Resolves once the process exited and its output was fully delivered. */
  readonly exited: Promise<ProcessExit>;
  /** SIGINT to the whole group now, and again after `graceMs` if it is still running; idempotent. */
  cancel(graceMs: number): void;
  /** SIGKILL to the whole group. */
  forceKill(): void;
};

/**
 * Where a job's process runs and what becomes of it should the agent die. Built per job by
 * `job/containment.ts`; the defaults (no sandbox, 30 s) suit processes outside a job.
 */
export type Containment = {
  /** bubblewrap and its arguments up to `--`; absent: the process runs unsandboxed. */
  sandbox?: { bwrap: string; args: string[] } | null;
  /** If the agent dies: SIGINT to the process group, SIGKILL this long after. */
  orphanGraceMs?: number;
  /** Removed by the watchdog once an orphaned process ended (the job's directory). */
  orphanCleanup?: string[];
  /** Told each watchdog's pid, so a restarted agent can tell a directory is still in use. */
  onWatchdog?: (pid: number) => void;
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
  containment?: Containment;
};

const DEFAULT_ORPHAN_GRACE_MS = 30_000;

/**
 * How to start a watchdog: the built agent carries it as source for `node -e`; from the
 * sources it is the module file itself.
 */
function watchdogCommand(): string[] {
  return typeof OUTPOST_WATCHDOG_SOURCE === "string"
    ? ["--input-type=module", "-e", OUTPOST_WATCHDOG_SOURCE]
    : [path.join(import.meta.dirname, "watchdog-main.ts")];
}

type WatchdogStatus =
  | { started: { pid: number } }
  | { exit: ProcessExit }
  | { error: string }
  | Record<string, unknown>;

/**
 * The watchdog's command line. Unsandboxed, it starts through a {@link subreaperLauncher} where
 * there is one, so that processes leaving the job's session are re-parented to it (a sandbox's
 * PID namespace already ends with its first process).
 */
function watchdogArgv(isSandboxed: boolean): [string, string[]] {
  const launcher = isSandboxed ? null : subreaperLauncher();
  if (launcher === null) {
    return [process.execPath, watchdogCommand()];
  }
  return [launcher.command, [...launcher.args, process.execPath, ...watchdogCommand()]];
}

/**
 * Starts `command` through a watchdog (`watchdog-main.ts`) in a new process group with exactly
 * `env` (nothing inherited), sandboxed when `containment.sandbox` says so. Rejects `exited` if
 * the command cannot be started. Once the group leader exits, anything it left running is
 * SIGKILLed: its group and, unsandboxed, every descendant of the watchdog, which is a subreaper
 * where the host allows (`subreaper.ts`), so even a process that left the session (`setsid`)
 * goes; a sandbox's PID namespace ends with its first process. So no job leaves stray processes
 * behind. If this process dies, however it dies, the watchdog sends the group SIGINT and,
 * `orphanGraceMs` later, SIGKILL.
 */
export function startProcess(options: StartOptions): RunningProcess {
  const containment = options.containment ?? {};
  const [program, argv] = watchdogArgv(Boolean(containment.sandbox));
  const watchdog = spawn(program, argv, {
    cwd: options.cwd,
    env: {},
    detached: true,
    stdio: ["pipe", "pipe", "pipe", "pipe"],
  });
  if (watchdog.pid !== undefined) {
    containment.onWatchdog?.(watchdog.pid);
  }
  const spec: WatchdogSpec = {
    command: options.command,
    args: options.args,
    cwd: options.cwd,
    env: options.env,
    stdoutFile: options.stdoutFile ?? null,
    stdinText: options.stdinText ?? null,
    sandbox: containment.sandbox ?? null,
    orphanGraceMs: containment.orphanGraceMs ?? DEFAULT_ORPHAN_GRACE_MS,
    orphanCleanup: containment.orphanCleanup ?? [],
  };
  // A watchdog that died early closes its end: its failure is reported through `exited`.
  watchdog.stdin?.on("error", () => {});
  watchdog.stdin?.write(`${JSON.stringify(spec)}\n`);
  watchdog.stdout?.on("data", options.onOutput);
  watchdog.stderr?.on("data", options.onOutput);

  let childPid: number | null = null;
  let isDone = false;
  let secondInterrupt: NodeJS.Timeout | null = null;
  const statuses: WatchdogStatus[] = [];
  const statusLines = watchdog.stdio[3] as Readable | null;
  if (statusLines) {
    createInterface({ input: statusLines }).on("line", (line) => {
      const parsed = parseStatus(line);
      if (parsed !== null) {
        statuses.push(parsed);
        if ("started" in parsed && typeof parsed.started === "object") {
          childPid = (parsed.started as { pid: number }).pid;
        }
      }
    });
  }
  const send = (signal: "SIGINT" | "SIGKILL") => {
    if (!isDone) {
      watchdog.stdin?.write(`${JSON.stringify({ signal })}\n`);
    }
  };
  const exited = waitForWatchdog(watchdog, options.command, statuses, () => childPid).finally(
    () => {
      isDone = true;
      if (secondInterrupt) {
        clearTimeout(secondInterrupt);
      }
      watchdog.stdin?.end();
    },
  );
  return {
    exited,
    cancel(graceMs) {
      // Idempotent: a repeated cancel must not become terraform's "two interrupts" early.
      if (isDone || secondInterrupt !== null) {
        return;
      }
      send("SIGINT");
      secondInterrupt = setTimeout(() => send("SIGINT"), graceMs);
    },
    forceKill() {
      send("SIGKILL");
    },
  };
}

/** Resolves with the job process's exit once the watchdog closed all its pipes. */
function waitForWatchdog(
  watchdog: ChildProcess,
  command: string,
  statuses: WatchdogStatus[],
  childPid: () => number | null,
): Promise<ProcessExit> {
  return new Promise<ProcessExit>((resolve, reject) => {
    watchdog.once("error", (error) => {
      if (watchdog.pid === undefined) {
        reject(new Error(`cannot start ${command}: ${error.message}`, { cause: error }));
      }
    });
    watchdog.once("close", (code, signal) => {
      for (const status of statuses) {
        if ("exit" in status) {
          resolve(status.exit as ProcessExit);
          return;
        }
        if ("error" in status) {
          reject(new Error(String(status.error)));
          return;
        }
      }
      // The watchdog itself failed: its job process must not run on unwatched.
      const pid = childPid();
      if (pid !== null) {
        try {
          process.kill(-pid, "SIGKILL");
        } catch {
          // Already gone.
        }
      }
      const how = signal === null ? `exited with code ${code}` : `was killed by ${signal}`;
      reject(new Error(`the watchdog of ${command} ${how}`));
    });
  });
}

function parseStatus(line: string): WatchdogStatus | null {
  try {
    const parsed: unknown = JSON.parse(line);
    return typeof parsed === "object" && parsed !== null ? (parsed as WatchdogStatus) : null;
  } catch {
    return null;
  }
}
