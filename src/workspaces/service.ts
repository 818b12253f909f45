/**
 * Workspaces: create, read and update, each change with its audit event in the same D1 batch.
 * Expected refusals come back as {@link WorkspaceFailure}, never thrown. Deleting is in
 * `delete.ts`, the user lock in `lock.ts`.
 */

import { newId } from "@outpost/common";
import { auditQuery } from "../audit/service.ts";
import type { AuditActor } from "../authz/actor.ts";
import type { PersonPrincipal } from "../authz/principal.ts";
import { readableWorkspaces } from "../authz/queries.ts";
import type { Database } from "../db/client.ts";
import { workspaces } from "../db/schema.ts";
import { findCurrentVersion } from "../state/queries.ts";
import {
  engineSwitchProblem,
  lockHolderKind,
  type SettingsInput,
  settingsForCreate,
  settingsForUpdate,
  type WorkspaceSettings,
} from "./model.ts";
import {
  findWorkspace,
  findWorkspaceByName,
  listWorkspaceRows,
  missingWorkspaces,
  poolExists,
  updateWorkspaceQuery,
  type WorkspaceRow,
} from "./queries.ts";

export type WorkspaceFailure =
  | { reason: "not_found" }
  | { reason: "name_taken"; name: string }
  | { reason: "invalid"; field: string; message: string }
  | { reason: "active_runs"; runIds: string[] }
  | { reason: "locked"; lockedBy: string }
  | { reason: "state_locked" }
  | { reason: "has_state"; message: string }
  | { reason: "not_lock_holder"; lockedBy: string }
  | { reason: "needs_force"; lockedBy: string };

export type WorkspaceResult<T> = { ok: true; value: T } | ({ ok: false } & WorkspaceFailure);

export const refuse = (failure: WorkspaceFailure): { ok: false } & WorkspaceFailure => ({
  ok: false,
  ...failure,
});

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/** The public shape of a workspace. */
export function presentWorkspace(row: WorkspaceRow) {
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    executionMode: row.executionMode,
    poolId: row.poolId,
    engine: row.engine,
    engineVersion: row.engineVersion,
    stackName: row.stackName,
    stateBackend: row.hasOwnStateBackend ? ("workspace" as const) : ("outpost" as const),
    workingDirectory: row.workingDirectory,
    autoApply: row.autoApply,
    vcsRepoUrl: row.vcsRepoUrl,
    vcsBranch: row.vcsBranch,
    vcsTriggerPaths: row.vcsTriggerPaths ?? [],
    forkPullRequests: row.forkPullRequests,
    remoteStateSharing: row.remoteStateSharing,
    remoteStateConsumerIds: row.remoteStateConsumerIds ?? [],
    workloadIdentity: row.workloadIdentity,
    workloadIdentityAudience: row.workloadIdentityAudience,
    lock:
      row.lockedBy === null
        ? null
        : {
            lockedBy: row.lockedBy,
            holderKind: lockHolderKind(row.lockedBy),
            reason: row.lockReason ?? "",
            lockedAt: iso(row.lockedAt) ?? "",
          },
    currentRunId: row.currentRunId,
    createdAt: iso(row.createdAt) ?? "",
    updatedAt: iso(row.updatedAt) ?? "",
  };
}
export type Workspace = ReturnType<typeof presentWorkspace>;

function settingsOf(row: WorkspaceRow): WorkspaceSettings {
  return {
    name: row.name,
    description: row.description,
    executionMode: row.executionMode,
    poolId: row.poolId,
    engine: row.engine,
    engineVersion: row.engineVersion,
    stackName: row.stackName,
    workingDirectory: row.workingDirectory,
    autoApply: row.autoApply,
    vcsRepoUrl: row.vcsRepoUrl,
    vcsBranch: row.vcsBranch,
    vcsTriggerPaths: row.vcsTriggerPaths,
    forkPullRequests: row.forkPullRequests,
    remoteStateSharing: row.remoteStateSharing,
    remoteStateConsumerIds: row.remoteStateConsumerIds,
    workloadIdentity: row.workloadIdentity,
    workloadIdentityAudience: row.workloadIdentityAudience,
  };
}

/**
 * The workspace of the org named by `ref` (its `ws_…` id or its name), or undefined. Another
 * org's workspace is never found. For other features that address workspaces in their paths.
 */
export function resolveWorkspace(
  db: Database,
  orgId: string,
  ref: string,
): Promise<WorkspaceRow | undefined> {
  return findWorkspace(db, orgId, ref);
}

/** The refusal a failed write stands for, when a constraint caught a race; else undefined. */
function raceFailure(err: unknown, settings: WorkspaceSettings): WorkspaceFailure | undefined {
  const text = err instanceof Error ? `${err.message} ${err.cause}` : "";
  if (/UNIQUE constraint failed/i.test(text)) {
    return { reason: "name_taken", name: settings.name };
  }
  // The pool was deleted between the check and the write.
  if (/FOREIGN KEY constraint failed/i.test(text)) {
    const message = `agent pool ${settings.poolId} not found in this organization`;
    return { reason: "invalid", field: "poolId", message };
  }
  return undefined;
}

