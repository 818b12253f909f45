/**
 * The SQL side of authorization: a caller's team access on one workspace or project, and the
 * conditions that keep a list to the workspaces and projects a caller may see, so every list,
 * page and search filters in the query itself and nothing unreadable is ever loaded. A caller's
 * teams are a subquery (a user's memberships, or a team token's own team), never a list bound
 * from memory. A team's access to a project counts on each of the project's workspaces.
 */
import { and, eq, inArray, or, type SQL } from "drizzle-orm";
import type { SQLiteColumn } from "drizzle-orm/sqlite-core";
import type { Database } from "../db/client.ts";
import { projectTeamAccess, teamMembers, workspaces, workspaceTeamAccess } from "../db/schema.ts";
import { type AccessLevel, highestLevel } from "./model.ts";
import type { PersonPrincipal } from "./principal.ts";

/** Where a caller's teams come from: a user's memberships, a team token's team, or none. */
export type TeamSource = { userId: string } | { teamId: string } | null;

export function teamSourceOf(principal: PersonPrincipal): TeamSource {
  switch (principal.kind) {
    case "user":
      return { userId: principal.userId };
    case "team":
      return { teamId: principal.teamId };
    case "org":
      return null;
  }
}

/** Keeps the rows whose `teamId` column names one of the caller's teams. */
function teamCondition(db: Database, source: Exclude<TeamSource, null>, teamId: SQLiteColumn): SQL {
  return "teamId" in source
    ? eq(teamId, source.teamId)
    : inArray(
        teamId,
        db
          .select({ teamId: teamMembers.teamId })
          .from(teamMembers)
          .where(eq(teamMembers.userId, source.userId)),
      );
}

/** What the access of a caller's teams is looked up on: a workspace and its project. */
export type AccessTarget = { workspaceId: string; projectId?: string | null };

/**
 * The highest access the caller's teams hold on the workspace, given there or on its project,
 * or null when they hold none.
 */
export async function teamLevelOn(
  db: Database,
  source: TeamSource,
  target: AccessTarget,
): Promise<AccessLevel | null> {
  if (source === null) {
    return null;
  }
  const onWorkspace = db
    .select({ access: workspaceTeamAccess.access })
    .from(workspaceTeamAccess)
    .where(
      and(
        eq(workspaceTeamAccess.workspaceId, target.workspaceId),
        teamCondition(db, source, workspaceTeamAccess.teamId),
      ),
    );
  const rows = target.projectId
    ? await onWorkspace.unionAll(projectAccessQuery(db, source, target.projectId))
    : await onWorkspace;
  return highestLevel(rows.map((row) => row.access));
}

function projectAccessQuery(db: Database, source: Exclude<TeamSource, null>, projectId: string) {
  return db
    .select({ access: projectTeamAccess.access })
    .from(projectTeamAccess)
    .where(
      and(
        eq(projectTeamAccess.projectId, projectId),
        teamCondition(db, source, projectTeamAccess.teamId),
      ),
    );
}

/** The highest access the caller's teams hold on the project, or null when they hold none. */
export async function teamLevelOnProject(
  db: Database,
  source: TeamSource,
  projectId: string,
): Promise<AccessLevel | null> {
  if (source === null) {
    return null;
  }
  const rows = await projectAccessQuery(db, source, projectId);
  return highestLevel(rows.map((row) => row.access));
}

/**
 * The condition a list query adds to keep only the workspaces `principal` may see, over the
 * column holding a workspace id (`workspaces.id`, `runs.workspaceId`, …): those its teams hold
 * access to, directly or through the workspace's project. Undefined when it sees every workspace
 * of its organization (any organization role does). The caller's own org filter stays in the
 * query as before.
 */
export function readableWorkspaces(
  db: Database,
  principal: PersonPrincipal,
  workspaceId: SQLiteColumn,
): SQL | undefined {
  const source = teamSourceOf(principal);
  if (principal.role !== null || source === null) {
    return undefined;
  }
  return or(
    inArray(
      workspaceId,
      db
        .select({ workspaceId: workspaceTeamAccess.workspaceId })
        .from(workspaceTeamAccess)
        .where(teamCondition(db, source, workspaceTeamAccess.teamId)),
    ),
    inArray(
      workspaceId,
      db
        .select({ id: workspaces.id })
        .from(workspaces)
        .where(inArray(workspaces.projectId, accessibleProjects(db, source))),
    ),
  );
}

function accessibleProjects(db: Database, source: Exclude<TeamSource, null>) {
  return db
    .select({ projectId: projectTeamAccess.projectId })
    .from(projectTeamAccess)
    .where(teamCondition(db, source, projectTeamAccess.teamId));
}

/**
 * The condition keeping only the projects `principal` may see, over a column holding a project
 * id: those its teams hold access to. Undefined when it sees every project of its organization.
 */
export function readableProjects(
  db: Database,
  principal: PersonPrincipal,
  projectId: SQLiteColumn,
): SQL | undefined {
  const source = teamSourceOf(principal);
  if (principal.role !== null || source === null) {
    return undefined;
  }
  return inArray(projectId, accessibleProjects(db, source));
}
