/**
 * Users: who signs in (created or updated at each sign-in, their provider-given team memberships
 * made to follow the groups they arrive with), their principal at each request, and disabling,
 * which ends every session and token of theirs at once.
 */

import { newId, ok } from "@outpost/common";
import { auditQuery } from "../audit/service.ts";
import type { AuditActor, SignInMethod } from "../authz/actor.ts";
import type { UserPrincipal } from "../authz/principal.ts";
import type { Database } from "../db/client.ts";
import { type Outcome, refuse } from "../lib/reason.ts";
import { isNewSignIn, normalizeEmail, presentUser, userPrincipal } from "./model.ts";
import {
  findUserByEmail,
  getUser,
  insertUserQuery,
  listUserRows,
  membershipsOf,
  revokeUserSessionsQuery,
  revokeUserTokensQuery,
  syncIdpMembershipQueries,
  teamsForGroups,
  teamsOfUsers,
  type UserRow,
  updateUserQuery,
  userWithRoles,
} from "./queries.ts";

/**
 * The principal of user `userId` as it is now (its teams' roles read at this request), or why
 * not: the user is unknown, or disabled.
 */
export async function loadUserPrincipal(
  db: Database,
  userId: string,
  via: Extract<SignInMethod, "sso" | "access" | "user-token">,
): Promise<Outcome<UserPrincipal, "gone" | "revoked">> {
  const found = await userWithRoles(db, userId);
  if (!found) {
    return refuse("gone", `user ${userId} no longer exists`);
  }
  if (found.user.disabledAt !== null) {
    return refuse("revoked", `user ${found.user.email} is disabled`);
  }
  return ok(userPrincipal(found.user, found.roles, via));
}

export type SignIn = {
  orgId: string;
  email: string;
  name: string;
  /** The provider's `sub` (SSO only). */
  subject: string | null;
  method: "sso" | "access";
  /** The groups the user arrived with; null when the provider sent no groups claim at all. */
  groups: readonly string[] | null;
  now: number;
};

/** Makes the user's provider-given memberships follow `groups`; writes only what changed. */
async function syncGroups(
  db: Database,
  user: UserRow,
  groups: readonly string[],
  actor: AuditActor,
  now: number,
) {
  const [wanted, current] = await Promise.all([
    teamsForGroups(db, user.orgId, groups),
    membershipsOf(db, user.id),
  ]);
  const added = wanted.filter((id) => !current.has(id));
  const removed = [...current].filter(([id, source]) => source === "idp" && !wanted.includes(id));
  if (added.length === 0 && removed.length === 0) {
    return;
  }
  const audit = (action: string, teamId: string) =>
    auditQuery(db, {
      orgId: user.orgId,
      actor,
      action,
      targetType: "team",
      targetId: teamId,
      data: { userId: user.id, email: user.email, source: "idp" },
      now,
    });
  await db.batch([
    ...syncIdpMembershipQueries(db, { orgId: user.orgId, userId: user.id, teamIds: wanted, now }),
    ...added.map((id) => audit("team.member.add", id)),
    ...removed.map(([id]) => audit("team.member.remove", id)),
  ]);
}

/**
 * Records a sign-in: creates the user on its first, updates its name and provider subject, makes
 * its provider-given teams follow `groups`, and audits the sign-in (for Access, the first request
 * of a visit). A disabled user is refused and nothing changes.
 */
export async function signInUser(
  db: Database,
  input: SignIn,
): Promise<Outcome<{ user: UserRow; isNew: boolean }, "revoked">> {
  const email = normalizeEmail(input.email);
  let user = await findUserByEmail(db, input.orgId, email);
  if (user?.disabledAt != null) {
    return refuse("revoked", `user ${email} is disabled`);
  }
  const isNew = !user;
  const fresh = !user || isNewSignIn(user, input.method, input.now);
  if (!user) {
    const [created] = await insertUserQuery(db, {
      id: newId("user"),
      orgId: input.orgId,
      email,
      name: input.name,
      ssoSubject: input.subject,
      lastSignInAt: input.now,
      lastSignInMethod: input.method,
      createdAt: input.now,
      updatedAt: input.now,
    }).onConflictDoNothing();
    user = created ?? (await findUserByEmail(db, input.orgId, email));
    if (!user) {
      throw new Error(`user ${email} neither inserted nor found`);
    }
  } else if (fresh || user.name !== input.name) {
    const [updated] = await updateUserQuery(db, user.id, {
      name: input.name || user.name,
      ssoSubject: input.subject ?? user.ssoSubject,
      lastSignInAt: input.now,
      lastSignInMethod: input.method,
      updatedAt: input.now,
    });
    user = updated ?? user;
  }
  const actor: AuditActor = {
    type: "user",
    id: user.id,
    name: user.name || user.email,
    via: input.method,
  };
  if (input.groups !== null) {
    await syncGroups(db, user, input.groups, actor, input.now);
  }
  if (fresh) {
    await auditQuery(db, {
      orgId: user.orgId,
      actor,
      action: "user.sign_in",
      targetType: "user",
      targetId: user.id,
      data: { method: input.method, email: user.email, groups: input.groups },
      now: input.now,
    });
  }
  return ok({ user, isNew });
}

/** The org's users with their teams, email order. */
export async function listUsers(db: Database, orgId: string) {
  const rows = await listUserRows(db, orgId);
  const teams = await teamsOfUsers(
    db,
    orgId,
    rows.map((r) => r.id),
  );
  return rows.map((row) => presentUser(row, teams.get(row.id) ?? []));
}

/** One user as the API shows it. */
export async function showUser(db: Database, orgId: string, userId: string) {
  const [user, teams] = await Promise.all([
    getUser(db, orgId, userId),
    teamsOfUsers(db, orgId, [userId]),
  ]);
  return user ? presentUser(user, teams.get(userId) ?? []) : undefined;
}

/**
 * Disables or enables a user. Disabling ends all its sessions and revokes all its personal tokens
 * in the same batch, so its very next request is refused; enabling gives nothing back but the
 * right to sign in again.
 */
export async function setUserDisabled(
  db: Database,
  input: { orgId: string; userId: string; disabled: boolean; actor: AuditActor; now: number },
): Promise<Outcome<NonNullable<Awaited<ReturnType<typeof showUser>>>, "not_found" | "conflict">> {
  const user = await getUser(db, input.orgId, input.userId);
  if (!user) {
    return refuse("not_found", `user ${input.userId} not found`);
  }
  if (input.disabled && input.actor.type === "user" && input.actor.id === user.id) {
    return refuse("conflict", "you cannot disable yourself");
  }
  if (input.disabled !== (user.disabledAt !== null)) {
    const audit = auditQuery(db, {
      orgId: input.orgId,
      actor: input.actor,
      action: input.disabled ? "user.disable" : "user.enable",
      targetType: "user",
      targetId: user.id,
      data: { email: user.email },
      now: input.now,
    });
    const change = updateUserQuery(db, user.id, {
      disabledAt: input.disabled ? input.now : null,
      updatedAt: input.now,
    });
    await (input.disabled
      ? db.batch([
          change,
          revokeUserSessionsQuery(db, user.id, input.now),
          revokeUserTokensQuery(db, user.id, input.now),
          audit,
        ])
      : db.batch([change, audit]));
  }
  const shown = await showUser(db, input.orgId, user.id);
  if (!shown) {
    return refuse("not_found", `user ${input.userId} not found`);
  }
  return ok(shown);
}
