/**
 * Dashboard sessions: an org token is exchanged once for a random cookie secret whose SHA-256 is
 * stored in `sessions`. A session counts only while it is unexpired, not signed out, and its org
 * token is not revoked (checked on every request by a join), so revoking the token ends it.
 * CSRF: every form carries a token derived from the session secret (synchronizer token without
 * storage); the sign-in form, which has no session yet, uses a double-submit cookie.
 */

import { newId } from "@outpost/common";
import { and, eq, gt, isNotNull, isNull, lt, or } from "drizzle-orm";
import type { Context, MiddlewareHandler } from "hono";
import { deleteCookie, getCookie, setCookie } from "hono/cookie";
import type { Database } from "../db/client.ts";
import { orgTokens, sessions } from "../db/schema.ts";
import type { AppEnv } from "../env.ts";
import { ApiError } from "../errors.ts";
import { randomBase64Url, sha256Hex, timingSafeEqualString } from "../lib/crypto.ts";
import { LAST_USED_RESOLUTION_MS, type Role, roleAtLeast } from "../tokens/model.ts";
import { touchToken } from "../tokens/queries.ts";

/** A session lasts this long from sign-in, whatever happens; then the token is asked again. */
export const SESSION_TTL_MS = 12 * 60 * 60 * 1000;
export const SESSION_COOKIE = "outpost_session";
export const LOGIN_CSRF_COOKIE = "outpost_login_csrf";
export const CSRF_FIELD = "_csrf";

export type UiSession = {
  id: string;
  orgId: string;
  tokenId: string;
  role: Role;
  tokenDescription: string;
  expiresAt: number;
  tokenLastUsedAt: number | null;
  /** The token every form of this session carries. */
  csrf: string;
};

export type UiEnv = {
  Bindings: Env;
  Variables: AppEnv["Variables"] & { session: UiSession };
};

function isLoopback(c: Context): boolean {
  const host = new URL(c.req.url).hostname;
  return host === "localhost" || host === "127.0.0.1" || host === "[::1]";
}

/** Cookie attributes: HttpOnly, SameSite=Strict, path /ui, Secure except on loopback http. */
function cookieOptions(c: Context, maxAgeSeconds: number) {
  return {
    httpOnly: true,
    sameSite: "Strict" as const,
    secure: !isLoopback(c),
    path: "/ui",
    maxAge: maxAgeSeconds,
  };
}

function csrfFor(secret: string): Promise<string> {
  return sha256Hex(`outpost-ui-csrf:${secret}`);
}

/** Starts a session for an authenticated org token and sets its cookie. */
export async function startSession(
  c: Context,
  db: Database,
  principal: { orgId: string; tokenId: string },
): Promise<void> {
  const secret = randomBase64Url(32);
  const now = Date.now();
  await db.batch([
    db.insert(sessions).values({
      id: newId("session"),
      orgId: principal.orgId,
      tokenId: principal.tokenId,
      secretHash: await sha256Hex(secret),
      createdAt: now,
      expiresAt: now + SESSION_TTL_MS,
      revokedAt: null,
    }),
    // Housekeeping where it is cheap: this token's sessions that can never be used again.
    db
      .delete(sessions)
      .where(
        and(
          eq(sessions.tokenId, principal.tokenId),
          or(lt(sessions.expiresAt, now), isNotNull(sessions.revokedAt)),
        ),
      ),
  ]);
  setCookie(c, SESSION_COOKIE, secret, cookieOptions(c, SESSION_TTL_MS / 1000));
}

