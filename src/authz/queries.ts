/**
 * The SQL side of authorization: a caller's team access on one workspace, and the condition that
 * keeps a list to the workspaces a caller may see, so every list, page and search filters in the
 * query itself and nothing unreadable is ever loaded. A caller's teams are a subquery (a user's
 * memberships, or a team token's own team), never a list bound from memory.
 */
import { and, eq, inArray, type SQL } from "drizzle-orm";
import type { SQLiteColumn } from "drizzle-orm/sqlite-core";
import type { Database } from "../db/client.ts";
import { teamMembers, workspaceTeamAccess } from "../db/schema.ts";
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

function teamCondition(db: Database, source: Exclude<TeamSource, null>): SQL {
  return "teamId" in source
    ? eq(workspaceTeamAccess.teamId, source.teamId)
    : inArray(
        workspaceTeamAccess.teamId,
        db
          .select({ teamId: teamMembers.teamId })
          .from(teamMembers)
          .where(eq(teamMembers.userId, source.userId)),
      );
}

/** What the access of a caller's teams is looked up on: a workspace (and, later, its project). */
export type AccessTarget = { workspaceId: string; projectId?: string | null };

/** The highest access the caller's teams hold on the workspace, or null when they hold none. */
export async function teamLevelOn(
  db: Database,
  source: TeamSource,
  target: AccessTarget,
): Promise<AccessLevel | null> {
  if (source === null) {
    return null;
  }
  const rows = await db
    .select({ access: workspaceTeamAccess.access })
    .from(workspaceTeamAccess)
    .where(and(eq(workspaceTeamAccess.workspaceId, target.workspaceId), teamCondition(db, source)));
  return highestLevel(rows.map((row) => row.access));
}

/**
 * The condition a list query adds to keep only the workspaces `principal` may see, over the
 * column holding a workspace id (`workspaces.id`, `runs.workspaceId`, …); undefined when it sees
 * every workspace of its organization (any organization role does). The caller's own org filter
 * stays in the query as before.
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
  return inArray(
    workspaceId,
    db
      .select({ workspaceId: workspaceTeamAccess.workspaceId })
      .from(workspaceTeamAccess)
      .where(teamCondition(db, source)),
  );
}
