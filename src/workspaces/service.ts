/**
 * Workspaces: create, read and update, each change with its audit event in the same D1 batch.
 * Expected refusals come back as {@link WorkspaceResult} reasons, never thrown. Deleting is in
 * `delete.ts`, the user lock in `lock.ts`.
 */

import { fail, newId, ok } from "@outpost/common";
import { and, eq } from "drizzle-orm";
import { nextAssessmentAt } from "../assessments/model.ts";
import { auditQuery } from "../audit/service.ts";
import type { AuditActor } from "../authz/actor.ts";
import type { PersonPrincipal } from "../authz/principal.ts";
import { readableWorkspaces } from "../authz/queries.ts";
import type { Database } from "../db/client.ts";
import { workspaces } from "../db/schema.ts";
import type { Deps } from "../deps.ts";
import { invalidInput, type Outcome, type Reason, refuse } from "../lib/reason.ts";
import { notFoundSentence } from "../names/model.ts";
import { resolveRef } from "../names/service.ts";
import { poolScopeRefusal } from "../pools/model.ts";
import { findCurrentVersion } from "../state/queries.ts";
import { taggedWithAll } from "../workspace-tags/queries.ts";
import {
  engineSwitchProblem,
  lockHolderKind,
  type SettingsInput,
  settingsForCreate,
  settingsForUpdate,
  type WorkspaceSettings,
} from "./model.ts";
import {
  countWorkspaceRows,
  findPoolScope,
  findWorkspaceByName,
  listWorkspaceRows,
  missingWorkspaces,
  updateWorkspaceQuery,
  type WorkspaceRow,
} from "./queries.ts";

/**
 * A workspace operation's outcome: `not_found` (also another org's workspace), `invalid`
 * settings, `conflict` (a name taken, active runs, a lock), `forbidden` (another's lock).
 */
export type WorkspaceResult<T> = Outcome<T, "not_found" | "invalid" | "conflict" | "forbidden">;

/** The refusal for a workspace that is not in the caller's org, named as the caller named it. */
export function workspaceNotFound(ref: string) {
  return refuse("not_found", notFoundSentence("workspace", ref));
}

function nameTaken(name: string) {
  return refuse("conflict", `a workspace named ${name} exists`).reason;
}

function poolNotFound(ref: string | null) {
  return invalidInput("json.poolId", notFoundSentence("pool", ref ?? "")).reason;
}

/**
 * The settings with their `poolId` (the pool's id or its name) made the pool's id through the
 * one resolver; a pool not in the org refuses on the field, named as the caller named it.
 */
async function withPoolResolved<T extends SettingsInput>(
  db: Database,
  orgId: string,
  settings: T,
): Promise<Outcome<T, "invalid">> {
  if (!settings.poolId) {
    return ok(settings);
  }
  const pool = await resolveRef(db, "pool", { orgId }, settings.poolId);
  return pool.ok ? ok({ ...settings, poolId: pool.value.id }) : fail(poolNotFound(settings.poolId));
}

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/** The public shape of a workspace. */
export function presentWorkspace(row: WorkspaceRow) {
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    projectId: row.projectId ?? "",
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
    workloadIdentityTokenLifetimeSeconds: row.workloadIdentityTokenLifetimeSeconds,
    assessmentsEnabled: row.assessmentsEnabled,
    assessmentIntervalMinutes: row.assessmentIntervalMinutes,
    autoRemediate: row.autoRemediate,
    driftStatus: row.driftStatus ?? ("unknown" as const),
    lastAssessmentAt: iso(row.lastAssessmentAt),
    nextAssessmentAt: iso(row.nextAssessmentAt),
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
    workloadIdentityTokenLifetimeSeconds: row.workloadIdentityTokenLifetimeSeconds,
    assessmentsEnabled: row.assessmentsEnabled,
    assessmentIntervalMinutes: row.assessmentIntervalMinutes,
    autoRemediate: row.autoRemediate,
  };
}

/**
 * The workspace of the org named by `ref` (its `ws_…` id or its name), or undefined. Another
 * org's workspace is never found. For other features that address workspaces in their paths.
 */
export async function resolveWorkspace(
  db: Database,
  orgId: string,
  ref: string,
): Promise<WorkspaceRow | undefined> {
  const result = await resolveRef(db, "workspace", { orgId }, ref);
  return result.ok ? result.value : undefined;
}

