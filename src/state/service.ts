/**
 * The state backend's reads and writes: every accepted write becomes a state version (an R2
 * object and a D1 row); refused writes leave nothing behind.
 */

import { fail, newId, ok } from "@outpost/common";
import { auditWhereQuery } from "../audit/service.ts";
import { type Actor, plainActor, runActor } from "../authz/actor.ts";
import { actorOf, type Principal } from "../authz/principal.ts";
import type { Deps } from "../deps.ts";
import { toHex } from "../lib/crypto.ts";
import { refuse } from "../lib/reason.ts";
import { loadLock, openWorkspace, type StateReason, type StateResult } from "./access.ts";
import { stateBlobKey } from "./blobs.ts";
import { type Ingested, ingestState } from "./ingest.ts";
import {
  callerOf,
  checkWorkspaceLock,
  checkWriteLock,
  decideWrite,
  type StateHeader,
} from "./model.ts";
import {
  discardLiveVersionsQuery,
  findCurrentVersion,
  findRunActors,
  insertVersionQuery,
  PREVIOUS_STATEMENT_CHANGED,
  type StateVersionRow,
  type VersionGuard,
  versionExists,
} from "./queries.ts";
import { sharedOutputs } from "./remote-state.ts";

export type StateBody = {
  body: ReadableStream<Uint8Array>;
  sizeBytes: number;
  md5Hex: string;
  version: StateVersionRow;
};

/** Base64 of the raw digest, as `Content-MD5` wants it. */
export function md5Base64(md5Hex: string): string {
  let binary = "";
  for (let i = 0; i < md5Hex.length; i += 2) {
    binary += String.fromCharCode(Number.parseInt(md5Hex.slice(i, i + 2), 16));
  }
  return btoa(binary);
}

/** Opens a version's body as a stream from R2. Throws if the object is missing (data loss). */
export async function openVersionBody(deps: Deps, version: StateVersionRow): Promise<StateBody> {
  const object = await deps.env.BLOBS.get(version.r2Key);
  if (!object) {
    throw new Error(`state object ${version.r2Key} of ${version.id} is missing from R2`);
  }
  return { body: object.body, sizeBytes: object.size, md5Hex: version.md5, version };
}

/**
 * The current state of a workspace the caller may read, or null when it has none. A job reading
 * another workspace (`terraform_remote_state`) gets that workspace's outputs only, and only when
 * it shares them with the job's workspace.
 */
export async function readState(
  deps: Deps,
  principal: Principal,
  workspaceId: string,
): Promise<StateResult<StateBody | null>> {
  const isRemote = principal.kind === "run" && principal.workspaceId !== workspaceId;
  const ws = await openWorkspace(
    deps.db,
    principal,
    workspaceId,
    isRemote ? "outputs" : "download",
  );
  if (!ws.ok) {
    return ws;
  }
  const current = await findCurrentVersion(deps.db, workspaceId);
  if (!current) {
    return ok(null);
  }
  return isRemote ? sharedOutputs(deps, current) : ok(await openVersionBody(deps, current));
}

export type WriteInput = {
  principal: Principal;
  workspaceId: string;
  /** The `?ID=` of the write: the lock the client believes it holds. */
  lockId: string | null;
  body: ReadableStream<Uint8Array>;
  contentLength: number | null;
  /** The decoded `Content-MD5`, when the client sent one. */
  contentMd5: Uint8Array | null;
  /** The id the new version takes, when the client was given it before the upload (TFE API). */
  stateVersionId?: string;
};

export type WriteOutcome = { version: StateVersionRow; isNoop: boolean };

/**
 * Writes a new state version. Checked before the body is read: access, the state lock and the
 * workspace user lock. Checked after: a state file, `Content-MD5`, and the history rules (a
 * same-serial, same-body retry is a no-op). The insert re-checks the locks and the history in
 * the same statement, so a concurrent writer cannot slip between check and write.
 */
