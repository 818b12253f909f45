import { constants, createReadStream, createWriteStream } from "node:fs";
import { access, readFile, stat, writeFile } from "node:fs/promises";
import path from "node:path";
import { type Containment, startProcess } from "../exec/process.ts";

export const HOOK_NAMES = ["pre-plan", "post-plan", "pre-apply", "post-apply"] as const;
export type HookName = (typeof HOOK_NAMES)[number];

/** Terraform Cloud agent's file name for a hook (`terraform-pre-plan`), accepted as an alias. */
export function tfcHookName(name: HookName): string {
  return `terraform-${name}`;
}

/**
 * A hook that failed, timed out or exported garbage; the message names the hook. `sensitive`
 * holds the values it marked sensitive before it failed, so they are masked all the same.
 */
export class HookError extends Error {
  override name = "HookError";
  readonly sensitive: string[];

  constructor(message: string, sensitive: string[] = []) {
    super(message);
    this.sensitive = sensitive;
  }
}

/** `KEY=value`, or `sensitive KEY=value` for a value the job log must never show. */
const EXPORT_LINE = /^(sensitive\s+)?([A-Za-z_][A-Za-z0-9_]*)=(.*)$/;

/** What a hook handed back: variables for the next engine commands, and which values are secret. */
export type HookResult = { exports: Record<string, string>; sensitive: string[] };

const NOTHING: HookResult = { exports: {}, sensitive: [] };

/** A running hook, so a cancel can reach it. */
export type HookControl = { onStart?: (kill: () => void) => void };

/**
 * Runs the hook `name` from `hooksDir` if it exists as `name` or as Terraform Cloud agent's
 * `terraform-<name>` (no file: nothing happens; both: {@link HookError}). It runs in `cwd`
 * with `env` plus `OUTPOST_AGENT_ENV` (a fresh file in `scratchDir`) and `OUTPOST_HOOK`, in its
 * own process group (sandboxed as `containment` says); its output goes to `onOutput`. Resolves with the `KEY=value` lines the hook
 * wrote to `$OUTPOST_AGENT_ENV` (blank lines and `#` comments ignored; `sensitive KEY=value`
 * also marks the value sensitive). For a job of a pull request from a fork (`isFork`) no hook
 * runs: hooks exist to hand the job credentials, which fork code never gets. Throws
 * {@link HookError} when the file is not executable, the hook exits non-zero, runs longer than
 * `timeoutMs` (its group is then killed) or writes a malformed line.
 */
export async function runHook(input: {
  name: HookName;
  hooksDir: string;
  timeoutMs: number;
  cwd: string;
  env: Record<string, string>;
  scratchDir: string;
  isFork: boolean;
  onOutput: (chunk: Buffer | string) => void;
  control?: HookControl;
  /** The job's sandbox and watchdog settings for the hook process. */
  containment?: Containment;
}): Promise<HookResult> {
  const file = await hookFile(input.hooksDir, input.name);
  if (file === null) {
    return NOTHING;
  }
  if (input.isFork) {
    input.onOutput(
      `\nSkipping the ${input.name} hook: hooks do not run for pull requests from forks\n`,
    );
    return NOTHING;
  }
  try {
    await access(file, constants.X_OK);
    if (!(await stat(file)).isFile()) {
      throw new Error("not a file");
    }
  } catch {
    throw new HookError(`hook ${input.name} (${file}) is not an executable file`);
  }
  const envFile = path.join(input.scratchDir, `${input.name}.env`);
  await writeFile(envFile, "", { mode: 0o600 });
  input.onOutput(`\nRunning ${input.name} hook\n`);
  const child = startProcess({
    command: file,
    args: [],
    cwd: input.cwd,
    env: { ...input.env, OUTPOST_AGENT_ENV: envFile, OUTPOST_HOOK: input.name },
    onOutput: input.onOutput,
    ...(input.containment === undefined ? {} : { containment: input.containment }),
  });
  input.control?.onStart?.(() => child.forceKill());
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    child.forceKill();
  }, input.timeoutMs);
  const exit = await child.exited.finally(() => clearTimeout(timer));
  const text = await readFile(envFile, "utf8");
  if (timedOut) {
    throw new HookError(
      `hook ${input.name} timed out after ${input.timeoutMs / 1000}s`,
      sensitiveValues(text),
    );
  }
  if (exit.code !== 0) {
    const how =
      exit.code === null ? `was killed by ${exit.signal}` : `exited with code ${exit.code}`;
    throw new HookError(`hook ${input.name} failed: it ${how}`, sensitiveValues(text));
  }
  return parseExports(input.name, text);
}

