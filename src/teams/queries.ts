/** D1 access for teams, their members, their tokens and their access to workspaces. */
import { and, asc, desc, eq, isNull, or, sql } from "drizzle-orm";
import type { Database } from "../db/client.ts";
import {
  teamMembers,
  teams,
  teamTokens,
  users,
  workspaces,
  workspaceTeamAccess,
} from "../db/schema.ts";

export type TeamRow = typeof teams.$inferSelect;
export type TeamTokenRow = typeof teamTokens.$inferSelect;
export type TeamAccessRow = typeof workspaceTeamAccess.$inferSelect;

export function getTeam(db: Database, orgId: string, id: string): Promise<TeamRow | undefined> {
  return db.query.teams.findFirst({ where: and(eq(teams.orgId, orgId), eq(teams.id, id)) });
}

export function findTeamByName(db: Database, orgId: string, name: string) {
  return db.query.teams.findFirst({ where: and(eq(teams.orgId, orgId), eq(teams.name, name)) });
}

/** The org's teams in name order, each with its member count. */
export function listTeamRows(db: Database, orgId: string) {
  return db
    .select({
      team: teams,
      members: sql<number>`(select count(*) from ${teamMembers} where ${teamMembers.teamId} = ${teams.id})`,
    })
    .from(teams)
    .where(eq(teams.orgId, orgId))
    .orderBy(asc(teams.name));
}

export function insertTeamQuery(db: Database, row: typeof teams.$inferInsert) {
  return db.insert(teams).values(row).onConflictDoNothing().returning();
}

export function updateTeamQuery(
  db: Database,
  orgId: string,
  id: string,
  values: Partial<typeof teams.$inferInsert>,
) {
  return db
    .update(teams)
    .set(values)
    .where(and(eq(teams.orgId, orgId), eq(teams.id, id)))
    .returning();
}

/** Deleting a team deletes its memberships, tokens and workspace access (foreign keys cascade). */
export function deleteTeamQuery(db: Database, orgId: string, id: string) {
  return db.delete(teams).where(and(eq(teams.orgId, orgId), eq(teams.id, id)));
}

/** The team's members with how each got there, email order. */
export function listMembers(db: Database, teamId: string) {
  return db
    .select({
      id: users.id,
      email: users.email,
      name: users.name,
      isDisabled: sql<boolean>`${users.disabledAt} is not null`,
      source: teamMembers.source,
    })
    .from(teamMembers)
    .innerJoin(users, eq(users.id, teamMembers.userId))
    .where(eq(teamMembers.teamId, teamId))
    .orderBy(asc(users.email));
}

/** Adds (or turns into a manual one) the user's membership. */
export function putMemberQuery(
  db: Database,
  row: { teamId: string; userId: string; orgId: string; now: number },
) {
  return db
    .insert(teamMembers)
    .values({ ...row, source: "manual", createdAt: row.now })
    .onConflictDoUpdate({
      target: [teamMembers.teamId, teamMembers.userId],
      set: { source: "manual" },
    });
}

export function deleteMemberQuery(db: Database, teamId: string, userId: string) {
  return db
    .delete(teamMembers)
    .where(and(eq(teamMembers.teamId, teamId), eq(teamMembers.userId, userId)))
    .returning({ userId: teamMembers.userId });
}

export function insertTeamTokenQuery(db: Database, row: typeof teamTokens.$inferInsert) {
  return db.insert(teamTokens).values(row);
}

/** The team's working tokens, newest first. */
export function listTeamTokenRows(db: Database, teamId: string, now: number) {
  return db
    .select()
    .from(teamTokens)
    .where(
      and(
        eq(teamTokens.teamId, teamId),
        isNull(teamTokens.revokedAt),
        or(isNull(teamTokens.expiresAt), sql`${teamTokens.expiresAt} > ${now}`),
      ),
    )
    .orderBy(desc(teamTokens.createdAt), desc(teamTokens.id));
}

export function getTeamToken(db: Database, teamId: string, id: string) {
  return db.query.teamTokens.findFirst({
    where: and(eq(teamTokens.teamId, teamId), eq(teamTokens.id, id)),
  });
}

export function revokeTeamTokenQuery(db: Database, teamId: string, id: string, now: number) {
  return db
    .update(teamTokens)
    .set({ revokedAt: now })
    .where(and(eq(teamTokens.teamId, teamId), eq(teamTokens.id, id), isNull(teamTokens.revokedAt)));
}

/** The access every team holds on the workspace, by team name. */
export function listWorkspaceAccess(db: Database, workspaceId: string) {
  return db
    .select({ access: workspaceTeamAccess, teamName: teams.name })
    .from(workspaceTeamAccess)
    .innerJoin(teams, eq(teams.id, workspaceTeamAccess.teamId))
    .where(eq(workspaceTeamAccess.workspaceId, workspaceId))
    .orderBy(asc(teams.name));
}

/** The workspaces a team has access to, by name. */
export function listTeamWorkspaces(db: Database, teamId: string) {
  return db
    .select({
      workspaceId: workspaces.id,
      name: workspaces.name,
      access: workspaceTeamAccess.access,
    })
    .from(workspaceTeamAccess)
    .innerJoin(workspaces, eq(workspaces.id, workspaceTeamAccess.workspaceId))
    .where(eq(workspaceTeamAccess.teamId, teamId))
    .orderBy(asc(workspaces.name));
}

export function getWorkspaceAccess(db: Database, workspaceId: string, teamId: string) {
  return db.query.workspaceTeamAccess.findFirst({
    where: and(
      eq(workspaceTeamAccess.workspaceId, workspaceId),
      eq(workspaceTeamAccess.teamId, teamId),
    ),
  });
}

export function putWorkspaceAccessQuery(
  db: Database,
  row: {
    workspaceId: string;
    teamId: string;
    orgId: string;
    access: TeamAccessRow["access"];
    now: number;
  },
) {
  return db
    .insert(workspaceTeamAccess)
    .values({
      workspaceId: row.workspaceId,
      teamId: row.teamId,
      orgId: row.orgId,
      access: row.access,
      createdAt: row.now,
      updatedAt: row.now,
    })
    .onConflictDoUpdate({
      target: [workspaceTeamAccess.workspaceId, workspaceTeamAccess.teamId],
      set: { access: row.access, updatedAt: row.now },
    });
}

export function deleteWorkspaceAccessQuery(db: Database, workspaceId: string, teamId: string) {
  return db
    .delete(workspaceTeamAccess)
    .where(
      and(eq(workspaceTeamAccess.workspaceId, workspaceId), eq(workspaceTeamAccess.teamId, teamId)),
    );
}
