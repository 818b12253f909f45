/**
 * The state backend's rules, pure: what a state file must look like, which write a version
 * history accepts (lineage, serial, same-serial retries), who holds the lock and who may take,
 * release or write past it, and who may see sensitive outputs. No I/O here.
 */
import { z } from "@hono/zod-openapi";
import { fail, ok, type Result } from "@outpost/common";
import { type Principal, principalId } from "../authz/principal.ts";
import type { FieldSpec, ScannedField } from "./json-scan.ts";

/** Largest state body accepted (Cloudflare's smallest request limit is 100 MB). */
export const STATE_MAX_BYTES = 96 * 1024 * 1024;
/** Largest lock-info body accepted. */
export const LOCK_INFO_MAX_BYTES = 64 * 1024;
/** Outputs bigger than this are not extracted; the outputs API then says so. */
export const OUTPUTS_MAX_BYTES = 4 * 1024 * 1024;

/** The top-level members of a state file the backend reads, and how much of each it keeps. */
export const STATE_FIELDS: Record<string, FieldSpec> = {
  version: { maxBytes: 32 },
  serial: { maxBytes: 32 },
  lineage: { maxBytes: 1024 },
  terraform_version: { maxBytes: 256 },
  encryption_version: { maxBytes: 256 },
  encrypted_data: { maxBytes: 0 },
  outputs: { maxBytes: OUTPUTS_MAX_BYTES },
};

/**
 * Terraform's `statemgr.LockInfo`. The Go struct has no json tags, so the keys are the field
 * names. Unknown keys are kept (the stored text is what the client sent).
 */
export const LockInfo = z.looseObject({
  ID: z.string().min(1).max(256),
  Operation: z.string().max(1024).optional(),
  Info: z
    .string()
    .max(16 * 1024)
    .optional(),
  Who: z.string().max(1024).optional(),
  Version: z.string().max(256).optional(),
  Created: z.string().max(256).optional(),
  Path: z.string().max(4096).optional(),
});
export type LockInfo = z.infer<typeof LockInfo>;

export type OutputsCapture =
  | { status: "stored"; json: Uint8Array }
  | { status: "none" | "encrypted" | "too_large" };

/** What the backend knows of a state file after scanning it. */
export type StateHeader = {
  serial: number;
  lineage: string;
  terraformVersion: string | null;
  isEncrypted: boolean;
  outputs: OutputsCapture;
  /** Byte span of the top-level `serial` value, for rewriting it on rollback. */
  serialSpan: { start: number; end: number };
};

const decoder = new TextDecoder();

function jsonString(field: ScannedField | undefined): string | null {
  if (field?.kind !== "string" || field.raw === null) {
    return null;
  }
  const value: unknown = JSON.parse(decoder.decode(field.raw));
  return typeof value === "string" ? value : null;
}

function rawNumber(field: ScannedField | undefined): string | null {
  return field?.kind === "number" && field.raw !== null ? decoder.decode(field.raw) : null;
}

/**
 * Checks the scanned top-level members: a Terraform state (`version` 3 or 4) or OpenTofu's
 * encrypted envelope (`encrypted_data` + `encryption_version`), each with a non-empty string
 * `lineage` and a non-negative integer `serial`. The failure says which rule.
 */
