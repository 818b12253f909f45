/**
 * The watchdog: a small process between the agent and each job process (engine, provider,
 * hook, git), so that no job process outlives its agent. The agent starts it detached with four
 * pipes (see `process.ts`):
 *
 * - fd 0, agent → watchdog: the first line is the {@link WatchdogSpec} (JSON); later lines are
 *   `{"signal":"SIGINT"|"SIGKILL"}`. End of file means the agent is gone, however it died (even
 *   SIGKILL): the watchdog then sends SIGINT to the job process group once (the engine's
 *   graceful stop, which persists state), SIGKILL after `orphanGraceMs`, removes
 *   `orphanCleanup` and exits.
 * - fd 1 and fd 2: the job process's stdout and stderr, relayed. The watchdog owns the job
 *   process's pipes and keeps draining them after the agent died, so the engine never dies of
 *   SIGPIPE (or blocks on a full pipe) while it stops.
 * - fd 3, watchdog → agent: status lines, `{"started":{"pid":N}}`, then `{"exit":{"code","signal"}}`
 *   or `{"error":"…"}`.
 *
 * Without `sandbox` the watchdog is usually a child subreaper (see `subreaper.ts`): whatever
 * the job process started, even in a session of its own, stays its descendant, and all of it is
 * SIGKILLed once the job process exits ({@link killDescendants}).
 *
 * With `sandbox` the command runs under bubblewrap (`--new-session --die-with-parent` among the
 * given arguments): the monitor forwards no signal, so signals go to the process group of the
 * sandbox's first process, whose host pid bubblewrap reports on its status fd.
 *
 * Node built-ins only: the build embeds this file's bundle as a string and runs it with `node -e`,
 * so a watchdog costs a bare Node start, not the agent's.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { closeSync, openSync, readdirSync, readFileSync, rmSync, writeSync } from "node:fs";
import { constants } from "node:os";
import { createInterface } from "node:readline";
import { Readable } from "node:stream";

/** What the agent asks the watchdog to run. */
export type WatchdogSpec = {
  command: string;
  args: string[];
  cwd: string;
  /** Exactly the environment of the job process (never inherited from the watchdog). */
  env: Record<string, string>;
  /** stdout goes to this file instead of fd 1. */
  stdoutFile: string | null;
  /** Written to the job process's stdin, which is then closed; null: stdin is /dev/null. */
  stdinText: string | null;
  /** bubblewrap executable and its arguments up to (not including) `--`; null: no sandbox. */
  sandbox: { bwrap: string; args: string[] } | null;
  orphanGraceMs: number;
  /** Removed once an orphaned job process has ended (its job directory). */
  orphanCleanup: string[];
};

type SignalName = "SIGINT" | "SIGKILL";

function status(message: unknown): void {
  try {
    writeSync(3, `${JSON.stringify(message)}\n`);
  } catch {
    // The agent is gone; nobody is left to tell.
  }
}

/** Writes to the agent's pipe until it breaks, then drops the bytes (the agent is gone). */
function relay(stream: NodeJS.WriteStream): (chunk: Buffer) => void {
  let isBroken = false;
  stream.on("error", () => {
    isBroken = true;
  });
  return (chunk) => {
    if (isBroken) {
      return;
    }
    try {
      stream.write(chunk);
    } catch {
      isBroken = true;
    }
  };
}

function startChild(spec: WatchdogSpec): ChildProcess {
  const stdoutFd = spec.stdoutFile === null ? null : openSync(spec.stdoutFile, "w");
  try {
    const stdin = spec.stdinText === null ? "ignore" : "pipe";
    const stdio: ("ignore" | "pipe" | number)[] = [stdin, stdoutFd ?? "pipe", "pipe"];
    if (spec.sandbox === null) {
      return spawn(spec.command, spec.args, {
        cwd: spec.cwd,
        env: spec.env,
        detached: true,
        stdio,
      });
    }
    const args = [...spec.sandbox.args, "--json-status-fd", "3", "--", spec.command, ...spec.args];
    return spawn(spec.sandbox.bwrap, args, {
      cwd: spec.cwd,
      env: spec.env,
      detached: true,
      stdio: [...stdio, "pipe"],
    });
  } finally {
    if (stdoutFd !== null) {
      closeSync(stdoutFd);
    }
  }
}

