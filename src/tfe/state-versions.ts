/**
 * State versions as the cloud backend's local mode writes and reads them
 * (`internal/cloud/state.go`, go-tfe `state_version.go`), over the state service: the same
 * history, locks and serial/lineage rules as the `http` backend, since every write goes through
 * `writeState`.
 *
 * go-tfe's `Upload` first creates a version without its body, then PUTs the raw state to the
 * version's `hosted-state-upload-url` without a token (`doForeignPUTRequest`), then reads the
 * version again. The pending upload is an R2 record under the version's id holding the caller,
 * the declared md5 and the sha256 of a one-time secret carried in the URL: the URL is the
 * capability, valid for {@link UPLOAD_TTL_MS}, and the write is still decided for the caller
 * who created it when the body arrives.
 */
import { newId, ok } from "@outpost/common";
import { z } from "zod";
import type { PersonPrincipal } from "../authz/principal.ts";
import type { Deps } from "../deps.ts";
import { randomBase64Url, sha256Hex, timingSafeEqualString } from "../lib/crypto.ts";
import { refuse } from "../lib/reason.ts";
import { openWorkspace, type StateResult } from "../state/access.ts";
import { findCurrentVersion, findVersionInOrg, type StateVersionRow } from "../state/queries.ts";
import { writeState } from "../state/service.ts";

/** How long an upload URL answers after the version was created. */
export const UPLOAD_TTL_MS = 15 * 60 * 1000;

const PendingUpload = z.object({
  orgId: z.string(),
  workspaceId: z.string(),
  principal: z.looseObject({ kind: z.enum(["org", "user", "team"]), orgId: z.string() }),
  md5: z.string(),
  serial: z.number(),
  lineage: z.string(),
  secretSha256: z.string(),
  expiresAt: z.number(),
  createdAt: z.number(),
  /** Once the body arrived: the version it became (another id for a retried, identical write). */
  storedAs: z.string().nullable(),
});
type PendingUpload = z.infer<typeof PendingUpload>;

/** What the client declares of the state it is about to upload. */
export type Declared = { serial: number; lineage: string; md5: string };

/** A version as the TFE API shows it: stored, or still waiting for its body. */
export type TfeStateVersion =
  | { kind: "stored"; row: StateVersionRow }
  | {
      kind: "pending";
      id: string;
      workspaceId: string;
      declared: Declared;
      createdAt: number;
      /** The one-time secret of the upload URLs; only the creating answer has it. */
      secret: string | null;
    };

function pendingKey(stateVersionId: string): string {
  return `tfe/state-uploads/${stateVersionId}.json`;
}

async function loadPending(deps: Deps, stateVersionId: string): Promise<PendingUpload | null> {
  const object = await deps.env.BLOBS.get(pendingKey(stateVersionId));
  if (!object) {
    return null;
  }
  return PendingUpload.parse(await object.json());
}

async function savePending(deps: Deps, stateVersionId: string, record: PendingUpload) {
  await deps.env.BLOBS.put(pendingKey(stateVersionId), JSON.stringify(record));
}

function stateVersionNotFound(id: string) {
  return refuse("not_found", `state version ${id} not found`);
}

/**
 * Creates a version to be uploaded: checks now that the caller may write the workspace's state
 * (a local-mode workspace, write access), and answers the pending version with its secret.
 */
export async function createPendingVersion(
  deps: Deps,
  principal: PersonPrincipal,
  workspaceId: string,
  declared: Declared,
): Promise<StateResult<TfeStateVersion>> {
  const ws = await openWorkspace(deps.db, principal, workspaceId, "write");
  if (!ws.ok) {
    return ws;
  }
  const id = newId("stateVersion");
  const secret = randomBase64Url(32);
  const now = deps.now();
  await savePending(deps, id, {
    orgId: principal.orgId,
    workspaceId,
    principal,
    ...declared,
    secretSha256: await sha256Hex(secret),
    expiresAt: now + UPLOAD_TTL_MS,
    createdAt: now,
    storedAs: null,
  });
  return ok({ kind: "pending", id, workspaceId, declared, createdAt: now, secret });
}

/**
 * The upload of a pending version's body through its URL: the secret must match and the URL
 * must not have expired; the body must have the declared md5. Decided and written by
 * `writeState` for the caller who created the version, so the locks and the history rules are
 * those of that moment. A repeated upload of the same body after success answers the version.
 */