/** The live session of a cookie secret, or null when unknown, expired, signed out or revoked. */
export async function findSession(db: Database, secret: string): Promise<UiSession | null> {
  const now = Date.now();
  const [row] = await db
    .select({
      id: sessions.id,
      orgId: sessions.orgId,
      tokenId: sessions.tokenId,
      expiresAt: sessions.expiresAt,
      role: orgTokens.role,
      tokenDescription: orgTokens.description,
      tokenLastUsedAt: orgTokens.lastUsedAt,
    })
    .from(sessions)
    .innerJoin(orgTokens, eq(orgTokens.id, sessions.tokenId))
    .where(
      and(
        eq(sessions.secretHash, await sha256Hex(secret)),
        isNull(sessions.revokedAt),
        gt(sessions.expiresAt, now),
        isNull(orgTokens.revokedAt),
      ),
    )
    .limit(1);
  if (!row) {
    return null;
  }
  const { tokenLastUsedAt, ...session } = row;
  return { ...session, tokenLastUsedAt, csrf: await csrfFor(secret) };
}

/** Signs the session out: the row is revoked (not just the cookie cleared) and the cookie goes. */
export async function endSession(c: Context<UiEnv>): Promise<void> {
  await c.var.db
    .update(sessions)
    .set({ revokedAt: Date.now() })
    .where(eq(sessions.id, c.var.session.id));
  deleteCookie(c, SESSION_COOKIE, { path: "/ui", secure: !isLoopback(c) });
}

/**
 * Middleware: resolves the session cookie. Without a live session a page request is sent to the
 * sign-in page and anything else answers 401; with one, `session` and an org `principal` are set.
 */
export function requireSession(): MiddlewareHandler<UiEnv> {
  return async function session(c, next) {
    const secret = getCookie(c, SESSION_COOKIE);
    const found = secret ? await findSession(c.var.db, secret) : null;
    if (!found) {
      if (c.req.method === "GET" && !c.req.path.endsWith(".json")) {
        const back = new URL(c.req.url);
        return c.redirect(`/ui/login?next=${encodeURIComponent(back.pathname)}`, 303);
      }
      throw new ApiError("UNAUTHORIZED", "sign in again: the session has ended");
    }
    c.set("session", found);
    // Using the dashboard is using the token: record it like the API does, at most once a minute.
    const now = Date.now();
    if (found.tokenLastUsedAt === null || found.tokenLastUsedAt < now - LAST_USED_RESOLUTION_MS) {
      c.executionCtx.waitUntil(
        touchToken(c.var.db, "org", found.tokenId, now, LAST_USED_RESOLUTION_MS).catch(
          (err: unknown) => {
            console.error(
              JSON.stringify({
                level: "warn",
                msg: "last_used_at update failed",
                err: String(err),
              }),
            );
          },
        ),
      );
    }
    c.set("principal", {
      kind: "org",
      orgId: found.orgId,
      tokenId: found.tokenId,
      role: found.role,
    });
    await next();
  };
}

/** Middleware: 403 unless the session's token has at least `role` (the same rule as the API). */
export function requireUiRole(role: Role): MiddlewareHandler<UiEnv> {
  return async function uiRole(c, next) {
    if (!roleAtLeast(c.var.session.role, role)) {
      throw new ApiError("FORBIDDEN", `this action needs the ${role} role`);
    }
    await next();
  };
}

/** Throws 403 unless the submitted form token matches the session's. */
export function checkCsrf(session: UiSession, submitted: unknown): void {
  if (typeof submitted !== "string" || !timingSafeEqualString(submitted, session.csrf)) {
    throw new ApiError("FORBIDDEN", "the form is missing its CSRF token or it is stale; reload");
  }
}

/** A fresh double-submit token for the sign-in form, set as a short-lived cookie. */
export function issueLoginCsrf(c: Context): string {
  const value = randomBase64Url(24);
  setCookie(c, LOGIN_CSRF_COOKIE, value, cookieOptions(c, 3600));
  return value;
}

/** Throws 403 unless the sign-in form's token matches its cookie. */
export function checkLoginCsrf(c: Context, submitted: unknown): void {
  const cookie = getCookie(c, LOGIN_CSRF_COOKIE);
  if (!cookie || typeof submitted !== "string" || !timingSafeEqualString(submitted, cookie)) {
    throw new ApiError("FORBIDDEN", "the sign-in form is missing its CSRF token; reload");
  }
}
