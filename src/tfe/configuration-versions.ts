/**
 * Configuration versions as the cloud backend makes them (`internal/cloud/backend_common.go`
 * `uploadConfigurationVersion`, go-tfe `configuration_version.go`): created empty with an upload
 * URL, then the tar.gz PUT there without a token, then read until `uploaded`. The stored archive
 * is an ordinary Outpost configuration version with the same id (`uploadConfigurationVersion`,
 * the same checks as `/api/v1`); until then, the pending upload is an R2 record holding the
 * creator, the options and the sha256 of the URL's one-time secret. The URL is the capability:
 * valid for {@link CV_UPLOAD_TTL_MS}, used once, and the upload is still decided for its creator.
 */
import { newId, ok } from "@outpost/common";
import { z } from "zod";
import { actorOf, type PersonPrincipal } from "../authz/principal.ts";
import { may } from "../authz/service.ts";
import { uploadLimits } from "../configuration-versions/model.ts";
import { getConfigurationVersionInOrg } from "../configuration-versions/queries.ts";
import {
  type ConfigurationVersionRow,
  uploadConfigurationVersion,
} from "../configuration-versions/service.ts";
import type { Deps } from "../deps.ts";
import { randomBase64Url, sha256Hex, timingSafeEqualString } from "../lib/crypto.ts";
import { type Outcome, refuse } from "../lib/reason.ts";
import { createRun } from "../runs/service.ts";
import { getWorkspaceById, type WorkspaceRow } from "../workspaces/queries.ts";

/** How long an upload URL answers after the configuration version was created. */
export const CV_UPLOAD_TTL_MS = 15 * 60 * 1000;

const Pending = z.object({
  orgId: z.string(),
  workspaceId: z.string(),
  principal: z.looseObject({ kind: z.enum(["org", "user", "team"]), orgId: z.string() }),
  autoQueueRuns: z.boolean(),
  speculative: z.boolean(),
  secretSha256: z.string(),
  expiresAt: z.number(),
  createdAt: z.number(),
  /** Set when an upload was refused: the version is `errored` with this sentence. */
  error: z.string().nullable(),
  /** Set by the one upload the URL allows, before it reads the body. */
  claimed: z.boolean().default(false),
});
type Pending = z.infer<typeof Pending>;

/** A configuration version as the TFE API shows it. */
export type TfeConfigurationVersion = {
  id: string;
  workspaceId: string;
  status: "pending" | "uploaded" | "errored";
  autoQueueRuns: boolean;
  speculative: boolean;
  error: string | null;
  createdAt: number;
  /** The one-time secret of the upload URL: only the creating answer has it. */
  secret: string | null;
};

function pendingKey(id: string): string {
  return `tfe/configuration-uploads/${id}.json`;
}

async function loadPending(deps: Deps, id: string): Promise<Pending | null> {
  return (await loadPendingObject(deps, id))?.record ?? null;
}

async function loadPendingObject(deps: Deps, id: string) {
  const object = await deps.env.BLOBS.get(pendingKey(id));
  return object ? { record: Pending.parse(await object.json()), etag: object.etag } : null;
}

/** Marks the record used, unless another upload did first (R2's compare-and-set on the etag). */
async function claim(deps: Deps, id: string, record: Pending, etag: string): Promise<boolean> {
  const stored = await deps.env.BLOBS.put(
    pendingKey(id),
    JSON.stringify({ ...record, claimed: true }),
    {
      onlyIf: { etagMatches: etag },
    },
  );
  return stored !== null;
}

function notFound(id: string) {
  return refuse("not_found", `configuration version ${id} not found`);
}

function fromRow(row: ConfigurationVersionRow, pending: Pending | null): TfeConfigurationVersion {
  return {
    id: row.id,
    workspaceId: row.workspaceId,
    status: "uploaded",
    autoQueueRuns: pending?.autoQueueRuns ?? false,
    speculative: row.isSpeculative,
    error: null,
    createdAt: row.createdAt,
    secret: null,
  };
}

/**
 * A configuration version waiting for its archive, for a caller who may upload configurations
 * to the workspace (checked by the route); answers it with its one-time secret.
 */
export async function createPendingConfiguration(
  deps: Deps,
  principal: PersonPrincipal,
  workspace: WorkspaceRow,
  options: { autoQueueRuns: boolean; speculative: boolean },
): Promise<TfeConfigurationVersion> {
  const id = newId("configurationVersion");
  const secret = randomBase64Url(32);
  const now = deps.now();
  const record: Pending = {
    orgId: workspace.orgId,
    workspaceId: workspace.id,
    principal,
    ...options,
    secretSha256: await sha256Hex(secret),
    expiresAt: now + CV_UPLOAD_TTL_MS,
    createdAt: now,
    error: null,
    claimed: false,
  };
  await deps.env.BLOBS.put(pendingKey(id), JSON.stringify(record));
  return {
    id,
    workspaceId: workspace.id,
    status: "pending",
    error: null,
    createdAt: now,
    secret,
    ...options,
  };
}

/**
 * A configuration version by id in the caller's organization (stored, pending or errored).
 * Reading it is decided by the route on its workspace; another organization's id is 404.
 */
