/**
 * The processes of one job, run one at a time (engine commands and hooks), and how a cancel
 * reaches them: a graceful cancel interrupts the running one (SIGINT, again after the grace
 * period), a force cancel kills it, and nothing starts after either.
 */
import { type Containment, type RunningProcess, startProcess } from "../exec/process.ts";
import { MASK } from "../logs/masker.ts";
import { HookError, type HookName, type HookSink, runHeldHook } from "./hooks.ts";
import { missingCommand, NOT_FOUND_EXIT } from "./not-found.ts";

/** Output kept per process to explain a failure (a "not found" line is near the end). */
const TAIL_CHARS = 8192;

/** The last {@link TAIL_CHARS} of a process's output. */
class Tail {
  text = "";
  add(chunk: Buffer | string): void {
    this.text = (this.text + chunk.toString()).slice(-TAIL_CHARS);
  }
}

/** A job that failed; `exitCode` is the engine's when an engine command failed. */
export class JobFailure extends Error {
  readonly exitCode: number | null;
  constructor(message: string, exitCode: number | null = null) {
    super(message);
    this.exitCode = exitCode;
  }
}

/** Thrown in place of whatever would have run once the job was canceled. */
export class Canceled extends Error {}

/** One engine command. */
export type EngineCommand = {
  /** How the log and a failure name it (`terraform`, `pulumi`). */
  engine: string;
  path: string;
  args: string[];
  what: string;
  cwd: string;
  env: Record<string, string>;
  okCodes: readonly number[];
  stdoutFile?: string;
  stdinText?: string;
  containment: Containment;
  /** The reason the engine printed in an output chunk, if any (see `EngineDriver.reasonIn`). */
  reasonIn(output: string): string | null;
  /** A sentence on a command the process could not find: where it looked, what hid it. */
  explainNotFound?(command: string): string;
};

/** One hook, as `runHeldHook` takes it. */
export type HookRun = Omit<Parameters<typeof runHeldHook>[0], "control" | "name"> & {
  /** As {@link EngineCommand.explainNotFound}, for a hook that failed. */
  explainNotFound?(command: string): string;
};

export class JobProcesses {
  canceled: "graceful" | "force" | null = null;
  /** Exit code of the last engine command, if one ran. */
  lastExitCode: number | null = null;
  private current: RunningProcess | null = null;
  private killHook: (() => void) | null = null;
  private readonly o: {
    cancelGraceMs: number;
    /** Log output of every process (masked by the log). */
    write(chunk: Buffer | string): void;
    /** Secret values to cut out of an engine's reason, which leaves the log's masking. */
    secrets(): readonly string[];
  };

  constructor(options: JobProcesses["o"]) {
    this.o = options;
  }

  /** Graceful: SIGINT now, again after the grace period. Force: SIGKILL now. Idempotent. */
  cancel(force: boolean): void {
    if (this.canceled === "force" || (this.canceled === "graceful" && !force)) {
      return;
    }
    this.canceled = force ? "force" : "graceful";
    if (force) {
      this.current?.forceKill();
    } else {
      this.current?.cancel(this.o.cancelGraceMs);
    }
    this.killHook?.();
  }

  /** Throws {@link Canceled} once the job was canceled. */
  checkCanceled(): void {
    if (this.canceled !== null) {
      throw new Canceled("canceled");
    }
  }

  /** Runs one engine command; throws unless it exits with one of its `okCodes`. */
  async engine(command: EngineCommand): Promise<number> {
    this.checkCanceled();
    this.o.write(`\n$ ${command.engine} ${command.args.join(" ")}\n`);
    let reason: string | null = null;
    const tail = new Tail();
    const child = startProcess({
      command: command.path,
      args: command.args,
      cwd: command.cwd,
      env: command.env,
      onOutput: (chunk) => {
        reason = this.reasonOf(command, chunk) ?? reason;
        tail.add(chunk);
        this.o.write(chunk);
      },
      stdoutFile: command.stdoutFile,
      ...(command.stdinText === undefined ? {} : { stdinText: command.stdinText }),
      containment: command.containment,
    });
    this.current = child;
    // A cancel that arrived between checkCanceled and the spawn still reaches the engine.
    if (this.canceled === "force") {
      child.forceKill();
    } else if (this.canceled === "graceful") {
      child.cancel(this.o.cancelGraceMs);
    }
    const exit = await child.exited.finally(() => {
      this.current = null;
    });
    this.lastExitCode = exit.code;
    if (exit.code !== null && command.okCodes.includes(exit.code)) {
      // Finished despite a cancel (e.g. the apply completed): the work is done, report it so.
      return exit.code;
    }
    this.checkCanceled();
    const how =
      exit.code === null ? `was killed by ${exit.signal}` : `exited with code ${exit.code}`;
    const because = reason === null ? "" : `: ${reason}`;
    const missing = notFoundNote(tail.text, exit.code, command.explainNotFound);
    throw new JobFailure(`${command.engine} ${command.what} ${how}${because}${missing}`, exit.code);
  }

  /** The engine's reason in `chunk`, masked (it leaves the log) and at most 500 characters. */
  private reasonOf(command: EngineCommand, chunk: Buffer): string | null {
    const found = command.reasonIn(chunk.toString("utf8"));
    if (found === null) {
      return null;
    }
    let line = found;
    for (const secret of this.o.secrets()) {
      line = line.replaceAll(secret, MASK);
    }
    return line.slice(0, 500);
  }

  /** Runs a hook (see `runHeldHook`); resolves with its exports. */
  async hook(name: HookName, run: HookRun, sink: HookSink): Promise<Record<string, string>> {
    this.checkCanceled();
    const { explainNotFound, ...hook } = run;
    const tail = new Tail();
    const keep: HookSink = {
      ...sink,
      write: (chunk) => {
        tail.add(chunk);
        return sink.write(chunk);
      },
    };
    return runHeldHook(
      { ...hook, name, control: { onStart: (kill) => (this.killHook = kill) } },
      keep,
    )
      .catch((error: unknown) => {
        const exitCode = /exited with code (\d+)/.exec(String((error as Error).message))?.[1];
        const note = notFoundNote(
          tail.text,
          exitCode === undefined ? null : Number(exitCode),
          explainNotFound,
        );
        throw error instanceof HookError && note !== ""
          ? new HookError(`${error.message}${note}`, error.sensitive)
          : error;
      })
      .finally(() => {
        this.killHook = null;
      });
  }
}

/**
 * `; command not found: …` when the output names a command that was not found (or the exit
 * status is 127 without a name), explained by `explain`; else "".
 */
function notFoundNote(
  output: string,
  exitCode: number | null,
  explain: ((command: string) => string) | undefined,
): string {
  const command = missingCommand(output);
  if (command !== null) {
    return `; ${explain?.(command) ?? `command not found: ${command}`}`;
  }
  return exitCode === NOT_FOUND_EXIT
    ? "; exit status 127 usually means a command was not found (see the log above)"
    : "";
}