/** The refusal a failed write stands for, when a constraint caught a race; else undefined. */
function raceFailure(
  err: unknown,
  settings: WorkspaceSettings,
): Reason<"invalid" | "conflict"> | undefined {
  const text = err instanceof Error ? `${err.message} ${err.cause}` : "";
  if (/UNIQUE constraint failed/i.test(text)) {
    return nameTaken(settings.name);
  }
  // The pool was deleted between the check and the write.
  if (/FOREIGN KEY constraint failed/i.test(text)) {
    return poolNotFound(settings.poolId);
  }
  return undefined;
}

/** Where a workspace is, for the references a write checks: its id and its project. */
type Placement = { id: string; projectId: string; before?: { projectId: string | null } };

/**
 * Why the settings refer to something the workspace may not use, or null: a pool or consumer
 * workspace not in the org (`invalid`), a name taken, or a pool whose scope does not allow the
 * workspace where it ends up (`conflict`, the scope rule's sentence), checked when the pool or
 * the project changes.
 */
async function checkReferences(
  db: Database,
  orgId: string,
  settings: WorkspaceSettings,
  placement: Placement,
  before?: WorkspaceSettings,
): Promise<Reason<"invalid" | "conflict"> | null> {
  const moved = placement.projectId !== placement.before?.projectId;
  if (settings.poolId && (settings.poolId !== before?.poolId || moved)) {
    const pool = await findPoolScope(db, orgId, settings.poolId);
    if (!pool) {
      return poolNotFound(settings.poolId);
    }
    const workspace = { id: placement.id, name: settings.name, projectId: placement.projectId };
    const refusal = poolScopeRefusal(pool, workspace);
    if (refusal !== null) {
      return refuse("conflict", refusal).reason;
    }
  }
  if (settings.name !== before?.name && (await findWorkspaceByName(db, orgId, settings.name))) {
    return nameTaken(settings.name);
  }
  const added = (settings.remoteStateConsumerIds ?? []).filter(
    (id) => !(before?.remoteStateConsumerIds ?? []).includes(id),
  );
  const missing = await missingWorkspaces(db, orgId, added);
  if (missing.length > 0) {
    return invalidInput(
      "json.remoteStateConsumerIds",
      `workspace ${missing.join(", ")} not found in this organization`,
    ).reason;
  }
  return null;
}

/**
 * Creates a workspace in `projectId` (a project of the org the caller resolved) after checking
 * its settings, that its pool exists and allows it, and its name's uniqueness.
 */
export async function createWorkspace(
  deps: Deps,
  input: {
    orgId: string;
    actor: AuditActor;
    projectId: string;
    settings: SettingsInput & { name: string };
  },
): Promise<WorkspaceResult<Workspace>> {
  const { db } = deps;
  const named = await withPoolResolved(db, input.orgId, input.settings);
  if (!named.ok) {
    return named;
  }
  const resolved = settingsForCreate(named.value);
  if (!resolved.ok) {
    return invalidInput(`json.${resolved.problem.field}`, resolved.problem.message);
  }
  const id = newId("workspace");
  const placement = { id, projectId: input.projectId };
  const problem = await checkReferences(db, input.orgId, resolved.value, placement);
  if (problem) {
    return fail(problem);
  }
  const now = deps.now();
  const columns = {
    ...resolved.value,
    id,
    orgId: input.orgId,
    projectId: input.projectId,
    lockedBy: null,
    lockReason: null,
    lockedAt: null,
    currentRunId: null,
    nextAssessmentAt: nextAssessmentAt(null, resolved.value, null, now),
    driftStatus: null,
    lastAssessmentAt: null,
    createdAt: now,
    updatedAt: now,
  };
  // A new workspace has no variables, so no PULUMI_BACKEND_URL of its own.
  const row: WorkspaceRow = { ...columns, hasOwnStateBackend: false };
  try {
    await db.batch([
      db.insert(workspaces).values(columns),
      auditQuery(db, {
        orgId: input.orgId,
        actor: input.actor,
        action: "workspace.create",
        targetType: "workspace",
        targetId: row.id,
        data: { settings: resolved.value, projectId: input.projectId },
        now,
      }),
    ]);
  } catch (err) {
    const failure = raceFailure(err, resolved.value);
    if (failure) {
      return fail(failure);
    }
    throw err;
  }
  return ok(presentWorkspace(row));
}