export async function readTfeConfiguration(
  deps: Deps,
  orgId: string,
  id: string,
): Promise<Outcome<TfeConfigurationVersion, "not_found">> {
  const [row, pending] = await Promise.all([
    getConfigurationVersionInOrg(deps.db, orgId, id),
    loadPending(deps, id),
  ]);
  if (row) {
    return ok(fromRow(row, pending));
  }
  if (!pending || pending.orgId !== orgId) {
    return notFound(id);
  }
  return ok({
    id,
    workspaceId: pending.workspaceId,
    status: pending.error === null ? "pending" : "errored",
    autoQueueRuns: pending.autoQueueRuns,
    speculative: pending.speculative,
    error: pending.error,
    createdAt: pending.createdAt,
    secret: null,
  });
}

type UploadReason = "not_found" | "gone" | "conflict" | "forbidden" | "invalid" | "too_large";

/** The pending record a URL opens and claims: right secret, unexpired, never used before. */
async function claimUpload(
  deps: Deps,
  id: string,
  secret: string,
): Promise<Outcome<Pending, "not_found" | "gone" | "conflict">> {
  const loaded = await loadPendingObject(deps, id);
  const presented = await sha256Hex(secret);
  if (!loaded || !timingSafeEqualString(presented, loaded.record.secretSha256)) {
    return refuse("not_found", `upload URL of configuration version ${id} not found`);
  }
  const pending = loaded.record;
  if (deps.now() > pending.expiresAt) {
    return refuse(
      "gone",
      `the upload URL of configuration version ${id} has expired: create another configuration version`,
    );
  }
  if (pending.claimed || !(await claim(deps, id, pending, loaded.etag))) {
    return refuse(
      "conflict",
      `the upload URL of configuration version ${id} was already used; create another configuration version`,
    );
  }
  return ok({ ...pending, claimed: true });
}

/** The workspace, while the version's creator may still upload configurations to it. */
async function creatorsWorkspace(
  deps: Deps,
  id: string,
  pending: Pending,
): Promise<Outcome<WorkspaceRow, "not_found" | "forbidden">> {
  const workspace = await getWorkspaceById(deps.db, pending.workspaceId);
  if (!workspace) {
    return notFound(id);
  }
  const principal = pending.principal as PersonPrincipal;
  const resource = { type: "workspace" as const, ...workspace };
  switch (await may(deps.db, principal, "configuration.upload", resource)) {
    case "allow":
      return ok(workspace);
    case "forbidden":
      return refuse(
        "forbidden",
        `the creator of configuration version ${id} may no longer upload configurations to this workspace`,
      );
    case "not_found":
      return notFound(id);
  }
}

/**
 * With `auto-queue-runs`, a run on the uploaded version for its creator, as Terraform Cloud
 * queues one (a speculative plan on a speculative version), when the creator may queue it. A
 * refusal (a local workspace, no pool) leaves the version uploaded without a run.
 */
async function autoQueue(deps: Deps, id: string, pending: Pending, workspace: WorkspaceRow) {
  const principal = pending.principal as PersonPrincipal;
  // An auto-apply workspace's run applies unconfirmed: that needs more than queueing.
  const action = workspace.autoApply && !pending.speculative ? "run.queue_auto_apply" : "run.queue";
  if ((await may(deps.db, principal, action, { type: "workspace", ...workspace })) !== "allow") {
    return;
  }
  await createRun(deps, workspace, {
    operation: pending.speculative ? "plan" : "apply",
    message: "Queued by the TFE API when its configuration was uploaded",
    configurationVersionId: id,
    source: "api",
    actor: actorOf(principal),
  });
}

/**
 * The archive PUT to an upload URL: the secret must match, the URL must be unexpired and unused,
 * and its creator must still be allowed to upload to the workspace. The archive goes through
 * Outpost's upload (tar checks, a `.tf` file in the working directory); once the URL is used,
 * any refusal leaves the version `errored` with the sentence. With `auto-queue-runs`, a run is
 * queued on it ({@link autoQueue}).
 */
export async function uploadTfeConfiguration(
  deps: Deps,
  input: { id: string; secret: string; body: ReadableStream<Uint8Array>; contentLength: number },
): Promise<Outcome<TfeConfigurationVersion, UploadReason>> {
  const claimed = await claimUpload(deps, input.id, input.secret);
  if (!claimed.ok) {
    return claimed;
  }
  const pending = claimed.value;
  // Once the URL is used, a refusal leaves the version errored, saying why.
  const errored = (error: string) =>
    deps.env.BLOBS.put(pendingKey(input.id), JSON.stringify({ ...pending, error }));
  const workspace = await creatorsWorkspace(deps, input.id, pending);
  if (!workspace.ok) {
    await errored(workspace.reason.message);
    return workspace;
  }
  const { orgId, id: workspaceId, engine, workingDirectory } = workspace.value;
  const uploaded = await uploadConfigurationVersion(deps, {
    id: input.id,
    orgId,
    workspaceId,
    actor: actorOf(pending.principal as PersonPrincipal),
    body: input.body,
    contentLength: input.contentLength,
    limits: uploadLimits(deps.env),
    expected: { engine, workingDirectory },
    isSpeculative: pending.speculative,
  });
  if (!uploaded.ok) {
    await errored(uploaded.reason.message);
    return uploaded;
  }
  if (pending.autoQueueRuns) {
    await autoQueue(deps, input.id, pending, workspace.value);
  }
  return ok({
    id: input.id,
    workspaceId,
    status: "uploaded",
    autoQueueRuns: pending.autoQueueRuns,
    speculative: pending.speculative,
    error: null,
    createdAt: pending.createdAt,
    secret: null,
  });
}
