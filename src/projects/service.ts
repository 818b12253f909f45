/**
 * Projects: create, list, rename and delete, each change with its audit event in the same D1
 * batch, and the organization's default project, made on first need. Expected refusals come back
 * as reasons, never thrown.
 */

import { fail, newId, ok } from "@outpost/common";
import { sql } from "drizzle-orm";
import { auditQuery, auditWhereQuery } from "../audit/service.ts";
import type { AuditActor } from "../authz/actor.ts";
import type { PersonPrincipal } from "../authz/principal.ts";
import { readableProjects } from "../authz/queries.ts";
import type { Database } from "../db/client.ts";
import { projects } from "../db/schema.ts";
import type { Deps } from "../deps.ts";
import { type Outcome, refuse } from "../lib/reason.ts";
import { forgetInPoolScopesQuery } from "../pools/queries.ts";
import {
  DEFAULT_PROJECT_DESCRIPTION,
  DEFAULT_PROJECT_NAME,
  notEmptyMessage,
  type Project,
  type ProjectRow,
  presentProject,
} from "./model.ts";
import {
  countProjectWorkspaces,
  deleteProjectQuery,
  findDefaultProject,
  findProject,
  insertProjectQuery,
  listProjectRows,
  updateProjectQuery,
} from "./queries.ts";

/** Who acts, in which organization, and when. */
export type ProjectCtx = { orgId: string; actor: AuditActor; now: number };

function nameTaken(name: string) {
  return refuse("conflict", `a project named ${name} exists`);
}

/** The project of the org named by `ref` (its `prj_…` id or its name), or undefined. */
export function resolveProject(
  db: Database,
  orgId: string,
  ref: string,
): Promise<ProjectRow | undefined> {
  return findProject(db, orgId, ref);
}

/**
 * The organization's default project, where a workspace created without a project goes. Every
 * organization has one from its creation (migration 0012 gave older ones theirs); should one be
 * missing it is made here, and two concurrent makers make one (a unique index allows one default
 * per organization).
 */
export async function defaultProject(deps: Deps, orgId: string) {
  const { db } = deps;
  const now = deps.now();
  const found = await findDefaultProject(db, orgId);
  if (found) {
    return found;
  }
  const [inserted] = await insertProjectQuery(db, {
    id: newId("project"),
    orgId,
    name: DEFAULT_PROJECT_NAME,
    description: DEFAULT_PROJECT_DESCRIPTION,
    isDefault: true,
    createdAt: now,
    updatedAt: now,
  });
  const made = inserted ?? (await findDefaultProject(db, orgId));
  if (!made) {
    throw new Error(
      `organization ${orgId} has no default project, and ${DEFAULT_PROJECT_NAME} names another`,
    );
  }
  return made;
}

/** Creates a project; its name is unique in the organization. */
export async function createProject(
  db: Database,
  ctx: ProjectCtx,
  input: { name: string; description?: string | undefined },
): Promise<Outcome<Project, "conflict">> {
  const id = newId("project");
  const [[row]] = await db.batch([
    insertProjectQuery(db, {
      id,
      orgId: ctx.orgId,
      name: input.name,
      description: input.description ?? "",
      isDefault: false,
      createdAt: ctx.now,
      updatedAt: ctx.now,
    }),
    auditWhereQuery(
      db,
      {
        orgId: ctx.orgId,
        actor: ctx.actor,
        action: "project.create",
        targetType: "project",
        targetId: id,
        data: { name: input.name },
        now: ctx.now,
      },
      sql`EXISTS (SELECT 1 FROM projects WHERE id = ${id})`,
    ),
  ]);
  if (!row) {
    return nameTaken(input.name);
  }
  return ok(presentProject(row, 0));
}

/** One page of the organization's projects the viewer may see, by name. */
export async function listProjects(
  db: Database,
  viewer: PersonPrincipal,
  page: { limit: number; after?: string | undefined },
) {
  const rows = await listProjectRows(db, viewer.orgId, {
    ...page,
    visible: readableProjects(db, viewer, projects.id),
  });
  return rows.map((r) => ({
    row: r.project,
    project: presentProject(r.project, r.workspaceCount),
  }));
}

/** The project as the API shows it. */
export async function showProject(db: Database, row: ProjectRow): Promise<Project> {
  return presentProject(row, await countProjectWorkspaces(db, row.id));
}

/** Renames or redescribes a project; the audit event lists what changed. */
export async function updateProject(
  db: Database,
  ctx: ProjectCtx,
  project: ProjectRow,
  patch: { name?: string | undefined; description?: string | undefined },
): Promise<Outcome<Project, "conflict" | "not_found">> {
  const changes: Record<string, { from: string; to: string }> = {};
  if (patch.name !== undefined && patch.name !== project.name) {
    changes.name = { from: project.name, to: patch.name };
  }
  if (patch.description !== undefined && patch.description !== project.description) {
    changes.description = { from: project.description, to: patch.description };
  }
  if (Object.keys(changes).length === 0) {
    return ok(await showProject(db, project));
  }
  if (changes.name && (await findProject(db, ctx.orgId, changes.name.to))) {
    return nameTaken(changes.name.to);
  }
  try {
    const [[updated]] = await db.batch([
      updateProjectQuery(db, ctx.orgId, project.id, {
        ...(changes.name ? { name: changes.name.to } : {}),
        ...(changes.description ? { description: changes.description.to } : {}),
        updatedAt: ctx.now,
      }),
      auditQuery(db, {
        orgId: ctx.orgId,
        actor: ctx.actor,
        action: "project.update",
        targetType: "project",
        targetId: project.id,
        data: { changes },
        now: ctx.now,
      }),
    ]);
    return updated
      ? ok(await showProject(db, updated))
      : refuse("not_found", `project ${project.name} not found`);
  } catch (err) {
    if (changes.name && /UNIQUE constraint failed/i.test(`${err} ${(err as Error).cause}`)) {
      return nameTaken(changes.name.to);
    }
    throw err;
  }
}

/**
 * Deletes an empty project with its team access and variable set links; a project that still
 * holds workspaces is a conflict saying how many, and the default project is never deleted. Pools
 * that allowed the project forget it.
 */
export async function deleteProject(
  db: Database,
  ctx: ProjectCtx,
  project: ProjectRow,
): Promise<Outcome<Project, "conflict">> {
  if (project.isDefault) {
    return refuse(
      "conflict",
      `project ${project.name} is the organization's default project, where workspaces created without a project go; it cannot be deleted`,
    );
  }
  const held = await countProjectWorkspaces(db, project.id);
  if (held > 0) {
    return refuse("conflict", notEmptyMessage(project.name, held), {
      details: { workspaceCount: held },
    });
  }
  try {
    await db.batch([
      deleteProjectQuery(db, ctx.orgId, project.id),
      forgetInPoolScopesQuery(db, ctx.orgId, "project", project.id),
      auditQuery(db, {
        orgId: ctx.orgId,
        actor: ctx.actor,
        action: "project.delete",
        targetType: "project",
        targetId: project.id,
        data: { name: project.name },
        now: ctx.now,
      }),
    ]);
  } catch (err) {
    // A workspace moved in between the count and the delete: the foreign key refused it.
    const raced = await countProjectWorkspaces(db, project.id);
    if (raced > 0) {
      return fail({
        kind: "conflict" as const,
        message: notEmptyMessage(project.name, raced),
        details: { workspaceCount: raced },
      });
    }
    throw err;
  }
  return ok(presentProject(project, 0));
}
