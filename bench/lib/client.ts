/**
 * HTTP clients that speak Outpost's real protocols over loopback: the user API (owner token),
 * the agent protocol (`/agent/v1/*`, parsed with the shared zod schemas) and the Terraform http
 * state backend. Shared by the bench and the chaos tests; no call here retries on its own.
 */
import { createHash } from "node:crypto";
import {
  type JobAssignment,
  JobsNextResponse,
  type PlanSummary,
  RegisterResponse,
} from "@outpost/protocol";
import { buildTarGz } from "../../test/node/helpers/tarball.ts";

export type Answer = { status: number; body: unknown; text: string; headers: Headers };

/** One HTTP exchange; bodies are JSON unless they are bytes. */
export async function call(
  url: string,
  init: {
    method?: string;
    token?: string;
    headers?: Record<string, string>;
    json?: unknown;
    bytes?: Uint8Array;
    signal?: AbortSignal;
  } = {},
): Promise<Answer> {
  const headers: Record<string, string> = { ...init.headers };
  if (init.token) {
    headers.authorization = `Bearer ${init.token}`;
  }
  let body: string | Uint8Array | undefined;
  if (init.json !== undefined) {
    headers["content-type"] = "application/json";
    body = JSON.stringify(init.json);
  } else if (init.bytes) {
    body = init.bytes;
  }
  const res = await fetch(url, {
    method: init.method ?? "GET",
    headers,
    body,
    ...(init.signal ? { signal: init.signal } : {}),
  });
  const text = await res.text();
  let parsed: unknown = null;
  if (text && res.headers.get("content-type")?.includes("json")) {
    parsed = JSON.parse(text);
  }
  return { status: res.status, body: parsed, text, headers: res.headers };
}

/** Throws with the answer when the status is not the expected one. */
export function expectOk(answer: Answer, status: number, what: string): Record<string, unknown> {
  if (answer.status !== status) {
    throw new Error(`${what}: expected ${status}, got ${answer.status}: ${answer.text}`);
  }
  return (answer.body ?? {}) as Record<string, unknown>;
}

/** The user API as the org's owner. */
export class UserApi {
  readonly url: string;
  readonly token: string;

  constructor(url: string, token: string) {
    this.url = url;
    this.token = token;
  }

  async json(method: string, path: string, json?: unknown): Promise<Answer> {
    return call(`${this.url}${path}`, { method, token: this.token, json });
  }

  /** A pool and one agent token for it. */
  async pool(name: string): Promise<{ poolId: string; agentToken: string }> {
    const pool = expectOk(await this.json("POST", "/api/v1/pools", { name }), 201, "pool");
    const poolId = String(pool.id);
    const token = expectOk(
      await this.json("POST", `/api/v1/pools/${poolId}/tokens`, { description: name }),
      201,
      "agent token",
    );
    return { poolId, agentToken: String(token.token) };
  }

  /** A workspace (agent mode on `poolId`, else local) with one uploaded configuration. */
  async workspace(name: string, poolId?: string, autoApply = false): Promise<string> {
    const ws = expectOk(
      await this.json("POST", "/api/v1/workspaces", {
        name,
        engine: "terraform",
        engineVersion: "1.9.5",
        executionMode: poolId ? "agent" : "local",
        ...(poolId ? { poolId } : {}),
        autoApply,
      }),
      201,
      "workspace",
    );
    const id = String(ws.id);
    if (poolId) {
      const tarball = buildTarGz([{ name: "main.tf", body: 'resource "null_resource" "a" {}\n' }]);
      expectOk(
        await call(`${this.url}/api/v1/workspaces/${id}/configuration-versions`, {
          method: "POST",
          token: this.token,
          headers: { "content-type": "application/gzip" },
          bytes: new Uint8Array(tarball),
        }),
        201,
        "configuration upload",
      );
    }
    return id;
  }

  async queueRun(workspaceId: string, operation: "plan" | "apply" = "plan"): Promise<string> {
    const run = expectOk(
      await this.json("POST", `/api/v1/workspaces/${workspaceId}/runs`, { operation }),
      201,
      "queue run",
    );
    return String(run.id);
  }

  async run(runId: string): Promise<Record<string, unknown>> {
    return expectOk(await this.json("GET", `/api/v1/runs/${runId}`), 200, "get run");
  }
}

export const NO_CHANGES: PlanSummary = {
  adds: 0,
  changes: 0,
  destroys: 0,
  imports: 0,
  hasChanges: false,
};

/** An agent speaking `/agent/v1/*` by hand: every request is one call, nothing retried. */
export class ProtocolAgent {
  agentId = "";

  readonly url: string;
  readonly token: string;

  constructor(url: string, token: string) {
    this.url = url;
    this.token = token;
  }

  private headers(): Record<string, string> {
    return { "outpost-agent-id": this.agentId };
  }

  async register(name: string, capacity = 1): Promise<void> {
    const answer = await call(`${this.url}/agent/v1/register`, {
      method: "POST",
      token: this.token,
      json: { name, version: "bench", os: "linux", arch: "amd64", capacity },
    });
    this.agentId = RegisterResponse.parse(expectOk(answer, 201, "register")).agentId;
  }

