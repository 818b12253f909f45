/** D1 access for users, their sessions' and tokens' revocation, and their team memberships. */
import { and, asc, desc, eq, inArray, isNull, notInArray, or, type SQL, sql } from "drizzle-orm";
import type { Database } from "../db/client.ts";
import { sessions, teamMembers, teams, users, userTokens } from "../db/schema.ts";
import type { Role } from "../tokens/model.ts";

export type UserRow = typeof users.$inferSelect;
export type UserTokenRow = typeof userTokens.$inferSelect;

export function getUser(db: Database, orgId: string, id: string): Promise<UserRow | undefined> {
  return db.query.users.findFirst({ where: and(eq(users.orgId, orgId), eq(users.id, id)) });
}

export function findUserByEmail(db: Database, orgId: string, email: string) {
  return db.query.users.findFirst({ where: and(eq(users.orgId, orgId), eq(users.email, email)) });
}

/** The user and the organization roles of its teams, in one round trip. */
export async function userWithRoles(db: Database, id: string) {
  const [found, roles] = await db.batch([
    db.select().from(users).where(eq(users.id, id)).limit(1),
    db
      .select({ role: teams.organizationRole })
      .from(teamMembers)
      .innerJoin(teams, eq(teams.id, teamMembers.teamId))
      .where(eq(teamMembers.userId, id)),
  ]);
  const user = found[0];
  return user ? { user, roles: roles.map((r) => r.role) } : undefined;
}

/** The org's users in email order. */
export function listUserRows(db: Database, orgId: string): Promise<UserRow[]> {
  return db.select().from(users).where(eq(users.orgId, orgId)).orderBy(asc(users.email));
}

/** The teams of some users: `userId → [{ id, name, source, role }]`. */
export async function teamsOfUsers(db: Database, orgId: string, userIds: readonly string[]) {
  const byUser = new Map<
    string,
    { id: string; name: string; source: "idp" | "manual"; role: Role | null }[]
  >();
  // D1 binds at most 100 parameters per statement.
  for (let i = 0; i < userIds.length; i += 90) {
    const rows = await db
      .select({
        userId: teamMembers.userId,
        id: teams.id,
        name: teams.name,
        source: teamMembers.source,
        role: teams.organizationRole,
      })
      .from(teamMembers)
      .innerJoin(teams, eq(teams.id, teamMembers.teamId))
      .where(
        and(eq(teamMembers.orgId, orgId), inArray(teamMembers.userId, userIds.slice(i, i + 90))),
      )
      .orderBy(asc(teams.name));
    for (const { userId, ...team } of rows) {
      byUser.set(userId, [...(byUser.get(userId) ?? []), team]);
    }
  }
  return byUser;
}

export function insertUserQuery(db: Database, row: typeof users.$inferInsert) {
  return db.insert(users).values(row).returning();
}

export function updateUserQuery(
  db: Database,
  id: string,
  values: Partial<typeof users.$inferInsert>,
  condition?: SQL,
) {
  return db
    .update(users)
    .set(values)
    .where(and(eq(users.id, id), condition))
    .returning();
}

/** Ends every live session of the user. */
export function revokeUserSessionsQuery(db: Database, userId: string, now: number) {
  return db
    .update(sessions)
    .set({ revokedAt: now })
    .where(and(eq(sessions.userId, userId), isNull(sessions.revokedAt)));
}

/** Revokes every live personal token of the user. */
export function revokeUserTokensQuery(db: Database, userId: string, now: number) {
  return db
    .update(userTokens)
    .set({ revokedAt: now })
    .where(and(eq(userTokens.userId, userId), isNull(userTokens.revokedAt)));
}

/**
 * The statements that make the user's provider-given memberships exactly `teamIds`: `idp` rows
 * of other teams go, missing ones are added; a `manual` membership is never touched.
 */
export function syncIdpMembershipQueries(
  db: Database,
  input: { orgId: string; userId: string; teamIds: readonly string[]; now: number },
) {
  const remove = db
    .delete(teamMembers)
    .where(
      and(
        eq(teamMembers.userId, input.userId),
        eq(teamMembers.source, "idp"),
        input.teamIds.length === 0 ? undefined : notInArray(teamMembers.teamId, [...input.teamIds]),
      ),
    );
  const add = input.teamIds.map((teamId) =>
    db
      .insert(teamMembers)
      .values({
        teamId,
        userId: input.userId,
        orgId: input.orgId,
        source: "idp",
        createdAt: input.now,
      })
      .onConflictDoNothing(),
  );
  return [remove, ...add] as const;
}

/** The user's current memberships: team id → source. */
export async function membershipsOf(db: Database, userId: string) {
  const rows = await db
    .select({ teamId: teamMembers.teamId, source: teamMembers.source })
    .from(teamMembers)
    .where(eq(teamMembers.userId, userId));
  return new Map(rows.map((r) => [r.teamId, r.source]));
}

/** The org's teams mapped to any of `groups`, as ids. */
export async function teamsForGroups(
  db: Database,
  orgId: string,
  groups: readonly string[],
): Promise<string[]> {
  if (groups.length === 0) {
    return [];
  }
  const rows = await db
    .select({ id: teams.id })
    .from(teams)
    .where(
      and(
        eq(teams.orgId, orgId),
        sql`exists (select 1 from json_each(${teams.idpGroups}) where json_each.value in (select value from json_each(${JSON.stringify(groups)})))`,
      ),
    );
  return rows.map((r) => r.id);
}

export function insertUserTokenQuery(db: Database, row: typeof userTokens.$inferInsert) {
  return db.insert(userTokens).values(row);
}

/** The user's tokens that still work (not revoked, not expired), newest first. */
export function listUserTokenRows(db: Database, userId: string, now: number) {
  return db
    .select()
    .from(userTokens)
    .where(
      and(
        eq(userTokens.userId, userId),
        isNull(userTokens.revokedAt),
        or(isNull(userTokens.expiresAt), sql`${userTokens.expiresAt} > ${now}`),
      ),
    )
    .orderBy(desc(userTokens.createdAt), desc(userTokens.id));
}

export function getUserToken(db: Database, userId: string, id: string) {
  return db.query.userTokens.findFirst({
    where: and(eq(userTokens.userId, userId), eq(userTokens.id, id)),
  });
}

export function revokeUserTokenQuery(db: Database, userId: string, id: string, now: number) {
  return db
    .update(userTokens)
    .set({ revokedAt: now })
    .where(and(eq(userTokens.userId, userId), eq(userTokens.id, id), isNull(userTokens.revokedAt)));
}
