/**
 * Authentication. A request names its caller with a token (`Authorization: Bearer op_<kind>_…`,
 * or basic auth where allowed) or, on routes people use, with a browser credential from this
 * site's own pages (a session cookie, a Cloudflare Access assertion). Which kinds a route accepts
 * is declared where the route is; what a person may do is `may`'s (`src/authz/`), asked by
 * {@link requirePermission} for organization actions and by the route for workspace ones.
 */
import type { Context, MiddlewareHandler } from "hono";
import { type OrganizationAction, organizationRefusal } from "../authz/model.ts";
import {
  isPerson,
  PERSON_KINDS,
  type PersonPrincipal,
  type Principal,
} from "../authz/principal.ts";
import { may } from "../authz/service.ts";
import type { AppEnv } from "../env.ts";
import { ApiError } from "../errors.ts";
import { timingSafeEqualString } from "../lib/crypto.ts";
import { browserIdentity, hasBrowserCredential, isSameOrigin } from "../sessions/http.ts";
import { loadTeamPrincipal } from "../teams/service.ts";
import { hashToken, LAST_USED_RESOLUTION_MS, type TokenKind, tokenKind } from "../tokens/model.ts";
import { findTokenByHash, type TokenRecord, touchToken } from "../tokens/queries.ts";
import { loadUserPrincipal } from "../users/service.ts";

export type AuthOptions = {
  /** Token kinds this route accepts; with `user`, a browser credential is accepted too. */
  kinds: readonly TokenKind[];
  /** The organization action the caller must be allowed (403 otherwise). */
  permission?: OrganizationAction;
  /** Also accept HTTP basic auth with the token as password (Terraform's http backend). */
  allowBasic?: boolean;
  /**
   * Whether this request updates the token's `last_used_at` (default true). False for the agent's
   * liveness calls (polls, heartbeats): the pool records them as the agent's last contact, so an
   * idle fleet writes nothing to D1 and the token listing reads its last use from the pool.
   */
  recordUse?: boolean;
};

/**
 * Extracts the token from `Authorization: Bearer <token>` (or `Basic base64(user:token)` when
 * allowed). Throws 401 for a missing or malformed header.
 */
export function credentialFromHeader(header: string | undefined, allowBasic: boolean): string {
  if (!header) {
    throw new ApiError("UNAUTHORIZED", "missing Authorization header", {
      headers: { "WWW-Authenticate": allowBasic ? 'Basic realm="outpost"' : "Bearer" },
    });
  }
  const [scheme, value, ...rest] = header.trim().split(/\s+/);
  if (!scheme || !value || rest.length > 0) {
    throw new ApiError("UNAUTHORIZED", "malformed Authorization header");
  }
  if (scheme.toLowerCase() === "bearer") {
    return value;
  }
  if (allowBasic && scheme.toLowerCase() === "basic") {
    let decoded: string;
    try {
      decoded = atob(value);
    } catch {
      throw new ApiError("UNAUTHORIZED", "malformed basic credentials");
    }
    const colon = decoded.indexOf(":");
    if (colon < 0) {
      throw new ApiError("UNAUTHORIZED", "malformed basic credentials");
    }
    return decoded.slice(colon + 1);
  }
  throw new ApiError("UNAUTHORIZED", `unsupported authorization scheme ${JSON.stringify(scheme)}`);
}

function missingScope(kind: TokenKind, record: TokenRecord): never {
  throw new Error(`token ${record.id} of kind ${kind} is missing its scope`);
}

/** The principal of a verified token record; a person's token reads its owner as it is now. */
async function toPrincipal(
  c: Context<AppEnv>,
  kind: TokenKind,
  record: TokenRecord,
): Promise<Principal> {
  switch (kind) {
    case "org":
      return record.role
        ? {
            kind,
            orgId: record.orgId,
            tokenId: record.id,
            role: record.role,
            name: record.description ?? record.id,
            via: "org-token",
          }
        : missingScope(kind, record);
    case "agent":
      return record.poolId
        ? {
            kind,
            orgId: record.orgId,
            tokenId: record.id,
            poolId: record.poolId,
            chainId: record.chainId ?? record.id,
          }
        : missingScope(kind, record);
    case "run":
      return record.runId && record.workspaceId && record.jobId
        ? {
            kind,
            orgId: record.orgId,
            tokenId: record.id,
            runId: record.runId,
            workspaceId: record.workspaceId,
            jobId: record.jobId,
          }
        : missingScope(kind, record);
    case "user": {
      const user = await loadUserPrincipal(c.var.db, record.userId ?? "", "user-token");
      if (!user.ok) {
        throw new ApiError("TOKEN_REVOKED", "this token's user is disabled");
      }
      return user.value;
    }
    case "team": {
      const team = await loadTeamPrincipal(c.var.db, record.teamId ?? "", record.id);
      return team ?? missingScope(kind, record);
    }
  }
}

function expiredMessage(kind: TokenKind, expiresAt: number): string {
  const at = new Date(expiresAt).toISOString();
  return kind === "agent"
    ? `this token expired at ${at}; exchange an OIDC token for a new one`
    : `this token expired at ${at}; create a new one`;
}