export async function writeState(
  deps: Deps,
  input: WriteInput,
): Promise<StateResult<WriteOutcome>> {
  const ws = await openWorkspace(deps.db, input.principal, input.workspaceId, "write");
  if (!ws.ok) {
    return ws;
  }
  const caller = callerOf(input.principal);
  const lock = await loadLock(deps, ws.value);
  const lockCheck = checkWriteLock(lock, input.lockId, caller);
  if (!lockCheck.ok) {
    return refuse("conflict", lockCheck.reason, lock ? { lockInfo: lock.info } : {});
  }
  const wsLock = checkWorkspaceLock(ws.value.lockedBy, caller);
  if (!wsLock.ok) {
    return refuse("conflict", wsLock.reason);
  }
  const ref = {
    orgId: ws.value.orgId,
    workspaceId: ws.value.id,
    stateVersionId: input.stateVersionId ?? newId("stateVersion"),
  };
  const key = stateBlobKey(ref, "state");
  const ingested = await ingestState(deps.env.BLOBS, key, input.body, input.contentLength);
  if (!ingested.ok) {
    return ingested;
  }
  const md5Hex = toHex(ingested.value.md5);
  if (input.contentMd5 !== null && toHex(input.contentMd5) !== md5Hex) {
    await deps.env.BLOBS.delete(key);
    return refuse("invalid", "Content-MD5 does not match the body");
  }
  const result = await commitVersion(deps, {
    ref,
    ingested: ingested.value,
    guard: { lockId: lockCheck.value, principalId: caller.principalId },
    principal: input.principal,
    restoredFromId: null,
    recheck: () => recheckLocks(deps, input, caller),
  });
  if (!result.ok || result.value.isNoop) {
    await deps.env.BLOBS.delete([key, stateBlobKey(ref, "outputs")]);
  }
  return result;
}

/** Re-reads the state lock and the workspace lock after a guarded insert failed. */
async function recheckLocks(
  deps: Deps,
  input: WriteInput,
  caller: ReturnType<typeof callerOf>,
): Promise<StateReason | null> {
  const ws = await openWorkspace(deps.db, input.principal, input.workspaceId, "write");
  if (!ws.ok) {
    return ws.reason;
  }
  const lock = await loadLock(deps, ws.value);
  const lockCheck = checkWriteLock(lock, input.lockId, caller);
  if (!lockCheck.ok) {
    return refuse("conflict", lockCheck.reason, lock ? { lockInfo: lock.info } : {}).reason;
  }
  const wsLock = checkWorkspaceLock(ws.value.lockedBy, caller);
  return wsLock.ok ? null : refuse("conflict", wsLock.reason).reason;
}

type Commit = {
  ref: { orgId: string; workspaceId: string; stateVersionId: string };
  ingested: Ingested;
  guard: VersionGuard;
  principal: Principal;
  /** Set for a rollback, which is audited. */
  restoredFromId: string | null;
  /** After a guarded insert found the state changed: why the locks now refuse it, or null. */
  recheck: () => Promise<StateReason | null>;
};

/**
 * Who a version is recorded as written by: the person or token that wrote it, or for a run's
 * write the person who confirmed the run (or queued it, when it applied on its own).
 */
async function writerOf(db: Deps["db"], principal: Principal): Promise<Actor> {
  if (principal.kind !== "run") {
    return plainActor(actorOf(principal));
  }
  const run = await findRunActors(db, principal.orgId, principal.runId);
  return run?.confirmedBy ?? run?.createdBy ?? runActor(principal.runId);
}

function outputsStatus(header: StateHeader): StateVersionRow["outputsStatus"] {
  return header.outputs.status;
}

/**
 * Applies the history rules against the live state and inserts the version, with its outputs
 * object written first so a visible version always has them. Retries when a concurrent write
 * changed the state between the read and the guarded insert.
 */