async function exists(file: string): Promise<boolean> {
  try {
    await stat(file);
    return true;
  } catch {
    return false;
  }
}

/**
 * The hook's file in `hooksDir`: `pre-plan`, or Terraform Cloud agent's `terraform-pre-plan`, so
 * hooks written for that agent work unchanged; null when neither exists. Both at once is refused
 * rather than guessing which one runs.
 */
async function hookFile(hooksDir: string, name: HookName): Promise<string | null> {
  const own = path.join(hooksDir, name);
  const alias = path.join(hooksDir, tfcHookName(name));
  const [hasOwn, hasAlias] = await Promise.all([exists(own), exists(alias)]);
  if (hasOwn && hasAlias) {
    throw new HookError(
      `hooks ${name} and ${tfcHookName(name)} both exist in ${hooksDir}: they are the same hook; keep one`,
    );
  }
  return hasOwn ? own : hasAlias ? alias : null;
}

function significantLines(text: string): { line: string; number: number }[] {
  return text
    .split("\n")
    .map((raw, index) => ({ line: raw.replace(/\r$/, ""), number: index + 1 }))
    .filter(({ line }) => line.trim() !== "" && !line.trimStart().startsWith("#"));
}

/** The values marked sensitive, read leniently (for masking after a failed hook). */
function sensitiveValues(text: string): string[] {
  return significantLines(text).flatMap(({ line }) => {
    const match = EXPORT_LINE.exec(line);
    return match?.[1] ? [match[3] ?? ""] : [];
  });
}

function parseExports(name: HookName, text: string): HookResult {
  const exports: Record<string, string> = {};
  const sensitive: string[] = [];
  for (const { line, number } of significantLines(text)) {
    const match = EXPORT_LINE.exec(line);
    if (!match?.[2]) {
      throw new HookError(
        `hook ${name} wrote an invalid line ${number} to $OUTPOST_AGENT_ENV (expected KEY=value or sensitive KEY=value)`,
        [...sensitive, ...sensitiveValues(text)],
      );
    }
    const value = match[3] ?? "";
    exports[match[2]] = value;
    if (match[1]) {
      sensitive.push(value);
    }
  }
  return { exports, sensitive };
}

/** Where a held hook's output goes once the hook has exited. */
export type HookSink = {
  write(chunk: Buffer): void;
  /** Values to mask from now on (the hook's own output included). */
  addSecrets(values: string[]): void;
};

/**
 * {@link runHook} with the hook's output held in a spool file (`<scratchDir>/<name>.log`) until
 * it exits: the values it marks sensitive, also those of a hook that then failed, reach
 * `sink.addSecrets` before its output reaches `sink.write`, so they are masked in its own output
 * too. Resolves with its exports; rejects as {@link runHook} does, after the output was written.
 */
export async function runHeldHook(
  input: Omit<Parameters<typeof runHook>[0], "onOutput">,
  sink: HookSink,
): Promise<Record<string, string>> {
  const spoolFile = path.join(input.scratchDir, `${input.name}.log`);
  const spool = createWriteStream(spoolFile);
  const outcome = await runHook({ ...input, onOutput: (chunk) => spool.write(chunk) }).then(
    (result) => ({ ok: true as const, result }),
    (error: unknown) => ({ ok: false as const, error }),
  );
  await new Promise<void>((resolve, reject) =>
    spool.end((error?: Error | null) => (error ? reject(error) : resolve())),
  );
  if (outcome.ok) {
    sink.addSecrets(outcome.result.sensitive);
  } else if (outcome.error instanceof HookError) {
    sink.addSecrets(outcome.error.sensitive);
  }
  for await (const chunk of createReadStream(spoolFile)) {
    sink.write(chunk as Buffer);
  }
  if (!outcome.ok) {
    throw outcome.error;
  }
  return outcome.result.exports;
}
