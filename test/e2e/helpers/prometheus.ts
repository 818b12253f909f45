/**
 * A real Prometheus server (Debian's `prometheus`, installed by `.ci/run` when missing) on a
 * loopback port, with its own temporary storage, and its query API.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { vi } from "vitest";
import { stringify } from "yaml";
import { freePort } from "../../../scripts/local-coordinator.ts";

/** One instant vector element of `/api/v1/query`. */
export type Sample = { metric: Record<string, string>; value: number };

export class PrometheusServer {
  url = "";
  private child: ChildProcess | null = null;
  private output = "";
  private readonly dir = mkdtempSync(path.join(tmpdir(), "outpost-prometheus-"));

  /** Writes a file next to the configuration (a bearer token file), returning its path. */
  writeFile(name: string, text: string): string {
    const file = path.join(this.dir, name);
    writeFileSync(file, text, { mode: 0o600 });
    return file;
  }

  /** Starts Prometheus with `config` (a prometheus.yml as an object); resolves once it is ready. */
  async start(config: Record<string, unknown>, timeoutMs = 30_000): Promise<void> {
    const port = await freePort();
    this.url = `http://127.0.0.1:${port}`;
    const configFile = this.writeFile("prometheus.yml", stringify(config));
    this.child = spawn(
      "prometheus",
      [
        `--config.file=${configFile}`,
        `--storage.tsdb.path=${path.join(this.dir, "data")}`,
        `--web.listen-address=127.0.0.1:${port}`,
        "--log.level=warn",
      ],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    this.child.stdout?.on("data", (d) => {
      this.output += d;
    });
    this.child.stderr?.on("data", (d) => {
      this.output += d;
    });
    const child = this.child;
    const isReady = await vi.waitFor(
      async () => {
        if (child.exitCode !== null) {
          return false;
        }
        const ready = await fetch(`${this.url}/-/ready`).catch(() => null);
        if (ready?.status !== 200) {
          throw new Error(`prometheus was not ready within ${timeoutMs} ms:\n${this.output}`);
        }
        return true;
      },
      { timeout: timeoutMs, interval: 200 },
    );
    if (!isReady) {
      throw new Error(`prometheus exited (${child.exitCode}):\n${this.output}`);
    }
  }

  /** An instant query through `/api/v1/query`. */
  async query(expr: string): Promise<Sample[]> {
    const res = await fetch(`${this.url}/api/v1/query?query=${encodeURIComponent(expr)}`);
    const body = (await res.json()) as {
      status: string;
      error?: string;
      data?: { result: { metric: Record<string, string>; value: [number, string] }[] };
    };
    if (body.status !== "success" || !body.data) {
      throw new Error(`query ${expr} failed: ${body.error ?? res.status}`);
    }
    return body.data.result.map((r) => ({ metric: r.metric, value: Number(r.value[1]) }));
  }

  /** The single value of an instant query, or null when it has no sample. */
  async value(expr: string): Promise<number | null> {
    const result = await this.query(expr);
    return result[0]?.value ?? null;
  }

  /** A JSON document of the API (`/api/v1/targets`, `/api/v1/metadata`, …). */
  async api<T>(route: string): Promise<T> {
    const res = await fetch(`${this.url}${route}`);
    return ((await res.json()) as { data: T }).data;
  }

  logs(): string {
    return this.output;
  }

  /** Stops the server (SIGTERM, then SIGKILL after 10 s) and removes its storage. */
  async stop(): Promise<void> {
    const child = this.child;
    if (child && child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGTERM");
      const killer = setTimeout(() => child.kill("SIGKILL"), 10_000);
      await exited;
      clearTimeout(killer);
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}
