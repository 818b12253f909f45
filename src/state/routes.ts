/**
 * `/state/v1/{workspaceId}`: Terraform's and OpenTofu's `http` state backend, exactly as their
 * clients speak it (docs/state-backend.md). Not part of the JSON API: basic auth with
 * the token as password (or bearer), custom LOCK/UNLOCK methods that OpenAPI cannot describe,
 * and state bodies of tens of MB that stream to R2. POST `/lock` and `/unlock` serve proxies
 * that drop custom methods.
 */
import { z } from "@hono/zod-openapi";
import { type Context, Hono } from "hono";
import type { Principal } from "../authz/principal.ts";
import { PERSON_KINDS } from "../authz/principal.ts";
import type { AppEnv } from "../env.ts";
import { ApiError, reasonError, zodIssues } from "../errors.ts";
import { toHex } from "../lib/crypto.ts";
import { requireAuth } from "../middleware/auth.ts";
import { limitBody } from "../middleware/body-limit.ts";
import { WorkspaceRef } from "../workspaces/model.ts";
import type { StateReason, StateResult } from "./access.ts";
import { asNamed, stateWorkspaceId } from "./http.ts";
import { lockState, type UnlockRequest, unlockState } from "./locks.ts";
import { LOCK_INFO_MAX_BYTES, LockInfo, parseContentMd5, STATE_MAX_BYTES } from "./model.ts";
import { deleteState, md5Base64, readState, writeState } from "./service.ts";

// Who may do what to a workspace's state is decided by the service (`openWorkspace`): `may` for
// people, the job's phase for run tokens.
const callers = requireAuth({ kinds: [...PERSON_KINDS, "run"], allowBasic: true });

const Params = z.object({ workspaceId: WorkspaceRef });
const WriteQuery = z.object({ ID: z.string().min(1).max(256).optional() });

function principal(c: Context<AppEnv>): Principal {
  return c.get("principal");
}

/** The workspace the path names (id or name), as named and as resolved; a miss throws the 404. */
type Target = { readonly ref: string; readonly id: string };

async function target(c: Context<AppEnv>): Promise<Target> {
  const parsed = Params.safeParse(c.req.param());
  if (!parsed.success) {
    throw new ApiError("BAD_REQUEST", "invalid workspace", {
      issues: zodIssues(parsed.error, "param"),
    });
  }
  const ref = parsed.data.workspaceId;
  return { ref, id: await stateWorkspaceId(c, ref) };
}

/**
 * A refusal. When a lock is at stake the body is the holder's lock info — the clients parse a
 * 423/409 LOCK answer as LockInfo — with the usual error envelope beside it (Go's decoder ignores
 * the extra key).
 */
function failure(c: Context<AppEnv>, reason: StateReason): Response {
  const error = reasonError(reason);
  if (reason.lockInfo === undefined) {
    throw error;
  }
  let info: unknown = {};
  try {
    info = JSON.parse(reason.lockInfo);
  } catch {
    info = {};
  }
  const body = {
    ...(typeof info === "object" && info !== null ? info : {}),
    error: { code: error.code, message: error.message, requestId: c.get("requestId") },
  };
  return c.json(body, error.status);
}

function unwrap<T>(c: Context<AppEnv>, result: StateResult<T>, to: Target): T | Response {
  const named = asNamed(result, to.ref, to.id);
  return named.ok ? named.value : failure(c, named.reason);
}

async function handleWrite(c: Context<AppEnv>): Promise<Response> {
  const to = await target(c);
  const query = WriteQuery.safeParse(c.req.query());
  if (!query.success) {
    throw new ApiError("BAD_REQUEST", "invalid ID", { issues: zodIssues(query.error, "query") });
  }
  const lengthHeader = c.req.header("content-length");
  const contentLength = lengthHeader === undefined ? null : Number(lengthHeader);
  if (contentLength !== null && (!Number.isSafeInteger(contentLength) || contentLength < 0)) {
    throw new ApiError("BAD_REQUEST", "invalid Content-Length");
  }
  if (contentLength !== null && contentLength > STATE_MAX_BYTES) {
    throw new ApiError("PAYLOAD_TOO_LARGE", `the state is larger than ${STATE_MAX_BYTES} bytes`);
  }
  const md5Header = c.req.header("content-md5");
  const contentMd5 = md5Header === undefined ? null : parseContentMd5(md5Header);
  if (md5Header !== undefined && contentMd5 === null) {
    throw new ApiError("BAD_REQUEST", "Content-MD5 must be the base64 of a 16-byte MD5 digest");
  }
  const body = c.req.raw.body ?? new Response("").body;
  if (body === null) {
    throw new Error("no body stream");
  }
  const result = await writeState(c.var.deps, {
    principal: principal(c),
    workspaceId: to.id,
    lockId: query.data.ID ?? null,
    body,
    contentLength: c.req.raw.body === null ? 0 : contentLength,
    contentMd5,
  });
  const outcome = unwrap(c, result, to);
  if (outcome instanceof Response) {
    return outcome;
  }
  return c.json(
    { stateVersionId: outcome.version.id, serial: outcome.version.serial, isNoop: outcome.isNoop },
    200,
  );
}