/** Runs one job process as the module comment describes; resolves when the watchdog is done. */
function watch(spec: WatchdogSpec, control: ReturnType<typeof createInterface>): void {
  const child = startChild(spec);
  // A command that exits without reading its stdin must not end the watchdog with EPIPE.
  child.stdin?.on("error", () => undefined);
  child.stdin?.end(spec.stdinText ?? undefined);
  // Without a sandbox the child leads its own group; with one, the sandbox's first process does.
  let group: number | null = spec.sandbox === null ? (child.pid ?? null) : null;
  let pending: SignalName | null = null;
  let hasExited = false;
  let isOrphaned = false;
  let killTimer: NodeJS.Timeout | null = null;
  const sent = new Set<SignalName>();

  const signal = (name: SignalName) => {
    if (hasExited) {
      return;
    }
    if (group === null) {
      // The sandbox is still being set up: deliver once its first process is known.
      pending = pending === "SIGKILL" ? pending : name;
      return;
    }
    sent.add(name);
    deliver(group, name, 0);
  };
  // A sandbox's first process makes its own session (and group) just after bubblewrap reported
  // it: a signal sent before that finds no group, and is tried again while the process lives.
  // SIGKILL then goes to that process itself: the PID namespace, and all in it, ends with it.
  const deliver = (leader: number, name: SignalName, attempt: number): void => {
    try {
      process.kill(-leader, name);
      return;
    } catch {
      // ESRCH: no such group (yet, or any more).
    }
    if (hasExited || spec.sandbox === null) {
      return;
    }
    if (name === "SIGKILL") {
      try {
        process.kill(leader, "SIGKILL");
      } catch {
        // Gone already.
      }
    } else if (attempt < 40) {
      setTimeout(() => deliver(leader, name, attempt + 1), 25);
    }
  };

  child.once("error", (error) => {
    if (child.pid === undefined) {
      status({ error: `cannot start ${spec.command}: ${error.message}` });
      process.exit(0);
    }
  });
  if (child.pid !== undefined) {
    status({ started: { pid: child.pid } });
  }
  child.stdout?.on("data", relay(process.stdout));
  child.stderr?.on("data", relay(process.stderr));
  if (spec.sandbox !== null) {
    const lines = child.stdio[3];
    if (lines instanceof Readable) {
      createInterface({ input: lines }).on("line", (line) => {
        const childPid = readChildPid(line);
        if (childPid !== null && group === null) {
          group = childPid;
          if (pending !== null) {
            signal(pending);
          }
        }
      });
    }
  }

  control.on("line", (line) => {
    const name = readSignal(line);
    if (name !== null) {
      signal(name);
    }
  });
  control.on("close", () => {
    // The agent died (or closed the pipe): stop the job process as Ctrl-C would, then for good.
    isOrphaned = true;
    if (!hasExited) {
      signal("SIGINT");
      killTimer = setTimeout(() => signal("SIGKILL"), spec.orphanGraceMs);
    }
  });

  child.once("exit", () => {
    hasExited = true;
    if (killTimer !== null) {
      clearTimeout(killTimer);
    }
    if (spec.sandbox === null && group !== null) {
      // Anything the leader left running goes with it: its group, and every other descendant
      // (a sandbox's namespace ends with its first process anyway).
      try {
        process.kill(-group, "SIGKILL");
      } catch {
        // ESRCH: nothing left.
      }
      killDescendants();
    }
  });
  child.once("close", (code, signalName) => {
    const exit = exitOf(code, signalName, spec.sandbox !== null, sent);
    if (isOrphaned) {
      for (const target of spec.orphanCleanup) {
        rmSync(target, { recursive: true, force: true });
      }
    }
    status({ exit });
    // Nothing is left to wait for: the process ends once its relayed output is flushed.
    control.close();
    process.stdin.destroy();
  });
}

