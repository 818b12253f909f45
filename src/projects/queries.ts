/** D1 access for projects and their team access. Every read is scoped to the org. */
import { and, asc, count, eq, gt, inArray, type SQL, sql } from "drizzle-orm";
import type { Database } from "../db/client.ts";
import { projects, projectTeamAccess, teams, workspaces } from "../db/schema.ts";
import { PROJECT_ID_PATTERN, type ProjectRow, type ProjectTeamAccessRow } from "./model.ts";

/** A project of the org by id (`prj_…`) or by name; another org's is never found. */
export function findProject(
  db: Database,
  orgId: string,
  ref: string,
): Promise<ProjectRow | undefined> {
  const column = PROJECT_ID_PATTERN.test(ref) ? projects.id : projects.name;
  return db.query.projects.findFirst({ where: and(eq(projects.orgId, orgId), eq(column, ref)) });
}

/** The org's default project, if it has one yet. */
export function findDefaultProject(db: Database, orgId: string) {
  return db.query.projects.findFirst({
    where: and(eq(projects.orgId, orgId), eq(projects.isDefault, true)),
  });
}

/** Inserts unless the name (or, for a default project, the org's default) is taken. */
export function insertProjectQuery(db: Database, row: typeof projects.$inferInsert) {
  return db.insert(projects).values(row).onConflictDoNothing().returning();
}

export function updateProjectQuery(
  db: Database,
  orgId: string,
  id: string,
  set: Partial<typeof projects.$inferInsert>,
) {
  return db
    .update(projects)
    .set(set)
    .where(and(eq(projects.orgId, orgId), eq(projects.id, id)))
    .returning();
}

/** Deletes the project (the workspaces' foreign key refuses it while one is in it). */
export function deleteProjectQuery(db: Database, orgId: string, id: string) {
  return db
    .delete(projects)
    .where(and(eq(projects.orgId, orgId), eq(projects.id, id)))
    .returning({ id: projects.id });
}

/** How many workspaces the project holds. */
export async function countProjectWorkspaces(db: Database, projectId: string): Promise<number> {
  const [row] = await db
    .select({ n: count() })
    .from(workspaces)
    .where(eq(workspaces.projectId, projectId));
  return row?.n ?? 0;
}

/**
 * One page of the org's projects by name, `limit + 1` rows to detect a next page, each with
 * how many workspaces it holds; `visible` keeps those a caller may see (`authz/queries.ts`).
 */
export function listProjectRows(
  db: Database,
  orgId: string,
  page: { limit: number; after?: string | undefined; visible?: SQL | undefined },
) {
  const held = db
    .select({ n: count() })
    .from(workspaces)
    .where(eq(workspaces.projectId, projects.id));
  return db
    .select({ project: projects, workspaceCount: sql<number>`(${held})`.mapWith(Number) })
    .from(projects)
    .where(
      and(
        eq(projects.orgId, orgId),
        page.after === undefined ? undefined : gt(projects.name, page.after),
        page.visible,
      ),
    )
    .orderBy(asc(projects.name))
    .limit(page.limit + 1);
}

/** Every team's access to the project, by team name. */
export function listProjectAccess(db: Database, projectId: string) {
  return db
    .select({ access: projectTeamAccess, teamName: teams.name })
    .from(projectTeamAccess)
    .innerJoin(teams, eq(teams.id, projectTeamAccess.teamId))
    .where(eq(projectTeamAccess.projectId, projectId))
    .orderBy(asc(teams.name));
}

export function getProjectAccess(db: Database, projectId: string, teamId: string) {
  return db.query.projectTeamAccess.findFirst({
    where: and(eq(projectTeamAccess.projectId, projectId), eq(projectTeamAccess.teamId, teamId)),
  });
}

/** Gives the team `access` to the project, replacing what it had. */
export function putProjectAccessQuery(
  db: Database,
  row: {
    projectId: string;
    teamId: string;
    orgId: string;
    access: ProjectTeamAccessRow["access"];
    now: number;
  },
) {
  const { access } = row;
  return db
    .insert(projectTeamAccess)
    .values({
      projectId: row.projectId,
      teamId: row.teamId,
      orgId: row.orgId,
      access,
      createdAt: row.now,
      updatedAt: row.now,
    })
    .onConflictDoUpdate({
      target: [projectTeamAccess.projectId, projectTeamAccess.teamId],
      set: { access, updatedAt: row.now },
    });
}

export function deleteProjectAccessQuery(db: Database, projectId: string, teamId: string) {
  return db
    .delete(projectTeamAccess)
    .where(and(eq(projectTeamAccess.projectId, projectId), eq(projectTeamAccess.teamId, teamId)));
}

/** Those of `ids` that name no project of the org. */
export async function missingProjects(
  db: Database,
  orgId: string,
  ids: readonly string[],
): Promise<string[]> {
  const known = new Set<string>();
  // D1 binds at most 100 parameters per statement.
  for (let i = 0; i < ids.length; i += 50) {
    const found = await db
      .select({ id: projects.id })
      .from(projects)
      .where(and(eq(projects.orgId, orgId), inArray(projects.id, ids.slice(i, i + 50))));
    for (const row of found) {
      known.add(row.id);
    }
  }
  return ids.filter((id) => !known.has(id));
}
