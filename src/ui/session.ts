/**
 * The dashboard's side of sessions (`src/sessions/`): who is signed in, sign-in pages' CSRF, and
 * the middleware that sends a request without a live session to the sign-in page. A person
 * behind Cloudflare Access gets a session on their first page without signing in. CSRF: every
 * form carries a token derived from the session secret (synchronizer token without storage); the
 * sign-in form, which has no session yet, uses a double-submit cookie.
 */
import type { Context, MiddlewareHandler } from "hono";
import { getCookie, setCookie } from "hono/cookie";
import { type OrganizationAction, organizationRefusal } from "../authz/model.ts";
import type { PersonPrincipal } from "../authz/principal.ts";
import { may } from "../authz/service.ts";
import type { AppEnv } from "../env.ts";
import { ApiError } from "../errors.ts";
import { randomBase64Url, sha256Hex, timingSafeEqualString } from "../lib/crypto.ts";
import { browserIdentity, isSecureCookie, setSessionCookie } from "../sessions/http.ts";
import { SESSION_COOKIE, sessionSettings } from "../sessions/model.ts";
import { startSession } from "../sessions/service.ts";
import { LAST_USED_RESOLUTION_MS } from "../tokens/model.ts";
import { touchToken } from "../tokens/queries.ts";

export const LOGIN_CSRF_COOKIE = "outpost_login_csrf";
export const CSRF_FIELD = "_csrf";

/** Who is signed in to the dashboard, and the token every form of the session carries. */
export type UiSession = {
  id: string;
  orgId: string;
  method: "token" | "sso" | "access";
  principal: PersonPrincipal;
  csrf: string;
};

export type UiEnv = {
  Bindings: Env;
  Variables: AppEnv["Variables"] & { session: UiSession };
};

function csrfFor(secret: string): Promise<string> {
  return sha256Hex(`outpost-ui-csrf:${secret}`);
}

function recordTokenUse<E extends AppEnv>(
  c: Context<E>,
  tokenId: string,
  lastUsedAt: number | null,
) {
  const now = c.var.deps.now();
  if (lastUsedAt === null || lastUsedAt < now - LAST_USED_RESOLUTION_MS) {
    c.executionCtx.waitUntil(
      touchToken(c.var.db, "org", tokenId, now, LAST_USED_RESOLUTION_MS).catch((err: unknown) => {
        console.error(
          JSON.stringify({ level: "warn", msg: "last_used_at update failed", err: String(err) }),
        );
      }),
    );
  }
}

/**
 * The dashboard session of the request, or null without one. A person Cloudflare Access let
 * through gets a session started here (and its cookie), so forms have their CSRF token.
 */
export async function currentSession<E extends AppEnv>(c: Context<E>): Promise<UiSession | null> {
  const identity = await browserIdentity(c, c.var.deps.now());
  if (!identity?.ok) {
    return null;
  }
  const { principal, session } = identity.value;
  if (session) {
    const secret = getCookie(c, SESSION_COOKIE) ?? "";
    if (principal.kind === "org") {
      // Using the dashboard is using the token: record it like the API does.
      recordTokenUse(c, principal.tokenId, session.tokenLastUsedAt);
    }
    return {
      id: session.id,
      orgId: session.orgId,
      method: session.method,
      principal,
      csrf: await csrfFor(secret),
    };
  }
  if (principal.kind !== "user") {
    return null;
  }
  const settings = sessionSettings(c.env);
  const started = await startSession(
    c.var.db,
    { kind: "user", orgId: principal.orgId, userId: principal.userId, method: "access" },
    settings,
    c.var.deps.now(),
  );
  setSessionCookie(c, started.secret, settings);
  return {
    id: started.id,
    orgId: principal.orgId,
    method: "access",
    principal,
    csrf: await csrfFor(started.secret),
  };
}

/**
 * Middleware: resolves the session. Without a live one a page request is sent to the sign-in
 * page and anything else answers 401; with one, `session` and `principal` are set.
 */
export function requireSession(): MiddlewareHandler<UiEnv> {
  return async function session(c, next) {
    const found = await currentSession(c);
    if (!found) {
      if (c.req.method === "GET" && !c.req.path.endsWith(".json")) {
        // The query comes back too: terraform login's authorization request lives in it.
        const back = new URL(c.req.url);
        const next = `${back.pathname}${back.search}`;
        return c.redirect(`/ui/login?next=${encodeURIComponent(next)}`, 303);
      }
      throw new ApiError("UNAUTHORIZED", "sign in again: the session has ended");
    }
    c.set("session", found);
    c.set("principal", found.principal);
    await next();
  };
}

/** Middleware: 403 unless `may` allows the organization action (the same rule as the API). */
export function requireUiPermission(action: OrganizationAction): MiddlewareHandler<UiEnv> {
  return async function uiPermission(c, next) {
    const { principal } = c.var.session;
    const resource = { type: "organization" as const, orgId: principal.orgId };
    if ((await may(c.var.db, principal, action, resource)) !== "allow") {
      throw new ApiError("FORBIDDEN", organizationRefusal(action));
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
  setCookie(c, LOGIN_CSRF_COOKIE, value, {
    httpOnly: true,
    sameSite: "Strict",
    secure: isSecureCookie(c),
    path: "/ui",
    maxAge: 3600,
  });
  return value;
}

/** Throws 403 unless the sign-in form's token matches its cookie. */
export function checkLoginCsrf(c: Context, submitted: unknown): void {
  const cookie = getCookie(c, LOGIN_CSRF_COOKIE);
  if (!cookie || typeof submitted !== "string" || !timingSafeEqualString(submitted, cookie)) {
    throw new ApiError("FORBIDDEN", "the sign-in form is missing its CSRF token; reload");
  }
}