async function checkReferences(
  db: Database,
  orgId: string,
  settings: WorkspaceSettings,
  before?: WorkspaceSettings,
): Promise<WorkspaceFailure | null> {
  if (settings.poolId && settings.poolId !== before?.poolId) {
    if (!(await poolExists(db, orgId, settings.poolId))) {
      return {
        reason: "invalid",
        field: "poolId",
        message: `agent pool ${settings.poolId} not found in this organization`,
      };
    }
  }
  if (settings.name !== before?.name && (await findWorkspaceByName(db, orgId, settings.name))) {
    return { reason: "name_taken", name: settings.name };
  }
  const added = (settings.remoteStateConsumerIds ?? []).filter(
    (id) => !(before?.remoteStateConsumerIds ?? []).includes(id),
  );
  const missing = await missingWorkspaces(db, orgId, added);
  if (missing.length > 0) {
    return {
      reason: "invalid",
      field: "remoteStateConsumerIds",
      message: `workspace ${missing.join(", ")} not found in this organization`,
    };
  }
  return null;
}

/** Creates a workspace after checking its settings, its pool and its name's uniqueness. */
export async function createWorkspace(
  db: Database,
  input: {
    orgId: string;
    actor: AuditActor;
    settings: SettingsInput & { name: string };
  },
): Promise<WorkspaceResult<Workspace>> {
  const resolved = settingsForCreate(input.settings);
  if (!resolved.ok) {
    return refuse({ reason: "invalid", ...resolved.problem });
  }
  const problem = await checkReferences(db, input.orgId, resolved.value);
  if (problem) {
    return refuse(problem);
  }
  const now = Date.now();
  const row: WorkspaceRow = {
    ...resolved.value,
    id: newId("workspace"),
    orgId: input.orgId,
    // Set by the variables service once a PULUMI_BACKEND_URL variable exists.
    hasOwnStateBackend: false,
    lockedBy: null,
    lockReason: null,
    lockedAt: null,
    currentRunId: null,
    createdAt: now,
    updatedAt: now,
  };
  try {
    await db.batch([
      db.insert(workspaces).values(row),
      auditQuery(db, {
        orgId: input.orgId,
        actor: input.actor,
        action: "workspace.create",
        targetType: "workspace",
        targetId: row.id,
        data: { settings: resolved.value },
        now,
      }),
    ]);
  } catch (err) {
    const failure = raceFailure(err, resolved.value);
    if (failure) {
      return refuse(failure);
    }
    throw err;
  }
  return { ok: true, value: presentWorkspace(row) };
}

/** One page of the workspaces of the viewer's org that it may see, by name. */
export async function listWorkspaces(
  db: Database,
  viewer: PersonPrincipal,
  page: { limit: number; after?: string | undefined; search?: string | undefined },
) {
  const rows = await listWorkspaceRows(db, viewer.orgId, {
    ...page,
    visible: readableWorkspaces(db, viewer, workspaces.id),
  });
  return rows.map((row) => ({ row, workspace: presentWorkspace(row) }));
}

/**
 * Applies a partial update. Only fields present in `patch` change; the audit event lists them
 * with their old and new values. An update that changes nothing writes nothing.
 */
export async function updateWorkspace(
  db: Database,
  input: { orgId: string; ref: string; actor: AuditActor; patch: SettingsInput },
): Promise<WorkspaceResult<Workspace>> {
  const current = await findWorkspace(db, input.orgId, input.ref);
  if (!current) {
    return refuse({ reason: "not_found" });
  }
  const before = settingsOf(current);
  const resolved = settingsForUpdate(before, input.patch);
  if (!resolved.ok) {
    return refuse({ reason: "invalid", ...resolved.problem });
  }
  const changes: Record<string, { from: unknown; to: unknown }> = {};
  for (const [field, to] of Object.entries(resolved.value)) {
    const from = before[field as keyof WorkspaceSettings];
    if (JSON.stringify(from) !== JSON.stringify(to)) {
      changes[field] = { from, to };
    }
  }
  if (Object.keys(changes).length === 0) {
    return { ok: true, value: presentWorkspace(current) };
  }
  const switchProblem = engineSwitchProblem(before, resolved.value);
  if (switchProblem !== null && (await findCurrentVersion(db, current.id))) {
    return refuse({ reason: "has_state", message: switchProblem });
  }
  const problem = await checkReferences(db, input.orgId, resolved.value, before);
  if (problem) {
    return refuse(problem);
  }
  const now = Date.now();
  try {
    const [[updated]] = await db.batch([
      updateWorkspaceQuery(db, input.orgId, current.id, { ...resolved.value, updatedAt: now }),
      auditQuery(db, {
        orgId: input.orgId,
        actor: input.actor,
        action: "workspace.update",
        targetType: "workspace",
        targetId: current.id,
        data: { changes },
        now,
      }),
    ]);
    return updated
      ? { ok: true, value: presentWorkspace(updated) }
      : refuse({ reason: "not_found" });
  } catch (err) {
    const failure = raceFailure(err, resolved.value);
    if (failure) {
      return refuse(failure);
    }
    throw err;
  }
}