export async function commitVersion(
  deps: Deps,
  commit: Commit,
): Promise<StateResult<WriteOutcome>> {
  const { header, md5, sizeBytes } = commit.ingested;
  const md5Hex = toHex(md5);
  if (header.outputs.status === "stored") {
    await deps.env.BLOBS.put(stateBlobKey(commit.ref, "outputs"), header.outputs.json, {
      httpMetadata: { contentType: "application/json" },
    });
  }
  for (let attempt = 0; attempt < 3; attempt++) {
    const current = (await findCurrentVersion(deps.db, commit.ref.workspaceId)) ?? null;
    const decision = decideWrite(current, {
      serial: header.serial,
      lineage: header.lineage,
      md5: md5Hex,
    });
    if (decision.kind === "refuse") {
      return refuse("conflict", decision.message);
    }
    if (decision.kind === "noop" && current) {
      return ok({ version: current, isNoop: true });
    }
    const now = deps.now();
    const row: StateVersionRow = {
      id: commit.ref.stateVersionId,
      orgId: commit.ref.orgId,
      workspaceId: commit.ref.workspaceId,
      serial: header.serial,
      lineage: header.lineage,
      md5: md5Hex,
      sizeBytes,
      terraformVersion: header.terraformVersion,
      r2Key: stateBlobKey(commit.ref, "state"),
      isEncrypted: header.isEncrypted,
      outputsStatus: outputsStatus(header),
      restoredFromId: commit.restoredFromId,
      discardedAt: null,
      runId: commit.principal.kind === "run" ? commit.principal.runId : null,
      createdBy: await writerOf(deps.db, commit.principal),
      createdAt: now,
    };
    const insert = insertVersionQuery(deps.db, row, commit.guard);
    const inserted =
      commit.restoredFromId === null
        ? await insert
        : (
            await deps.db.batch([
              insert,
              auditWhereQuery(
                deps.db,
                {
                  orgId: row.orgId,
                  actor: actorOf(commit.principal),
                  action: "state.rollback",
                  targetType: "workspace",
                  targetId: row.workspaceId,
                  data: {
                    stateVersionId: row.id,
                    restoredFromId: commit.restoredFromId,
                    serial: row.serial,
                  },
                  now,
                },
                versionExists(row.id),
              ),
            ])
          )[0];
    if (inserted.length > 0) {
      return ok({ version: row, isNoop: false });
    }
    const changed = await commit.recheck();
    if (changed !== null) {
      return fail(changed);
    }
  }
  return refuse(
    "conflict",
    "the state changed while this write was checked (a concurrent write, lock or workspace lock); read the state and retry",
  );
}

/**
 * DELETE on the backend (admins): the state is discarded, so the next write starts a new
 * lineage; its versions stay listed as history. Refused while someone else holds the lock or a
 * user lock. Audited when something was deleted.
 */
export async function deleteState(
  deps: Deps,
  principal: Principal,
  workspaceId: string,
): Promise<StateResult<{ discarded: number }>> {
  const ws = await openWorkspace(deps.db, principal, workspaceId, "delete");
  if (!ws.ok) {
    return ws;
  }
  const caller = callerOf(principal);
  const lock = await loadLock(deps, ws.value);
  if (lock !== null && lock.createdBy !== caller.principalId) {
    return refuse(
      "conflict",
      `the state is locked by ${lock.createdBy ?? "unknown"} (lock ${lock.lockId})`,
      { lockInfo: lock.info },
    );
  }
  const wsLock = checkWorkspaceLock(ws.value.lockedBy, caller);
  if (!wsLock.ok) {
    return refuse("conflict", wsLock.reason);
  }
  const now = deps.now();
  const [discarded] = await deps.db.batch([
    discardLiveVersionsQuery(deps.db, workspaceId, now),
    auditWhereQuery(
      deps.db,
      {
        orgId: ws.value.orgId,
        actor: actorOf(principal),
        action: "state.delete",
        targetType: "workspace",
        targetId: workspaceId,
        now,
      },
      PREVIOUS_STATEMENT_CHANGED,
    ),
  ]);
  return ok({ discarded: discarded.meta.changes });
}
