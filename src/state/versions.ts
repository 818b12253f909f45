/**
 * State history for the API: listing and reading versions, and rollback, which writes an old
 * version's body again as a new version with a higher serial. Outputs are `output-reads.ts`.
 */

import { newId, ok } from "@outpost/common";
import type { Principal } from "../authz/principal.ts";
import { may } from "../authz/service.ts";
import type { Deps } from "../deps.ts";
import { decodeCursor, takePage } from "../lib/paging.ts";
import { refuse } from "../lib/reason.ts";
import { loadLock, openWorkspace, type StateResult } from "./access.ts";
import { stateBlobKey } from "./blobs.ts";
import { ingestState } from "./ingest.ts";
import { JsonScanner } from "./json-scan.ts";
import { callerOf, checkWorkspaceLock, rollbackSerial } from "./model.ts";
import {
  findCurrentVersion,
  findVersion,
  listVersionRows,
  type StateVersionRow,
} from "./queries.ts";
import { redactedState } from "./redact.ts";
import { commitVersion, openVersionBody, type StateBody } from "./service.ts";

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/** The public shape of a state version. */
export function presentVersion(row: StateVersionRow, currentId: string | null) {
  return {
    id: row.id,
    workspaceId: row.workspaceId,
    serial: row.serial,
    lineage: row.lineage,
    md5: row.md5,
    sizeBytes: row.sizeBytes,
    terraformVersion: row.terraformVersion,
    isEncrypted: row.isEncrypted,
    isCurrent: row.id === currentId,
    outputsStatus: row.outputsStatus,
    restoredFromId: row.restoredFromId,
    runId: row.runId,
    createdBy: row.createdBy,
    createdAt: new Date(row.createdAt).toISOString(),
    discardedAt: iso(row.discardedAt),
  };
}
export type PresentedVersion = ReturnType<typeof presentVersion>;

/** A page of the workspace's versions, newest first. */
export async function listVersions(
  deps: Deps,
  principal: Principal,
  workspaceId: string,
  page: { limit: number; cursor?: string | undefined },
): Promise<StateResult<{ stateVersions: PresentedVersion[]; nextCursor: string | null }>> {
  const ws = await openWorkspace(deps.db, principal, workspaceId, "read");
  if (!ws.ok) {
    return ws;
  }
  const after =
    page.cursor === undefined ? undefined : decodeCursor(page.cursor, ["number", "string"]);
  if (after !== undefined && !after.ok) {
    return after;
  }
  const rows = await listVersionRows(deps.db, workspaceId, {
    limit: page.limit,
    after: after?.value,
  });
  const current = await findCurrentVersion(deps.db, workspaceId);
  const { items, nextCursor } = takePage(rows, page.limit, (row) => [row.createdAt, row.id]);
  return ok({
    stateVersions: items.map((row) => presentVersion(row, current?.id ?? null)),
    nextCursor,
  });
}

/** A version of a workspace the caller may read, or the refusal. */
export async function readableVersion(
  deps: Deps,
  principal: Principal,
  workspaceId: string,
  stateVersionId: string,
  need: "read" | "download" = "read",
): Promise<StateResult<StateVersionRow>> {
  const ws = await openWorkspace(deps.db, principal, workspaceId, need);
  if (!ws.ok) {
    return ws;
  }
  const version = await findVersion(deps.db, workspaceId, stateVersionId);
  return version ? ok(version) : refuse("not_found", `state version ${stateVersionId} not found`);
}

/** One version's metadata. */
export async function getVersion(
  deps: Deps,
  principal: Principal,
  workspaceId: string,
  stateVersionId: string,
): Promise<StateResult<PresentedVersion>> {
  const version = await readableVersion(deps, principal, workspaceId, stateVersionId);
  if (!version.ok) {
    return version;
  }
  const current = await findCurrentVersion(deps.db, workspaceId);
  return ok(presentVersion(version.value, current?.id ?? null));
}

/**
 * One version's body, streamed from R2; for a caller who may not see sensitive output values
 * (below `state.reveal`), with them set to null (`redact.ts`), so a download never shows what
 * `outputs?reveal=true` refuses.
 */
export async function downloadVersion(
  deps: Deps,
  principal: Principal,
  workspaceId: string,
  stateVersionId: string,
): Promise<StateResult<StateBody>> {
  const version = await readableVersion(deps, principal, workspaceId, stateVersionId, "download");
  if (!version.ok) {
    return version;
  }
  const body = await openVersionBody(deps, version.value);
  const resource = { type: "workspace" as const, orgId: principal.orgId, id: workspaceId };
  const mayReveal = (await may(deps.db, principal, "state.reveal", resource)) === "allow";
  return mayReveal ? ok(body) : redactedState(body);
}

