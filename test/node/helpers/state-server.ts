import { createHash } from "node:crypto";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";

/** One request the backend received, for assertions. */
export type BackendRequest = {
  method: string;
  workspaceId: string;
  lockId: string | null;
  username: string | null;
  contentMd5: string | null;
  body: string;
};

type Workspace = {
  state: string | null;
  serial: number;
  lineage: string | null;
  lock: string | null;
};

/**
 * A small Terraform `http` state backend on 127.0.0.1 (an ephemeral port), following
 * docs/state-backend.md: basic auth with the token as password, GET/POST with
 * `?ID=`, LOCK/UNLOCK with LockInfo JSON (423 + held lock), Content-MD5 checked, serial and
 * lineage enforced. It stands in for the coordinator's state routes in agent tests.
 */
export class StateServer {
  readonly requests: BackendRequest[] = [];
  readonly workspaces = new Map<string, Workspace>();
  /** Answer the next N requests with this status (retry tests). */
  failNext: { count: number; status: number } = { count: 0, status: 500 };
  private server: Server | null = null;
  private readonly tokens: Map<string, string>;

  /** @param tokens workspaceId → the password (run token) it accepts */
  constructor(tokens: Record<string, string>) {
    this.tokens = new Map(Object.entries(tokens));
  }

  get url(): string {
    const address = this.server?.address() as AddressInfo | null;
    if (!address) {
      throw new Error("state server not started");
    }
    return `http://127.0.0.1:${address.port}`;
  }

  /** The address a job's backend points at. */
  stateAddress(workspaceId: string): string {
    return `${this.url}/state/v1/${workspaceId}`;
  }

  currentState(workspaceId: string): Record<string, unknown> | null {
    const state = this.workspaces.get(workspaceId)?.state;
    return state ? (JSON.parse(state) as Record<string, unknown>) : null;
  }

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      void this.handle(req).then(({ status, body }) => {
        res.writeHead(status, { "content-type": "application/json" });
        res.end(body);
      });
    });
    const server = this.server;
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  }

  async stop(): Promise<void> {
    const server = this.server;
    if (server) {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  }

  private async handle(req: IncomingMessage): Promise<{ status: number; body: string }> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) {
      chunks.push(chunk as Buffer);
    }
    const body = Buffer.concat(chunks).toString("utf8");
    const url = new URL(req.url ?? "/", "http://localhost");
    const match = /^\/state\/v1\/([\w-]+)$/.exec(url.pathname);
    const auth = parseBasic(req.headers.authorization);
    const method = req.method ?? "GET";
    const workspaceId = match?.[1] ?? "";
    this.requests.push({
      method,
      workspaceId,
      lockId: url.searchParams.get("ID"),
      username: auth?.username ?? null,
      contentMd5: (req.headers["content-md5"] as string | undefined) ?? null,
      body,
    });
    if (this.failNext.count > 0) {
      this.failNext.count -= 1;
      return { status: this.failNext.status, body: "{}" };
    }
    if (!match) {
      return { status: 404, body: "{}" };
    }
    if (!auth) {
      return { status: 401, body: "{}" };
    }
    if (this.tokens.get(workspaceId) !== auth.password) {
      return { status: 403, body: "{}" };
    }
    const md5 = req.headers["content-md5"];
    if (md5 !== undefined && md5 !== createHash("md5").update(body).digest("base64")) {
      return { status: 400, body: "{}" };
    }
    let ws = this.workspaces.get(workspaceId);
    if (!ws) {
      ws = { state: null, serial: 0, lineage: null, lock: null };
      this.workspaces.set(workspaceId, ws);
    }
    return this.operate(ws, method, body, url.searchParams.get("ID"));
  }

  private operate(ws: Workspace, method: string, body: string, lockId: string | null) {
    const heldId = ws.lock ? (JSON.parse(ws.lock) as { ID: string }).ID : null;
    switch (method) {
      case "GET":
        return ws.state === null ? { status: 204, body: "" } : { status: 200, body: ws.state };
      case "LOCK": {
        const id = (JSON.parse(body) as { ID: string }).ID;
        if (heldId !== null && heldId !== id) {
          return { status: 423, body: ws.lock ?? "" };
        }
        ws.lock = body;
        return { status: 200, body: "{}" };
      }
      case "UNLOCK": {
        const id = body ? (JSON.parse(body) as { ID: string }).ID : null;
        if (heldId !== null && id !== heldId) {
          return { status: 409, body: ws.lock ?? "" };
        }
        ws.lock = null;
        return { status: 200, body: "{}" };
      }
      case "POST": {
        if (heldId !== null && lockId !== heldId) {
          return { status: 423, body: ws.lock ?? "" };
        }
        const next = JSON.parse(body) as { serial: number; lineage: string };
        if (ws.lineage !== null && next.lineage !== ws.lineage) {
          return { status: 409, body: "{}" };
        }
        if (ws.state !== null && next.serial <= ws.serial) {
          return { status: next.serial === ws.serial && body === ws.state ? 200 : 409, body: "{}" };
        }
        ws.state = body;
        ws.serial = next.serial;
        ws.lineage = next.lineage;
        return { status: 200, body: "{}" };
      }
      default:
        return { status: 405, body: "{}" };
    }
  }
}

function parseBasic(header: string | undefined): { username: string; password: string } | null {
  const m = /^Basic (.+)$/.exec(header ?? "");
  if (!m?.[1]) {
    return null;
  }
  const decoded = Buffer.from(m[1], "base64").toString("utf8");
  const colon = decoded.indexOf(":");
  return colon < 0
    ? null
    : { username: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
}
