import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * A meeting point on loopback for processes that must overlap in time (two jobs probing each
 * other): `GET /<key>` is held until `parties` requests for the same key arrived, then all are
 * answered 200. A request that waits longer than `timeoutMs` is answered 504, so nothing hangs.
 */
export class Barrier {
  private server: Server | null = null;
  private readonly waiting = new Map<string, ServerResponse[]>();
  /** How many requests each key has seen. */
  readonly arrivals = new Map<string, number>();

  private readonly parties: number;
  private readonly timeoutMs: number;

  constructor(parties: number, timeoutMs = 30_000) {
    this.parties = parties;
    this.timeoutMs = timeoutMs;
  }

  get url(): string {
    const address = this.server?.address() as AddressInfo | null;
    return `http://127.0.0.1:${address?.port ?? 0}`;
  }

  async start(): Promise<void> {
    this.server = createServer((req, res) => this.arrive(req, res));
    await new Promise<void>((resolve) => this.server?.listen(0, "127.0.0.1", resolve));
  }

  async stop(): Promise<void> {
    for (const responses of this.waiting.values()) {
      for (const res of responses) {
        res.writeHead(503).end();
      }
    }
    this.waiting.clear();
    await new Promise((resolve) => this.server?.close(resolve));
  }

  private arrive(req: IncomingMessage, res: ServerResponse): void {
    const key = req.url ?? "/";
    this.arrivals.set(key, (this.arrivals.get(key) ?? 0) + 1);
    const held = [...(this.waiting.get(key) ?? []), res];
    if (held.length >= this.parties) {
      this.waiting.delete(key);
      for (const r of held) {
        r.writeHead(200).end("go");
      }
      return;
    }
    this.waiting.set(key, held);
    const timer = setTimeout(() => {
      const still = this.waiting.get(key) ?? [];
      if (still.includes(res)) {
        this.waiting.set(
          key,
          still.filter((r) => r !== res),
        );
        res.writeHead(504).end("the other party never came");
      }
    }, this.timeoutMs);
    res.on("close", () => clearTimeout(timer));
  }
}
