/**
 * Sessions at the HTTP edge: the cookie (HttpOnly, SameSite=Lax, Secure but on loopback http, path `/`), and
 * the browser credentials a request may carry instead of a bearer token: a session cookie, or a
 * Cloudflare Access assertion. The API accepts either only from this site's own pages (the
 * browser's `Sec-Fetch-Site`, else `Origin`), so nothing cross-site can act with them.
 */

import { ok } from "@outpost/common";
import type { Context } from "hono";
import { deleteCookie, getCookie, setCookie } from "hono/cookie";
import { ACCESS_HEADER, accessSettings } from "../access/model.ts";
import { accessPrincipal } from "../access/service.ts";
import type { PersonPrincipal } from "../authz/principal.ts";
import type { AppEnv } from "../env.ts";
import { type Outcome, refuse } from "../lib/reason.ts";
import { SESSION_COOKIE, type SessionSettings, sessionSettings } from "./model.ts";
import { findSession, type LiveSession, touchSession } from "./service.ts";

const LOOPBACK_HOSTS = new Set(["localhost", "127.0.0.1", "[::1]"]);

/**
 * Whether cookies are marked Secure: always, but on plain http to a loopback address (local
 * development and tests), where the browser would drop a Secure cookie.
 */
export function isSecureCookie(c: Context): boolean {
  const url = new URL(c.req.url);
  return url.protocol === "https:" || !LOOPBACK_HOSTS.has(url.hostname);
}

/** Sets the session cookie, for as long as the session can live at most. */
export function setSessionCookie(c: Context, secret: string, settings: SessionSettings): void {
  setCookie(c, SESSION_COOKIE, secret, {
    httpOnly: true,
    sameSite: "Lax",
    secure: isSecureCookie(c),
    path: "/",
    maxAge: Math.floor(settings.maxAgeMs / 1000),
  });
}

/** Removes the session cookie (and one an older version set on `/ui`). */
export function clearSessionCookie(c: Context): void {
  deleteCookie(c, SESSION_COOKIE, { path: "/", secure: isSecureCookie(c) });
  deleteCookie(c, SESSION_COOKIE, { path: "/ui", secure: isSecureCookie(c) });
}

const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

/**
 * Whether the request comes from this site's own pages: `Sec-Fetch-Site: same-origin` (or
 * `none`, a typed address, for reads), else an `Origin` equal to this origin. A request with
 * neither header is not taken for same-origin.
 */
export function isSameOrigin(c: Context): boolean {
  const site = c.req.header("sec-fetch-site");
  if (site !== undefined) {
    return site === "same-origin" || (site === "none" && SAFE_METHODS.has(c.req.method));
  }
  const origin = c.req.header("origin");
  return origin !== undefined && origin === new URL(c.req.url).origin;
}

/** Whether the request carries a browser credential (a session cookie or an Access assertion). */
export function hasBrowserCredential(c: Context): boolean {
  return getCookie(c, SESSION_COOKIE) !== undefined || c.req.header(ACCESS_HEADER) !== undefined;
}

/** What a browser credential resolved to. */
export type BrowserIdentity = { principal: PersonPrincipal; session: LiveSession | null };

/**
 * The person a request's browser credentials name: its live session, else the user of a valid
 * Access assertion; null when the request carries neither; a refusal sentence when it carries
 * one that does not hold (its sentence says why). Records the session as seen (after the answer, once a minute).
 */
export async function browserIdentity<E extends AppEnv>(
  c: Context<E>,
  now: number,
): Promise<Outcome<BrowserIdentity, "rejected" | "revoked" | "unavailable"> | null> {
  const secret = getCookie(c, SESSION_COOKIE);
  const settings = sessionSettings(c.env);
  const access = accessSettings(c.env);
  const assertion = c.req.header(ACCESS_HEADER);
  const session = secret ? await findSession(c.var.db, secret, settings, now) : null;
  const fromAccess =
    access && assertion && session?.method !== "sso" && session?.method !== "token"
      ? await accessPrincipal(c.var.db, access, assertion, now)
      : null;
  // A session Access started lives only as long as Access vouches for the same person, and
  // takes their groups of this request.
  const accessVouches =
    fromAccess?.ok === true &&
    session?.principal.kind === "user" &&
    fromAccess.value.userId === session.principal.userId;
  if (session && (session.method !== "access" || accessVouches)) {
    if (session.isStale) {
      c.executionCtx.waitUntil(touchSession(c.var.db, session.id, now).catch(logFailure));
    }
    const principal = accessVouches && fromAccess?.ok ? fromAccess.value : session.principal;
    return ok({ principal, session });
  }
  if (fromAccess) {
    return fromAccess.ok ? ok({ principal: fromAccess.value, session: null }) : fromAccess;
  }
  return secret ? refuse("revoked", "sign in again: the session has ended") : null;
}

function logFailure(err: unknown): void {
  console.error(JSON.stringify({ level: "warn", msg: "session touch failed", err: String(err) }));
}
