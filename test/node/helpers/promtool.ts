import { spawn } from "node:child_process";

/** What promtool printed and how it exited. */
export type PromtoolResult = { code: number | null; output: string };

/**
 * Runs Debian's `promtool` (the `prometheus` package; `.ci/run` installs it when missing) with
 * `args`, feeding `stdin` when given. Bounded: killed after `timeoutMs`.
 */
export function promtool(
  args: string[],
  options: { stdin?: string; cwd?: string; timeoutMs?: number } = {},
): Promise<PromtoolResult> {
  return new Promise((resolve, reject) => {
    const child = spawn("promtool", args, {
      cwd: options.cwd,
      stdio: ["pipe", "pipe", "pipe"],
      timeout: options.timeoutMs ?? 30_000,
    });
    let output = "";
    child.stdout.on("data", (d) => {
      output += d;
    });
    child.stderr.on("data", (d) => {
      output += d;
    });
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, output }));
    child.stdin.end(options.stdin ?? "");
  });
}
