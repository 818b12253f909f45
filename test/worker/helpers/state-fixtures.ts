/**
 * State backend fixtures: workspaces, runs and run tokens seeded straight into D1 (the
 * workspaces and runs APIs are separate features), state bodies shaped like Terraform's, and a
 * client that sends exactly the requests Terraform's and OpenTofu's `http` backend send
 * (hashicorp/terraform internal/backend/remote-state/http/client.go; protocols.md §1.2–1.4).
 */
import { newId } from "@outpost/common";
import type { RunStatus } from "@outpost/protocol";
import { and, eq } from "drizzle-orm";
import { projects, runs, runTokens, workspaces } from "../../../src/db/schema.ts";
import { generateToken, hashToken } from "../../../src/tokens/model.ts";
import { BASE, workerFetch } from "./api.ts";
import { db, type TestOrg } from "./fixtures.ts";

let counter = 0;

/** A workspace of the org, local mode unless told otherwise. */
export async function seedWorkspace(
  org: TestOrg,
  options: { executionMode?: "agent" | "local"; lockedBy?: string } = {},
): Promise<string> {
  const id = newId("workspace");
  const now = Date.now();
  // As the application does: every workspace is in a project, the org's default one here.
  const [project] = await db
    .select({ id: projects.id })
    .from(projects)
    .where(and(eq(projects.orgId, org.orgId), eq(projects.isDefault, true)));
  await db.insert(workspaces).values({
    id,
    orgId: org.orgId,
    projectId: project?.id ?? null,
    name: `ws-${now.toString(36)}-${counter++}`,
    executionMode: options.executionMode ?? "local",
    engineVersion: "1.9.5",
    lockedBy: options.lockedBy ?? null,
    lockReason: options.lockedBy ? "maintenance" : null,
    lockedAt: options.lockedBy ? now : null,
    updatedAt: now,
  });
  return id;
}

export type TestRun = { runId: string; token: string; tokenId: string };

/** A run of the workspace in `status` (active by default) with a per-run token for its job. */
export async function seedRun(
  org: TestOrg,
  workspaceId: string,
  status: RunStatus = "applying",
): Promise<TestRun> {
  const runId = newId("run");
  const token = generateToken("run");
  const tokenId = newId("runToken");
  await db.insert(runs).values({
    id: runId,
    orgId: org.orgId,
    workspaceId,
    operation: "apply",
    status,
    updatedAt: Date.now(),
  });
  await db.insert(runTokens).values({
    id: tokenId,
    orgId: org.orgId,
    runId,
    workspaceId,
    jobId: `${runId}:apply`,
    leaseId: "lease_seeded",
    tokenHash: await hashToken(token),
    // As if its agent had acknowledged the lease: the token is live.
    startedAt: Date.now(),
  });
  return { runId, token, tokenId };
}

/** `Authorization: Basic base64(username:token)`, as Terraform sends `username`/`password`. */
export function basicAuth(token: string, username = "terraform"): Record<string, string> {
  return { authorization: `Basic ${btoa(`${username}:${token}`)}` };
}

const encoder = new TextEncoder();

/** Standard base64 of the raw MD5 digest, as the client computes `Content-MD5`. */
export async function md5Base64(body: Uint8Array): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest("MD5", body));
  return btoa(String.fromCharCode(...digest));
}

/** A Terraform state (format version 4) in the client's own key order. */
export function stateJson(options: {
  serial: number;
  lineage: string;
  outputs?: Record<string, { value: unknown; type: unknown; sensitive?: boolean }>;
  resources?: unknown[];
  terraformVersion?: string;
}): string {
  return `${JSON.stringify(
    {
      version: 4,
      terraform_version: options.terraformVersion ?? "1.9.5",
      serial: options.serial,
      lineage: options.lineage,
      outputs: options.outputs ?? {},
      resources: options.resources ?? [],
      check_results: null,
    },
    null,
    2,
  )}\n`;
}

/** Lock info as `statemgr.NewLockInfo` marshals it (no json tags: Go field names). */
export function lockInfo(operation = "OperationTypeApply", who = "alice@laptop") {
  return {
    ID: crypto.randomUUID(),
    Operation: operation,
    Info: "",
    Who: who,
    Version: "1.9.5",
    Created: "2026-11-22T06:00:00.123456789Z",
    Path: "",
  };
}

/**
 * One `http` backend client: `address` with lock_address = unlock_address = address and the
 * default methods (GET, POST, LOCK, UNLOCK), basic auth with the token as password, and the
 * Content-Type / Content-MD5 headers on every request with a body.
 */
export class BackendClient {
  readonly address: string;
  private readonly auth: Record<string, string>;
  /** `c.jsonLockInfo`: the body of this client's successful LOCK, re-sent by its UNLOCK. */
  private jsonLockInfo: string | null = null;
  lockId: string | null = null;

  constructor(workspaceId: string, token: string, options: { bearer?: boolean } = {}) {
    this.address = `/state/v1/${workspaceId}`;
    this.auth = options.bearer ? { authorization: `Bearer ${token}` } : basicAuth(token);
  }

  async send(
    method: string,
    path: string,
    body?: Uint8Array | string,
    headers: Record<string, string> = {},
  ): Promise<Response> {
    const all: Record<string, string> = { ...this.auth, ...headers };
    let bytes: Uint8Array | undefined;
    if (body !== undefined) {
      bytes = typeof body === "string" ? encoder.encode(body) : body;
      all["content-type"] ??= "application/json";
      all["content-md5"] ??= await md5Base64(bytes);
    }
    return workerFetch(new Request(`${BASE}${path}`, { method, headers: all, body: bytes }));
  }

  /** `Get`: 200 with the state, 204 when none. */
  get(): Promise<Response> {
    return this.send("GET", this.address);
  }

  /** `Put`: POST the state, with `?ID=` while this client holds a lock. */
  put(state: string | Uint8Array, options: { method?: string } = {}): Promise<Response> {
    const path = this.lockId
      ? `${this.address}?ID=${encodeURIComponent(this.lockId)}`
      : this.address;
    return this.send(options.method ?? "POST", path, state);
  }

  /** `Lock`: LOCK with the lock info; remembers it on 200. */
  async lock(
    info = lockInfo(),
    options: { method?: string; path?: string } = {},
  ): Promise<Response> {
    const text = JSON.stringify(info);
    const res = await this.send(options.method ?? "LOCK", options.path ?? this.address, text);
    if (res.status === 200) {
      this.jsonLockInfo = text;
      this.lockId = info.ID;
    }
    return res;
  }

  /** Terraform's `Unlock(id)`: ignores the id and re-sends its own LOCK body. */
  async unlock(options: { method?: string; path?: string } = {}): Promise<Response> {
    const res = await this.send(
      options.method ?? "UNLOCK",
      options.path ?? this.address,
      this.jsonLockInfo ?? "",
    );
    if (res.status === 200) {
      this.jsonLockInfo = null;
      this.lockId = null;
    }
    return res;
  }

  /** `terraform force-unlock ID` in a fresh process: UNLOCK with an empty body (terraform#28421). */
  terraformForceUnlock(): Promise<Response> {
    return this.send("UNLOCK", this.address, "");
  }

  /** `tofu force-unlock ID` (OpenTofu ≥ 1.10): a LockInfo carrying only the ID. */
  tofuForceUnlock(id: string): Promise<Response> {
    const body = JSON.stringify({
      ID: id,
      Operation: "",
      Info: "",
      Who: "",
      Version: "",
      Created: "0001-01-01T00:00:00Z",
      Path: "",
    });
    return this.send("UNLOCK", this.address, body);
  }
}