export async function uploadPendingVersion(
  deps: Deps,
  input: {
    stateVersionId: string;
    secret: string;
    body: ReadableStream<Uint8Array>;
    contentLength: number | null;
  },
): Promise<StateResult<StateVersionRow>> {
  const record = await authorizedUpload(deps, input.stateVersionId, input.secret);
  if (!record.ok) {
    return record;
  }
  const pending = record.value;
  if (pending.storedAs !== null) {
    await input.body.cancel();
    const stored = await findVersionInOrg(deps.db, pending.orgId, pending.storedAs);
    return stored ? ok(stored) : stateVersionNotFound(input.stateVersionId);
  }
  const written = await writeState(deps, {
    principal: pending.principal as PersonPrincipal,
    workspaceId: pending.workspaceId,
    lockId: null,
    body: input.body,
    contentLength: input.contentLength,
    contentMd5: hexBytes(pending.md5),
    stateVersionId: input.stateVersionId,
  });
  if (!written.ok) {
    return written;
  }
  await savePending(deps, input.stateVersionId, {
    ...pending,
    storedAs: written.value.version.id,
  });
  return ok(written.value.version);
}

/** The pending record a URL's secret opens, or a refusal that tells nothing about others. */
export async function authorizedUpload(
  deps: Deps,
  stateVersionId: string,
  secret: string,
): Promise<StateResult<PendingUpload>> {
  const pending = await loadPending(deps, stateVersionId);
  const presented = await sha256Hex(secret);
  if (!pending || !timingSafeEqualString(presented, pending.secretSha256)) {
    return refuse("not_found", `upload URL of state version ${stateVersionId} not found`);
  }
  if (deps.now() > pending.expiresAt) {
    return refuse(
      "gone",
      `the upload URL of state version ${stateVersionId} has expired: create the state version again`,
    );
  }
  return ok(pending);
}

function hexBytes(hex: string): Uint8Array {
  const bytes = new Uint8Array(hex.length / 2);
  for (let i = 0; i < bytes.length; i++) {
    bytes[i] = Number.parseInt(hex.slice(i * 2, i * 2 + 2), 16);
  }
  return bytes;
}

/**
 * A version by id in the caller's organization, once the caller may read its workspace's
 * state: a stored one, or one whose upload has not arrived yet (the version a retried upload
 * became, once it has). Another organization's id is 404.
 */
export async function readTfeVersion(
  deps: Deps,
  principal: PersonPrincipal,
  stateVersionId: string,
): Promise<StateResult<TfeStateVersion>> {
  const stored = await findVersionInOrg(deps.db, principal.orgId, stateVersionId);
  const pending = stored ? null : await loadPending(deps, stateVersionId);
  const workspaceId = stored?.workspaceId ?? pending?.workspaceId;
  if (workspaceId === undefined || (pending && pending.orgId !== principal.orgId)) {
    return stateVersionNotFound(stateVersionId);
  }
  const ws = await openWorkspace(deps.db, principal, workspaceId, "read");
  if (!ws.ok) {
    return ws.reason.kind === "not_found" ? stateVersionNotFound(stateVersionId) : ws;
  }
  if (stored) {
    return ok({ kind: "stored", row: stored });
  }
  if (pending === null) {
    return stateVersionNotFound(stateVersionId);
  }
  if (pending.storedAs !== null) {
    const row = await findVersionInOrg(deps.db, principal.orgId, pending.storedAs);
    return row ? ok({ kind: "stored", row }) : stateVersionNotFound(stateVersionId);
  }
  const { md5, serial, lineage } = pending;
  return ok({
    kind: "pending",
    id: stateVersionId,
    workspaceId,
    declared: { md5, serial, lineage },
    createdAt: pending.createdAt,
    secret: null,
  });
}

/** The workspace's current version, or `not_found` when it has no state (go-tfe's "no state"). */
export async function currentTfeVersion(
  deps: Deps,
  principal: PersonPrincipal,
  workspaceId: string,
): Promise<StateResult<StateVersionRow>> {
  const ws = await openWorkspace(deps.db, principal, workspaceId, "read");
  if (!ws.ok) {
    return ws;
  }
  const current = await findCurrentVersion(deps.db, workspaceId);
  return current
    ? ok(current)
    : refuse("not_found", `workspace ${workspaceId} has no state version yet`);
}
