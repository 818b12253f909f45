/**
 * A loopback HTTP proxy between an agent and the coordinator that drops, delays and duplicates
 * requests and responses, chosen by a seeded PRNG so a failing run can be replayed. Faults are
 * bounded in number; past the budget the proxy forwards faithfully.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";

/** mulberry32: a small, well-distributed seeded PRNG. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export type Fault = "drop-request" | "drop-response" | "delay" | "duplicate-request";

export type ProxyOptions = {
  target: string;
  seed: number;
  /** Probability of each fault per request. */
  rates: Partial<Record<Fault, number>>;
  /** At most this many faults in total. */
  budget: number;
  /** Longest injected delay. */
  maxDelayMs?: number;
  /** Which requests may be faulted (default: all). */
  eligible?: (method: string, path: string) => boolean;
};

export type FaultRecord = { fault: Fault; method: string; path: string };

export class ChaosProxy {
  readonly faults: FaultRecord[] = [];
  private server: Server | null = null;
  private readonly random: () => number;
  private readonly options: ProxyOptions;
  url = "";

  constructor(options: ProxyOptions) {
    this.options = options;
    this.random = prng(options.seed);
  }

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      this.handle(req, res).catch(() => res.destroy());
    });
    await new Promise<void>((done) => this.server?.listen(0, "127.0.0.1", done));
    const address = this.server.address() as AddressInfo;
    this.url = `http://127.0.0.1:${address.port}`;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((done) => this.server?.close(() => done()));
  }

  count(fault: Fault): number {
    return this.faults.filter((f) => f.fault === fault).length;
  }

  private pick(method: string, path: string): Fault | null {
    if (this.faults.length >= this.options.budget) {
      return null;
    }
    if (this.options.eligible && !this.options.eligible(method, path)) {
      return null;
    }
    const roll = this.random();
    let edge = 0;
    for (const [fault, rate] of Object.entries(this.options.rates) as [Fault, number][]) {
      edge += rate;
      if (roll < edge) {
        this.faults.push({ fault, method, path });
        return fault;
      }
    }
    return null;
  }

  private async forward(req: IncomingMessage, body: Buffer): Promise<Response> {
    const headers = new Headers();
    for (const [name, value] of Object.entries(req.headers)) {
      if (typeof value === "string" && !["host", "connection", "content-length"].includes(name)) {
        headers.set(name, value);
      }
    }
    return fetch(`${this.options.target}${req.url ?? "/"}`, {
      method: req.method ?? "GET",
      headers,
      body: body.length > 0 || !["GET", "HEAD"].includes(req.method ?? "GET") ? body : undefined,
      redirect: "manual",
    });
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) {
      chunks.push(chunk as Buffer);
    }
    const body = Buffer.concat(chunks);
    const method = req.method ?? "GET";
    const path = (req.url ?? "/").split("?")[0] ?? "/";
    const fault = this.pick(method, path);
    if (fault === "drop-request") {
      // The coordinator never sees it; the client sees a reset connection.
      res.destroy();
      return;
    }
    if (fault === "delay") {
      await sleep(Math.floor(this.random() * (this.options.maxDelayMs ?? 500)));
    }
    if (fault === "duplicate-request") {
      // The coordinator sees the request twice; the client gets the second answer.
      const first = await this.forward(req, body);
      await first.arrayBuffer();
    }
    const answer = await this.forward(req, body);
    const bytes = Buffer.from(await answer.arrayBuffer());
    if (fault === "drop-response") {
      // The coordinator acted on it; the client never learns the outcome.
      res.destroy();
      return;
    }
    const headers: Record<string, string> = {};
    answer.headers.forEach((value, name) => {
      if (
        !["content-length", "transfer-encoding", "connection", "content-encoding"].includes(name)
      ) {
        headers[name] = value;
      }
    });
    res.writeHead(answer.status, headers);
    res.end(bytes);
  }
}