/** Finds the byte span of the top-level `serial` of a stored body, reading it as a stream. */
async function serialSpan(
  bucket: R2Bucket,
  key: string,
): Promise<{ start: number; end: number } | null> {
  const object = await bucket.get(key);
  if (!object) {
    throw new Error(`state object ${key} is missing from R2`);
  }
  const scanner = new JsonScanner({ serial: { maxBytes: 32 } });
  for await (const chunk of object.body) {
    if (!scanner.push(chunk)) {
      break;
    }
  }
  const scanned = scanner.finish();
  const field = scanned.ok ? scanned.fields.get("serial") : undefined;
  return field ? { start: field.start, end: field.end } : null;
}

/** The stored body with the bytes of `span` replaced, streamed from two ranged R2 reads. */
function splice(
  bucket: R2Bucket,
  key: string,
  span: { start: number; end: number },
  replacement: Uint8Array,
): { body: ReadableStream<Uint8Array>; done: Promise<void> } {
  const { readable, writable } = new TransformStream<Uint8Array, Uint8Array>();
  const done = (async () => {
    const head = await bucket.get(key, { range: { offset: 0, length: span.start } });
    const tail = await bucket.get(key, { range: { offset: span.end } });
    if (!head || !tail) {
      await writable.abort(new Error(`state object ${key} vanished`));
      return;
    }
    await head.body.pipeTo(writable, { preventClose: true });
    const writer = writable.getWriter();
    await writer.write(replacement);
    writer.releaseLock();
    await tail.body.pipeTo(writable);
  })();
  return { body: readable, done };
}

/**
 * Rollback (admins, audited): writes the body of `stateVersionId` as a new version whose serial
 * is above the current one, so clients move forward onto it. Refused while the state is locked
 * or user-locked by someone else, for the current version itself, and across lineages.
 */
export async function rollbackState(
  deps: Deps,
  input: { principal: Principal; workspaceId: string; stateVersionId: string },
): Promise<StateResult<PresentedVersion>> {
  const ws = await openWorkspace(deps.db, input.principal, input.workspaceId, "rollback");
  if (!ws.ok) {
    return ws;
  }
  const version = await findVersion(deps.db, input.workspaceId, input.stateVersionId);
  if (!version) {
    return refuse("not_found", `state version ${input.stateVersionId} not found`);
  }
  const caller = callerOf(input.principal);
  const lock = await loadLock(deps, ws.value);
  if (lock) {
    return refuse(
      "conflict",
      `the state is locked (lock ${lock.lockId}); unlock it before a rollback`,
      { lockInfo: lock.info },
    );
  }
  const wsLock = checkWorkspaceLock(ws.value.lockedBy, caller);
  if (!wsLock.ok) {
    return refuse("conflict", wsLock.reason);
  }
  const current = await findCurrentVersion(deps.db, input.workspaceId);
  if (current?.id === version.id) {
    return refuse("conflict", `state version ${version.id} is already the current state`);
  }
  if (current && current.lineage !== version.lineage) {
    return refuse(
      "conflict",
      `lineage mismatch: version ${version.id} has lineage ${version.lineage}, the state has ${current.lineage}`,
    );
  }
  const span = await serialSpan(deps.env.BLOBS, version.r2Key);
  if (!span) {
    throw new Error(`stored state ${version.id} has no serial`);
  }
  const serial = rollbackSerial(current?.serial ?? null, version.serial);
  const replacement = new TextEncoder().encode(String(serial));
  const ref = {
    orgId: ws.value.orgId,
    workspaceId: ws.value.id,
    stateVersionId: newId("stateVersion"),
  };
  const spliced = splice(deps.env.BLOBS, version.r2Key, span, replacement);
  const length = version.sizeBytes - (span.end - span.start) + replacement.length;
  const [ingested] = await Promise.all([
    ingestState(deps.env.BLOBS, stateBlobKey(ref, "state"), spliced.body, length),
    spliced.done,
  ]);
  if (!ingested.ok) {
    throw new Error(
      `stored state ${version.id} no longer reads as a state: ${ingested.reason.message}`,
    );
  }
  const result = await commitVersion(deps, {
    ref,
    ingested: ingested.value,
    guard: { lockId: null, principalId: caller.principalId },
    principal: input.principal,
    restoredFromId: version.id,
    recheck: async () => null,
  });
  if (!result.ok) {
    await deps.env.BLOBS.delete([stateBlobKey(ref, "state"), stateBlobKey(ref, "outputs")]);
    return result;
  }
  return ok(presentVersion(result.value.version, result.value.version.id));
}
