/**
 * Sessions: started by a sign-in (SSO, Cloudflare Access, or the break-glass token sign-in),
 * found by the SHA-256 of the cookie secret, ended by sign-out. A session resolves to the same
 * principal its owner would have with a token: a user with its teams of the moment, or the org
 * token it was started with.
 */

import { newId } from "@outpost/common";
import { and, eq, isNotNull, isNull, lt, or } from "drizzle-orm";
import { auditQuery } from "../audit/service.ts";
import type { AuditActor } from "../authz/actor.ts";
import type { PersonPrincipal } from "../authz/principal.ts";
import type { Database } from "../db/client.ts";
import { orgTokens, sessions } from "../db/schema.ts";
import { randomBase64Url, sha256Hex } from "../lib/crypto.ts";
import { loadUserPrincipal } from "../users/service.ts";
import { isSessionLive, type SessionSettings, shouldTouch } from "./model.ts";

export type SessionOwner =
  | { kind: "user"; orgId: string; userId: string; method: "sso" | "access" }
  | { kind: "token"; orgId: string; tokenId: string };

/** A live session and whom it acts for. */
export type LiveSession = {
  id: string;
  orgId: string;
  method: "token" | "sso" | "access";
  principal: PersonPrincipal;
  expiresAt: number;
  /** Whether this request should record the session as seen. */
  isStale: boolean;
  /** The org token's last use (token sessions), to record it like the API does. */
  tokenLastUsedAt: number | null;
};

/**
 * Starts a session and returns its cookie secret (the only copy). Expired and ended sessions of
 * the same owner are deleted in the same batch, where it is cheap.
 */
export async function startSession(
  db: Database,
  owner: SessionOwner,
  settings: SessionSettings,
  now: number,
): Promise<{ id: string; secret: string }> {
  const secret = randomBase64Url(32);
  const id = newId("session");
  const ownerColumn =
    owner.kind === "user" ? eq(sessions.userId, owner.userId) : eq(sessions.tokenId, owner.tokenId);
  await db.batch([
    db.insert(sessions).values({
      id,
      orgId: owner.orgId,
      tokenId: owner.kind === "token" ? owner.tokenId : null,
      userId: owner.kind === "user" ? owner.userId : null,
      method: owner.kind === "user" ? owner.method : "token",
      secretHash: await sha256Hex(secret),
      createdAt: now,
      lastSeenAt: now,
      expiresAt: now + settings.maxAgeMs,
      revokedAt: null,
    }),
    db
      .delete(sessions)
      .where(
        and(
          ownerColumn,
          or(
            lt(sessions.expiresAt, now),
            lt(sessions.lastSeenAt, now - settings.idleTimeoutMs),
            isNotNull(sessions.revokedAt),
          ),
        ),
      ),
  ]);
  return { id, secret };
}

/**
 * The live session of a cookie secret, or null when it is unknown, expired, idle, signed out, or
 * its user is disabled or its org token revoked.
 */
export async function findSession(
  db: Database,
  secret: string,
  settings: SessionSettings,
  now: number,
): Promise<LiveSession | null> {
  const [row] = await db
    .select({ session: sessions, token: orgTokens })
    .from(sessions)
    .leftJoin(orgTokens, eq(orgTokens.id, sessions.tokenId))
    .where(and(eq(sessions.secretHash, await sha256Hex(secret)), isNull(sessions.revokedAt)))
    .limit(1);
  if (!row || !isSessionLive(row.session, now, settings)) {
    return null;
  }
  const { session, token } = row;
  const base = {
    id: session.id,
    orgId: session.orgId,
    method: session.method,
    expiresAt: session.expiresAt,
    isStale: shouldTouch(session.lastSeenAt, session.createdAt, now),
  };
  if (session.userId !== null && session.method !== "token") {
    const user = await loadUserPrincipal(db, session.userId, session.method);
    return user.ok ? { ...base, principal: user.value, tokenLastUsedAt: null } : null;
  }
  if (!token || token.revokedAt !== null) {
    return null;
  }
  return {
    ...base,
    tokenLastUsedAt: token.lastUsedAt,
    principal: {
      kind: "org",
      orgId: token.orgId,
      tokenId: token.id,
      role: token.role,
      name: token.description,
      via: "token-session",
    },
  };
}

/** Records that the session was used now (its idle timeout starts again). */
export async function touchSession(db: Database, id: string, now: number): Promise<void> {
  await db.update(sessions).set({ lastSeenAt: now }).where(eq(sessions.id, id));
}

/** Ends the session server-side and audits the sign-out. */
export async function endSession(
  db: Database,
  session: { id: string; orgId: string },
  actor: AuditActor,
  now: number,
): Promise<void> {
  await db.batch([
    db.update(sessions).set({ revokedAt: now }).where(eq(sessions.id, session.id)),
    auditQuery(db, {
      orgId: session.orgId,
      actor,
      action: "session.sign_out",
      targetType: "session",
      targetId: session.id,
      now,
    }),
  ]);
}