/** The live (not zombie) processes below `root`, from /proc's parent pids. */
function descendantsOf(root: number): number[] {
  const children = new Map<number, number[]>();
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) {
      continue;
    }
    let stat: string;
    try {
      stat = readFileSync(`/proc/${name}/stat`, "utf8");
    } catch {
      continue; // Gone meanwhile.
    }
    // "pid (comm) state ppid …": comm may hold spaces and parentheses, so read after the last ")".
    const [state, ppid] = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    if (state === "Z" || state === "X") {
      continue;
    }
    const siblings = children.get(Number(ppid)) ?? [];
    siblings.push(Number(name));
    children.set(Number(ppid), siblings);
  }
  const found: number[] = [];
  const queue = [root];
  for (let pid = queue.pop(); pid !== undefined; pid = queue.pop()) {
    const below = children.get(pid) ?? [];
    found.push(...below);
    queue.push(...below);
  }
  return found;
}

/**
 * SIGKILLs every process below this watchdog until none is left (bounded rounds): each round
 * stops them all first, so none can fork a new one between being found and being killed, and
 * orphans of a killed parent come back to this subreaper for the next round.
 */
function killDescendants(): void {
  if (process.platform !== "linux") {
    return;
  }
  for (let round = 0; round < 50; round += 1) {
    const pids = descendantsOf(process.pid);
    if (pids.length === 0) {
      return;
    }
    for (const signal of ["SIGSTOP", "SIGKILL"] as const) {
      for (const pid of pids) {
        try {
          process.kill(pid, signal);
        } catch {
          // Gone already.
        }
      }
    }
  }
}

/**
 * bubblewrap reports a signal death as 128 + the signal number; when the watchdog sent that
 * signal, it is reported as the signal, as it would be without a sandbox.
 */
function exitOf(
  code: number | null,
  signalName: NodeJS.Signals | null,
  isSandboxed: boolean,
  sent: Set<SignalName>,
): { code: number | null; signal: NodeJS.Signals | null } {
  if (isSandboxed && code !== null && code > 128) {
    for (const name of sent) {
      if (constants.signals[name] === code - 128) {
        return { code: null, signal: name };
      }
    }
  }
  return { code, signal: signalName };
}

function readChildPid(line: string): number | null {
  try {
    const parsed: unknown = JSON.parse(line);
    if (typeof parsed === "object" && parsed !== null && "child-pid" in parsed) {
      const pid = parsed["child-pid"];
      return typeof pid === "number" && Number.isInteger(pid) && pid > 1 ? pid : null;
    }
  } catch {
    // Not a status line.
  }
  return null;
}

function readSignal(line: string): SignalName | null {
  try {
    const parsed: unknown = JSON.parse(line);
    if (typeof parsed === "object" && parsed !== null && "signal" in parsed) {
      const name = parsed.signal;
      return name === "SIGINT" || name === "SIGKILL" ? name : null;
    }
  } catch {
    // Ignored: only the agent writes here.
  }
  return null;
}

function main(): void {
  // Signals meant for the agent (a terminal's Ctrl-C, a service manager's SIGTERM) are not the
  // watchdog's to act on: it follows its agent, and only its pipe's end means the agent is gone.
  for (const name of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
    process.on(name, () => {});
  }
  const control = createInterface({ input: process.stdin });
  let isStarted = false;
  control.once("line", (line) => {
    isStarted = true;
    let spec: WatchdogSpec;
    try {
      spec = JSON.parse(line) as WatchdogSpec;
    } catch {
      status({ error: "the watchdog received an unreadable request" });
      process.exit(0);
    }
    watch(spec, control);
  });
  control.once("close", () => {
    if (!isStarted) {
      process.exit(0);
    }
  });
}

main();