  /** One long-poll: the job, `exit`, or null on 204. */
  async next(waitSeconds: number, signal?: AbortSignal): Promise<JobAssignment | "exit" | null> {
    const answer = await call(`${this.url}/agent/v1/jobs/next?wait=${waitSeconds}`, {
      method: "POST",
      token: this.token,
      headers: this.headers(),
      ...(signal ? { signal } : {}),
    });
    if (answer.status === 204) {
      return null;
    }
    const body = JobsNextResponse.parse(expectOk(answer, 200, "jobs/next"));
    return body.action === "run" ? body.job : "exit";
  }

  jobPath(job: JobAssignment, action: string): string {
    return `${this.url}/agent/v1/jobs/${encodeURIComponent(job.jobId)}/leases/${job.leaseId}/${action}`;
  }

  async start(job: JobAssignment): Promise<Answer> {
    return call(this.jobPath(job, "start"), {
      method: "POST",
      token: this.token,
      headers: this.headers(),
    });
  }

  async finish(job: JobAssignment, body: Record<string, unknown> = {}): Promise<Answer> {
    return call(this.jobPath(job, "finish"), {
      method: "POST",
      token: this.token,
      headers: this.headers(),
      json: {
        outcome: "succeeded",
        exitCode: 0,
        ...(job.phase === "plan" ? { planSummary: NO_CHANGES } : {}),
        ...body,
      },
    });
  }

  async heartbeat(running: JobAssignment[] = []): Promise<Answer> {
    return call(`${this.url}/agent/v1/heartbeat`, {
      method: "POST",
      token: this.token,
      headers: this.headers(),
      json: { running: running.map((j) => ({ jobId: j.jobId, leaseId: j.leaseId })) },
    });
  }

  async goodbye(): Promise<Answer> {
    return call(`${this.url}/agent/v1/goodbye`, {
      method: "POST",
      token: this.token,
      headers: this.headers(),
      json: { reason: "bench done" },
    });
  }

  /** Appends log bytes with the job's run token. */
  async log(job: JobAssignment, offset: number, bytes: Uint8Array): Promise<Answer> {
    return call(`${this.jobPath(job, "logs")}?offset=${offset}`, {
      method: "PUT",
      token: job.runToken ?? "",
      headers: { "content-type": "application/octet-stream" },
      bytes,
    });
  }
}

export function md5Base64(bytes: Uint8Array): string {
  return createHash("md5").update(bytes).digest("base64");
}

/** Terraform's http backend as the CLI speaks it: basic auth with the token as password. */
export class StateClient {
  readonly url: string;
  readonly workspaceId: string;
  readonly token: string;

  constructor(url: string, workspaceId: string, token: string) {
    this.url = url;
    this.workspaceId = workspaceId;
    this.token = token;
  }

  private auth(): Record<string, string> {
    return { authorization: `Basic ${Buffer.from(`outpost:${this.token}`).toString("base64")}` };
  }

  async put(state: Uint8Array, lockId?: string): Promise<Answer> {
    const query = lockId ? `?ID=${encodeURIComponent(lockId)}` : "";
    return call(`${this.url}/state/v1/${this.workspaceId}${query}`, {
      method: "POST",
      headers: {
        ...this.auth(),
        "content-type": "application/json",
        "content-md5": md5Base64(state),
      },
      bytes: state,
    });
  }

  async get(): Promise<Answer> {
    return call(`${this.url}/state/v1/${this.workspaceId}`, { headers: this.auth() });
  }

  async lock(id: string, method: "LOCK" | "UNLOCK"): Promise<Answer> {
    const info = JSON.stringify({
      ID: id,
      Operation: "OperationTypeApply",
      Info: "",
      Who: "bench@loopback",
      Version: "1.9.5",
      Created: new Date().toISOString(),
      Path: "",
    });
    return call(`${this.url}/state/v1/${this.workspaceId}`, {
      method,
      headers: { ...this.auth(), "content-type": "application/json" },
      bytes: new TextEncoder().encode(info),
    });
  }
}

/** A terraform format-4 state of about `bytes` bytes. */
export function stateOf(serial: number, lineage: string, bytes: number): Uint8Array {
  const filler = "x".repeat(4000);
  const resources: string[] = [];
  let size = 0;
  for (let i = 0; size < bytes; i++) {
    const r = JSON.stringify({
      mode: "managed",
      type: "null_resource",
      name: `r_${i}`,
      provider: 'provider["registry.terraform.io/hashicorp/null"]',
      instances: [{ schema_version: 0, attributes: { id: `id-${i}`, note: filler } }],
    });
    resources.push(r);
    size += r.length + 1;
  }
  const text = `{"version":4,"terraform_version":"1.9.5","serial":${serial},"lineage":"${lineage}","outputs":{},"resources":[${resources.join(",")}],"check_results":null}\n`;
  return new TextEncoder().encode(text);
}