/**
 * Resolves a token secret to its principal: 401 UNAUTHORIZED for anything unknown (or a run
 * token whose lease was never started), 401 TOKEN_REVOKED for a revoked token (a run token is
 * revoked the moment its job ends; a personal token with its disabled user), 401 TOKEN_EXPIRED
 * for a token past its expiry. Records `last_used_at` at most once a minute, after the response,
 * so the check adds no write to the request path.
 */
export async function authenticate(
  c: Context<AppEnv>,
  secret: string,
  kinds: readonly TokenKind[],
  recordUse = true,
): Promise<Principal> {
  const kind = tokenKind(secret);
  if (!kind) {
    throw new ApiError("UNAUTHORIZED", "not an Outpost token");
  }
  if (!kinds.includes(kind)) {
    throw new ApiError("UNAUTHORIZED", `${kind} tokens are not accepted here`);
  }
  const hash = await hashToken(secret);
  const record = await findTokenByHash(c.var.db, kind, hash);
  // The lookup is by hash; the comparison below keeps the final check constant-time as well.
  if (!record || !timingSafeEqualString(record.tokenHash, hash)) {
    throw new ApiError("UNAUTHORIZED", "unknown token");
  }
  if (record.revokedAt !== null) {
    throw new ApiError("TOKEN_REVOKED", "this token has been revoked");
  }
  const now = c.var.deps.now();
  // A distinct code, so an OIDC agent logs in again with a fresh OIDC token instead of exiting
  // as it does for a revoked token.
  if (record.expiresAt != null && record.expiresAt <= now) {
    throw new ApiError("TOKEN_EXPIRED", expiredMessage(kind, record.expiresAt));
  }
  // A run token lives with its lease: usable from the agent's start acknowledgement until the
  // job ends. A lease that was never started (and may have gone back to the queue) grants nothing.
  if (kind === "run" && (record.startedAt ?? null) === null) {
    throw new ApiError(
      "UNAUTHORIZED",
      "this run token's job has not been started; acknowledge the lease first",
    );
  }
  const principal = await toPrincipal(c, kind, record);
  if (
    recordUse &&
    record.lastUsedAt !== undefined &&
    (record.lastUsedAt === null || record.lastUsedAt < now - LAST_USED_RESOLUTION_MS)
  ) {
    c.executionCtx.waitUntil(
      touchToken(c.var.db, kind, record.id, now, LAST_USED_RESOLUTION_MS).catch((err: unknown) => {
        console.error(
          JSON.stringify({ level: "warn", msg: "last_used_at update failed", err: String(err) }),
        );
      }),
    );
  }
  return principal;
}

/**
 * A person's browser credential, on a route that takes person tokens and has no Authorization
 * header: accepted only from this site's own pages. Null when the request carries none.
 */
async function fromBrowser(c: Context<AppEnv>): Promise<PersonPrincipal | null> {
  if (!hasBrowserCredential(c)) {
    return null;
  }
  if (!isSameOrigin(c)) {
    throw new ApiError(
      "UNAUTHORIZED",
      "a browser session is accepted only from this site's own pages; send a token in the Authorization header",
    );
  }
  const identity = await browserIdentity(c, c.var.deps.now());
  if (identity === null) {
    return null;
  }
  if (!identity.ok) {
    throw new ApiError("UNAUTHORIZED", identity.reason.message);
  }
  return identity.value.principal;
}

/**
 * Middleware: authenticates the request and, with `permission`, asks `may` for it (403
 * FORBIDDEN). Sets `principal`.
 * @example createRoute({ middleware: [requirePermission("pools.manage")] })
 */
export function requireAuth(options: AuthOptions): MiddlewareHandler<AppEnv> {
  return async function auth(c, next) {
    const header = c.req.header("authorization");
    const acceptsPeople = options.kinds.includes("user");
    const browser = header === undefined && acceptsPeople ? await fromBrowser(c) : null;
    const principal =
      browser ??
      (await authenticate(
        c,
        credentialFromHeader(header, options.allowBasic ?? false),
        options.kinds,
        options.recordUse ?? true,
      ));
    if (options.permission) {
      const resource = { type: "organization" as const, orgId: principal.orgId };
      if ((await may(c.var.db, principal, options.permission, resource)) !== "allow") {
        throw new ApiError("FORBIDDEN", organizationRefusal(options.permission));
      }
    }
    c.set("principal", principal);
    await next();
  };
}

/** Routes for people: any person's credential (org, team or personal token, session, Access). */
export function requirePerson(): MiddlewareHandler<AppEnv> {
  return requireAuth({ kinds: PERSON_KINDS });
}

/** Routes for people that need an organization action: `may` decides (403 otherwise). */
export function requirePermission(permission: OrganizationAction): MiddlewareHandler<AppEnv> {
  return requireAuth({ kinds: PERSON_KINDS, permission });
}

/** The person principal of a route guarded by {@link requirePerson} or {@link requirePermission}. */
export function personOf(c: Context<AppEnv>): PersonPrincipal {
  const principal = c.get("principal");
  if (!principal || !isPerson(principal)) {
    throw new Error("personOf used on a route that does not require a person");
  }
  return principal;
}
