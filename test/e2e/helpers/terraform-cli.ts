/**
 * The stand-in `terraform` on the "laptop" side of the `cloud` block tests: run as a child process
 * in its own configuration directory and HOME, with every TFE API request it makes traced to a
 * file (method, URL, headers without the token, body) so tests can compare the sequence with the
 * real CLI's.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";

export const TERRAFORM_BIN = path.resolve(import.meta.dirname, "../../fixtures/terraform");

/** One traced request of the stand-in. */
export type TracedRequest = {
  method: string;
  url: string;
  headers: Record<string, string>;
  body: string | null;
};

export type TerraformResult = {
  code: number | null;
  stdout: string;
  stderr: string;
  /** The requests this command made, in order. */
  requests: TracedRequest[];
};

export type TerraformOptions = {
  /** Written to stdin, then closed (unless `onStdout` writes and closes it itself). */
  stdin?: string;
  env?: Record<string, string>;
  /** Sees the whole stdout so far; may signal the child or write to its stdin. */
  onStdout?: (text: string, child: ChildProcess) => void;
  timeoutMs?: number;
};

/** A configuration directory and HOME for one laptop, talking to `host` (`127.0.0.1:PORT`). */
export class Laptop {
  readonly home: string;
  readonly dir: string;
  private readonly trace: string;

  readonly host: string;

  constructor(root: string, host: string) {
    this.host = host;
    this.home = path.join(root, "home");
    this.dir = path.join(root, "config");
    this.trace = path.join(root, "trace.jsonl");
    mkdirSync(this.home, { recursive: true });
    mkdirSync(this.dir, { recursive: true });
  }

  /** Writes `main.tf` (and removes other `.tf` files). */
  write(files: Record<string, string>): void {
    for (const [name, text] of Object.entries(files)) {
      writeFileSync(path.join(this.dir, name), text);
    }
  }

  /** Stores `token` for the host the way `terraform login` does. */
  saveToken(token: string): void {
    mkdirSync(path.join(this.home, ".terraform.d"), { recursive: true });
    writeFileSync(
      this.credentialsFile,
      JSON.stringify({ credentials: { [this.host]: { token } } }, null, 2),
      { mode: 0o600 },
    );
  }

  get credentialsFile(): string {
    return path.join(this.home, ".terraform.d", "credentials.tfrc.json");
  }

  /** Runs `terraform ARGS` in the configuration directory to its end. */
  run(args: string[], options: TerraformOptions = {}): Promise<TerraformResult> {
    rmSync(this.trace, { force: true });
    return new Promise((resolve, reject) => {
      const child = spawn(process.execPath, [TERRAFORM_BIN, ...args], {
        cwd: this.dir,
        env: {
          PATH: process.env.PATH ?? "",
          HOME: this.home,
          STANDIN_TFE_SCHEME: "http",
          STANDIN_TFE_TRACE: this.trace,
          ...options.env,
        },
        stdio: ["pipe", "pipe", "pipe"],
      });
      let stdout = "";
      let stderr = "";
      const timer = setTimeout(() => child.kill("SIGKILL"), options.timeoutMs ?? 60_000);
      child.stdout.on("data", (d) => {
        stdout += d;
        options.onStdout?.(stdout, child);
      });
      child.stderr.on("data", (d) => {
        stderr += d;
      });
      child.on("error", reject);
      child.on("close", (code) => {
        clearTimeout(timer);
        resolve({ code, stdout, stderr, requests: this.requests() });
      });
      if (options.stdin !== undefined || options.onStdout === undefined) {
        child.stdin.end(options.stdin ?? "");
      }
    });
  }

  private requests(): TracedRequest[] {
    if (!existsSync(this.trace)) {
      return [];
    }
    return readFileSync(this.trace, "utf8")
      .split("\n")
      .filter(Boolean)
      .map((line) => JSON.parse(line) as TracedRequest);
  }
}

/** `METHOD /path?query` of each request, with the host left out. */
export function sequence(requests: TracedRequest[]): string[] {
  return requests.map((r) => {
    const u = new URL(r.url);
    return `${r.method} ${u.pathname}${u.search}`;
  });
}
