import { spawn } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { STANDIN_PATH } from "./mirror.ts";

export { STANDIN_PATH };

/** A temp dir with the given files (name → content). */
export function tempConfig(files: Record<string, string>): string {
  const dir = mkdtempSync(path.join(tmpdir(), "outpost-standin-"));
  for (const [name, content] of Object.entries(files)) {
    writeFileSync(path.join(dir, name), content);
  }
  return dir;
}

/** The backend override the agent writes, pointing at a loopback state server. */
export function httpBackend(address: string): string {
  return `terraform {\n  backend "http" {\n    address = "${address}"\n    lock_address = "${address}"\n    unlock_address = "${address}"\n  }\n}\n`;
}

/** Runs the stand-in engine to completion and returns its exit code and merged output. */
export function runStandin(
  cwd: string,
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(STANDIN_PATH, args, {
      cwd,
      env: { PATH: process.env.PATH ?? "", TF_HTTP_RETRY_WAIT_MIN: "0", ...env },
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
  });
}
