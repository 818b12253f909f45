import { constants } from "node:fs";
import { access, readFile, stat, writeFile } from "node:fs/promises";
import path from "node:path";
import { startProcess } from "../exec/process.ts";

export const HOOK_NAMES = ["pre-plan", "post-plan", "pre-apply", "post-apply"] as const;
export type HookName = (typeof HOOK_NAMES)[number];

/** A hook that failed, timed out or exported garbage; the message names the hook. */
export class HookError extends Error {
  override name = "HookError";
}

const EXPORT_LINE = /^([A-Za-z_][A-Za-z0-9_]*)=(.*)$/;

/** A running hook, so a cancel can reach it. */
export type HookControl = { onStart?: (kill: () => void) => void };

/**
 * Runs the hook `name` from `hooksDir` if it exists (no file: nothing happens, `{}`). It runs
 * in `cwd` with `env` plus `OUTPOST_AGENT_ENV` (a fresh file in `scratchDir`) and
 * `OUTPOST_HOOK`, in its own process group; its output goes to `onOutput`. Resolves with the
 * `KEY=value` lines the hook wrote to `$OUTPOST_AGENT_ENV` (blank lines and `#` comments
 * ignored). Throws {@link HookError} when the file is not executable, the hook exits non-zero,
 * runs longer than `timeoutMs` (its group is then killed) or writes a malformed line.
 */
export async function runHook(input: {
  name: HookName;
  hooksDir: string;
  timeoutMs: number;
  cwd: string;
  env: Record<string, string>;
  scratchDir: string;
  onOutput: (chunk: Buffer | string) => void;
  control?: HookControl;
}): Promise<Record<string, string>> {
  const file = path.join(input.hooksDir, input.name);
  try {
    await stat(file);
  } catch {
    return {};
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
  });
  input.control?.onStart?.(() => child.forceKill());
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    child.forceKill();
  }, input.timeoutMs);
  const exit = await child.exited.finally(() => clearTimeout(timer));
  if (timedOut) {
    throw new HookError(`hook ${input.name} timed out after ${input.timeoutMs / 1000}s`);
  }
  if (exit.code !== 0) {
    const how =
      exit.code === null ? `was killed by ${exit.signal}` : `exited with code ${exit.code}`;
    throw new HookError(`hook ${input.name} failed: it ${how}`);
  }
  return parseExports(input.name, await readFile(envFile, "utf8"));
}

function parseExports(name: HookName, text: string): Record<string, string> {
  const exports: Record<string, string> = {};
  const lines = text.split("\n");
  for (const [index, raw] of lines.entries()) {
    const line = raw.replace(/\r$/, "");
    if (line.trim() === "" || line.trimStart().startsWith("#")) {
      continue;
    }
    const match = EXPORT_LINE.exec(line);
    if (!match?.[1]) {
      throw new HookError(
        `hook ${name} wrote an invalid line ${index + 1} to $OUTPOST_AGENT_ENV (expected KEY=value)`,
      );
    }
    exports[match[1]] = match[2] ?? "";
  }
  return exports;
}