export function readStateHeader(fields: Map<string, ScannedField>): Result<StateHeader, string> {
  const isEncrypted =
    fields.get("encrypted_data")?.kind === "string" &&
    jsonString(fields.get("encryption_version")) !== null;
  if (!isEncrypted) {
    const version = rawNumber(fields.get("version"));
    if (version !== "3" && version !== "4") {
      return fail(
        version === null
          ? 'the body is not a state file: no numeric "version" (and not an OpenTofu encrypted state)'
          : `the body is not a state file: state format version ${version} is not supported (3 or 4)`,
      );
    }
  }
  const lineage = jsonString(fields.get("lineage"));
  if (lineage === null || lineage.length === 0 || lineage.length > 256) {
    return fail('the body is not a state file: "lineage" must be a non-empty string');
  }
  const serialField = fields.get("serial");
  const serialText = rawNumber(serialField);
  if (serialField === undefined || serialText === null || !/^(0|[1-9][0-9]*)$/.test(serialText)) {
    return fail('the body is not a state file: "serial" must be a non-negative integer');
  }
  const serial = Number(serialText);
  if (!Number.isSafeInteger(serial)) {
    return fail('the body is not a state file: "serial" is too large');
  }
  const terraformVersion = jsonString(fields.get("terraform_version"));
  const outputsField = fields.get("outputs");
  let outputs: OutputsCapture;
  if (isEncrypted) {
    outputs = { status: "encrypted" };
  } else if (outputsField?.kind !== "object") {
    outputs = { status: "none" };
  } else {
    outputs = outputsField.raw
      ? { status: "stored", json: outputsField.raw }
      : { status: "too_large" };
  }
  return ok({
    serial,
    lineage,
    terraformVersion: terraformVersion && terraformVersion.length <= 64 ? terraformVersion : null,
    isEncrypted,
    outputs,
    serialSpan: { start: serialField.start, end: serialField.end },
  });
}

/** The live version a write is compared with. */
export type CurrentVersion = { serial: number; lineage: string; md5: string };

export type WriteDecision =
  | { kind: "accept" }
  | { kind: "noop" }
  | { kind: "refuse"; message: string };

/**
 * The version-history rules (terraform's own `statemgr.CheckValidImport`): anything goes on an
 * empty history; then the lineage must match, the serial may not go down, and the same serial
 * is accepted only with the same body (a retried write), which changes nothing.
 */
export function decideWrite(
  current: CurrentVersion | null,
  incoming: CurrentVersion,
): WriteDecision {
  if (current === null) {
    return { kind: "accept" };
  }
  if (incoming.lineage !== current.lineage) {
    return {
      kind: "refuse",
      message: `lineage mismatch: the state has lineage ${current.lineage}, the body has ${incoming.lineage}; this is a different state`,
    };
  }
  if (incoming.serial < current.serial) {
    return {
      kind: "refuse",
      message: `stale serial: the state is at serial ${current.serial}, the body has the lower serial ${incoming.serial}`,
    };
  }
  if (incoming.serial === current.serial) {
    return incoming.md5 === current.md5
      ? { kind: "noop" }
      : {
          kind: "refuse",
          message: `cannot overwrite existing state with serial ${current.serial} with a different state that has the same serial`,
        };
  }
  return { kind: "accept" };
}

/** The holder of a state lock as stored. */
export type HeldLock = {
  lockId: string;
  info: string;
  runId: string | null;
  createdBy: string | null;
};

/** Who is calling, as far as locks care. */
export type Caller = {
  principalId: string;
  runId: string | null;
  /** The job of a run token: a lock it takes is released when that job ends. */
  jobId: string | null;
  isAdmin: boolean;
};

/**
 * The lock facts of a caller; `isAdmin`: whether it may force the workspace's state lock (asked
 * of `may` by `mayForceState`).
 */
export function callerOf(principal: Principal, isAdmin = false): Caller {
  return {
    principalId: principalId(principal),
    runId: principal.kind === "run" ? principal.runId : null,
    jobId: principal.kind === "run" ? principal.jobId : null,
    isAdmin,
  };
}

function holder(lock: HeldLock): string {
  return lock.runId ?? lock.createdBy ?? "unknown";
}

/**
 * Whether a write may pass the lock: with `?ID=` it must name the held lock and come from its
 * holder; without it, only when nothing is locked or the run holding the lock writes. The
 * success value is the lock state the write is guarded with (null: no lock may appear).
 */
export function checkWriteLock(
  lock: HeldLock | null,
  requestedId: string | null,
  caller: Caller,
): Result<string | null, string> {
  if (lock === null) {
    return requestedId === null
      ? ok(null)
      : fail(
          `lock ${requestedId} is not held: the state was unlocked or force-unlocked; lock again`,
        );
  }
  if (requestedId !== null) {
    if (requestedId !== lock.lockId) {
      return fail(
        `the state is locked by ${holder(lock)} with lock ${lock.lockId}, not ${requestedId}`,
      );
    }
    if (lock.createdBy !== null && lock.createdBy !== caller.principalId) {
      return fail(`lock ${lock.lockId} is held by ${holder(lock)}, not by this token`);
    }
    return ok(lock.lockId);
  }
  if (caller.runId !== null && lock.runId === caller.runId) {
    return ok(lock.lockId);
  }
  return fail(
    `the state is locked by ${holder(lock)} (lock ${lock.lockId}); a write must carry ?ID=<lock id>`,
  );
}