/** One page of the workspaces of the viewer's org that it may see, by name. */
export async function listWorkspaces(
  db: Database,
  viewer: PersonPrincipal,
  page: {
    limit: number;
    after?: string | undefined;
    offset?: number | undefined;
    search?: string | undefined;
    projectId?: string | undefined;
    /** Only workspaces carrying every one of these tags. */
    tags?: readonly string[] | undefined;
  },
) {
  const rows = await listWorkspaceRows(db, viewer.orgId, {
    ...page,
    visible: and(
      readableWorkspaces(db, viewer, workspaces.id),
      taggedWithAll(viewer.orgId, page.tags ?? []),
    ),
  });
  return rows.map((row) => ({ row, workspace: presentWorkspace(row) }));
}

/**
 * How many workspaces of the viewer's org it may see: with `search`, whose name contains it;
 * with `tags`, carrying every one of them; with `projectId`, in that project.
 */
export function countWorkspaces(
  db: Database,
  viewer: PersonPrincipal,
  filter: {
    search?: string | undefined;
    tags?: readonly string[] | undefined;
    projectId?: string | undefined;
  },
): Promise<number> {
  return countWorkspaceRows(db, viewer.orgId, {
    search: filter.search,
    visible: and(
      readableWorkspaces(db, viewer, workspaces.id),
      taggedWithAll(viewer.orgId, filter.tags ?? []),
      filter.projectId === undefined ? undefined : eq(workspaces.projectId, filter.projectId),
    ),
  });
}

/**
 * Applies a partial update; `projectId` (a project of the org the caller resolved) moves the
 * workspace. Only fields present change; the audit event lists them with their old and new
 * values. An update that changes nothing writes nothing. A pool that does not allow the
 * workspace where it ends up (`poolScopeRefusal`) refuses the change (`conflict`).
 */
export async function updateWorkspace(
  deps: Deps,
  input: {
    orgId: string;
    ref: string;
    actor: AuditActor;
    patch: SettingsInput;
    projectId?: string | undefined;
  },
): Promise<WorkspaceResult<Workspace>> {
  const { db } = deps;
  const current = await resolveWorkspace(db, input.orgId, input.ref);
  if (!current) {
    return workspaceNotFound(input.ref);
  }
  const before = settingsOf(current);
  const patch = await withPoolResolved(db, input.orgId, input.patch);
  if (!patch.ok) {
    return patch;
  }
  const resolved = settingsForUpdate(before, patch.value);
  if (!resolved.ok) {
    return invalidInput(`json.${resolved.problem.field}`, resolved.problem.message);
  }
  const changes: Record<string, { from: unknown; to: unknown }> = {};
  for (const [field, to] of Object.entries(resolved.value)) {
    const from = before[field as keyof WorkspaceSettings];
    if (JSON.stringify(from) !== JSON.stringify(to)) {
      changes[field] = { from, to };
    }
  }
  const projectId = input.projectId ?? current.projectId ?? "";
  if (projectId !== current.projectId) {
    changes.projectId = { from: current.projectId, to: projectId };
  }
  if (Object.keys(changes).length === 0) {
    return ok(presentWorkspace(current));
  }
  const switchProblem = engineSwitchProblem(before, resolved.value);
  if (switchProblem !== null && (await findCurrentVersion(db, current.id))) {
    return refuse("conflict", `workspace ${input.ref} cannot change engine: ${switchProblem}`);
  }
  const placement = { id: current.id, projectId, before: { projectId: current.projectId } };
  const problem = await checkReferences(db, input.orgId, resolved.value, placement, before);
  if (problem) {
    return fail(problem);
  }
  const now = deps.now();
  try {
    const [[updated]] = await db.batch([
      updateWorkspaceQuery(db, input.orgId, current.id, {
        ...resolved.value,
        projectId,
        nextAssessmentAt: nextAssessmentAt(before, resolved.value, current.nextAssessmentAt, now),
        updatedAt: now,
      }),
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
    return updated ? ok(presentWorkspace(updated)) : workspaceNotFound(input.ref);
  } catch (err) {
    const failure = raceFailure(err, resolved.value);
    if (failure) {
      return fail(failure);
    }
    throw err;
  }
}