type LockBody = { kind: "empty" } | { kind: "info"; info: LockInfo; text: string };

/** The lock-info body of LOCK/UNLOCK: empty (Terraform's force-unlock) or LockInfo JSON. */
async function lockBody(c: Context<AppEnv>): Promise<LockBody> {
  const bytes = new Uint8Array(await c.req.arrayBuffer());
  const md5Header = c.req.header("content-md5");
  if (md5Header !== undefined) {
    const expected = parseContentMd5(md5Header);
    const actual = toHex(await crypto.subtle.digest("MD5", bytes));
    if (expected === null || toHex(expected) !== actual) {
      throw new ApiError("BAD_REQUEST", "Content-MD5 does not match the body");
    }
  }
  const text = new TextDecoder().decode(bytes);
  if (text.length === 0) {
    return { kind: "empty" };
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new ApiError("BAD_REQUEST", "the lock info is not valid JSON");
  }
  const info = LockInfo.safeParse(json);
  if (!info.success) {
    throw new ApiError("BAD_REQUEST", "invalid lock info", {
      issues: zodIssues(info.error, "body"),
    });
  }
  return { kind: "info", info: info.data, text };
}

async function handleLock(c: Context<AppEnv>): Promise<Response> {
  const to = await target(c);
  const body = await lockBody(c);
  if (body.kind === "empty") {
    throw new ApiError("BAD_REQUEST", "LOCK needs the lock info as its body");
  }
  const result = await lockState(c.var.deps, {
    principal: principal(c),
    workspaceId: to.id,
    info: body.info,
    infoText: body.text,
  });
  const lock = unwrap(c, result, to);
  return lock instanceof Response
    ? lock
    : c.body(lock.info, 200, { "content-type": "application/json" });
}

async function handleUnlock(c: Context<AppEnv>): Promise<Response> {
  const to = await target(c);
  const body = await lockBody(c);
  const request: UnlockRequest =
    body.kind === "empty" ? body : { kind: "info", id: body.info.ID, text: body.text };
  const result = await unlockState(c.var.deps, {
    principal: principal(c),
    workspaceId: to.id,
    request,
  });
  const outcome = unwrap(c, result, to);
  return outcome instanceof Response ? outcome : c.json(outcome, 200);
}

function methodNotAllowed(allow: string) {
  return (c: Context<AppEnv>) => {
    throw new ApiError(
      "METHOD_NOT_ALLOWED",
      `${c.req.method} is not supported here; use ${allow}`,
      {
        headers: { Allow: allow },
      },
    );
  };
}

const lockLimit = limitBody(LOCK_INFO_MAX_BYTES);

export const stateRoutes = new Hono<AppEnv>()
  .get("/:workspaceId", callers, async (c) => {
    const to = await target(c);
    const result = await readState(c.var.deps, principal(c), to.id);
    const state = unwrap(c, result, to);
    if (state instanceof Response) {
      return state;
    }
    if (state === null) {
      return c.body(null, 204);
    }
    return c.body(state.body, 200, {
      "content-type": "application/json",
      "content-length": String(state.sizeBytes),
      "content-md5": md5Base64(state.md5Hex),
      "outpost-state-version-id": state.version.id,
    });
  })
  .on(["POST", "PUT"], "/:workspaceId", callers, handleWrite)
  .delete("/:workspaceId", callers, async (c) => {
    const to = await target(c);
    const result = await deleteState(c.var.deps, principal(c), to.id);
    const outcome = unwrap(c, result, to);
    return outcome instanceof Response ? outcome : c.json(outcome, 200);
  })
  .on(["LOCK"], ["/:workspaceId", "/:workspaceId/lock"], callers, lockLimit, handleLock)
  .on(["UNLOCK"], ["/:workspaceId", "/:workspaceId/unlock"], callers, lockLimit, handleUnlock)
  .post("/:workspaceId/lock", callers, lockLimit, handleLock)
  .post("/:workspaceId/unlock", callers, lockLimit, handleUnlock)
  .all("/:workspaceId", methodNotAllowed("GET, POST, PUT, DELETE, LOCK, UNLOCK"))
  .all("/:workspaceId/lock", methodNotAllowed("LOCK, POST"))
  .all("/:workspaceId/unlock", methodNotAllowed("UNLOCK, POST"));