export type LockDecision = "acquire" | "already_held" | "conflict";

/** LOCK: free → acquire; the same ID from the same holder → 200 again (a retry); else 423. */
export function decideLock(
  lock: HeldLock | null,
  requestedId: string,
  caller: Caller,
): LockDecision {
  if (lock === null) {
    return "acquire";
  }
  return lock.lockId === requestedId &&
    (lock.createdBy ?? caller.principalId) === caller.principalId
    ? "already_held"
    : "conflict";
}

export type UnlockDecision =
  | { kind: "none_held" }
  | { kind: "release"; isForced: boolean }
  | { kind: "conflict"; message: string };

/**
 * UNLOCK. No lock → 200 (retries). An empty body is `terraform force-unlock`: admins only. An ID
 * must name the held lock; the holder releases it, anybody else (OpenTofu's `force-unlock ID`)
 * must be an admin. Forced releases are audited by the caller of this function.
 */
export function decideUnlock(
  lock: HeldLock | null,
  requested: { kind: "empty" } | { kind: "info"; id: string; text: string },
  caller: Caller,
): UnlockDecision {
  if (lock === null) {
    return { kind: "none_held" };
  }
  if (requested.kind === "empty") {
    return caller.isAdmin
      ? { kind: "release", isForced: true }
      : {
          kind: "conflict",
          message: "force-unlock (an UNLOCK without lock info) needs an admin token",
        };
  }
  if (requested.id !== lock.lockId) {
    return {
      kind: "conflict",
      message: `the state is locked by ${holder(lock)} with lock ${lock.lockId}, not ${requested.id}`,
    };
  }
  const isHolder = (lock.createdBy ?? caller.principalId) === caller.principalId;
  if (!isHolder && !caller.isAdmin) {
    return {
      kind: "conflict",
      message: `lock ${lock.lockId} is held by ${holder(lock)}; releasing another holder's lock needs an admin token`,
    };
  }
  // The holder's own release re-sends its LOCK body; anything else is a force-unlock by id.
  return { kind: "release", isForced: !isHolder || requested.text !== lock.info };
}

/** A workspace user lock refuses state changes from anyone but its holder. */
export function checkWorkspaceLock(lockedBy: string | null, caller: Caller): Result<null, string> {
  if (lockedBy === null || lockedBy === caller.principalId) {
    return ok(null);
  }
  return fail(`the workspace is locked by ${lockedBy}; only the holder may change its state`);
}

/**
 * The lock info answered for a workspace user lock, so terraform prints who holds it the same
 * way it prints a state lock holder.
 */
export function workspaceLockInfo(ws: {
  id: string;
  lockedBy: string;
  lockReason: string | null;
  lockedAt: number | null;
}): string {
  return JSON.stringify({
    ID: `workspace-lock:${ws.lockedBy}`,
    Operation: "",
    Info: `workspace ${ws.id} is locked by ${ws.lockedBy}${ws.lockReason ? `: ${ws.lockReason}` : ""}`,
    Who: ws.lockedBy,
    Version: "",
    Created: new Date(ws.lockedAt ?? 0).toISOString(),
    Path: "",
  });
}

/** The serial a rollback writes: above both the live state and the restored version. */
export function rollbackSerial(currentSerial: number | null, restoredSerial: number): number {
  return Math.max(currentSerial ?? 0, restoredSerial) + 1;
}

/** Decodes a `Content-MD5` header (base64 of the 16-byte digest); null when malformed. */
export function parseContentMd5(header: string): Uint8Array | null {
  let binary: string;
  try {
    binary = atob(header.trim());
  } catch {
    return null;
  }
  return binary.length === 16 ? Uint8Array.from(binary, (ch) => ch.charCodeAt(0)) : null;
}
