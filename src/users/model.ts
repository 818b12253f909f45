/** Users, pure: their principal, their public shape, and the rules of a sign-in. */
import type { SignInMethod } from "../authz/actor.ts";
import { highestRole } from "../authz/model.ts";
import type { UserPrincipal } from "../authz/principal.ts";
import type { Role } from "../tokens/model.ts";
import type { UserRow, UserTokenRow } from "./queries.ts";

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/** Emails compare case-insensitively: the stored form is trimmed and lowercased. */
export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase();
}

/** A plausible email address (what a provider's claim must look like to name a user). */
export function isEmail(text: string): boolean {
  return text.length <= 320 && /^[^\s@]+@[^\s@]+$/.test(text);
}

/** The principal of an enabled user, with the highest organization role of its teams. */
export function userPrincipal(
  user: UserRow,
  teamRoles: readonly (Role | null)[],
  via: Extract<SignInMethod, "sso" | "access" | "user-token">,
): UserPrincipal {
  return {
    kind: "user",
    orgId: user.orgId,
    userId: user.id,
    email: user.email,
    name: user.name,
    role: highestRole(teamRoles),
    via,
  };
}

export type UserTeam = { id: string; name: string; source: "idp" | "manual"; role: Role | null };

/** The public shape of a user; its organization role is the highest of its teams'. */
export function presentUser(user: UserRow, teams: readonly UserTeam[]) {
  return {
    id: user.id,
    email: user.email,
    name: user.name,
    organizationRole: highestRole(teams.map((t) => t.role)),
    teams: teams.map((t) => ({ id: t.id, name: t.name, source: t.source })),
    isDisabled: user.disabledAt !== null,
    lastSignInAt: iso(user.lastSignInAt),
    lastSignInMethod: user.lastSignInMethod,
    createdAt: new Date(user.createdAt).toISOString(),
  };
}

/** The public shape of a personal token; never the secret or its hash. */
export function presentUserToken(row: UserTokenRow) {
  return {
    id: row.id,
    description: row.description,
    createdAt: new Date(row.createdAt).toISOString(),
    lastUsedAt: iso(row.lastUsedAt),
    expiresAt: iso(row.expiresAt),
  };
}

/**
 * An Access request counts as a sign-in (and is audited as one) when the user was not seen
 * through Access for this long: the first request of a visit, not every request.
 */
export const ACCESS_SIGN_IN_GAP_MS = 60 * 60_000;

/** Whether a request through `method` at `now` is a new sign-in of the user. */
export function isNewSignIn(user: UserRow, method: "sso" | "access", now: number): boolean {
  if (method === "sso") {
    return true;
  }
  return (
    user.lastSignInMethod !== "access" ||
    user.lastSignInAt === null ||
    user.lastSignInAt < now - ACCESS_SIGN_IN_GAP_MS
  );
}
