/**
 * Authentication and role checks. Every credential is an `op_<kind>_…` token; which kinds a route
 * accepts and which org role it needs are declared where the route is.
 */
import type { Context, MiddlewareHandler } from "hono";
import type { AppEnv } from "../env.ts";
import { ApiError } from "../errors.ts";
import { timingSafeEqualString } from "../lib/crypto.ts";
import {
  hashToken,
  LAST_USED_RESOLUTION_MS,
  type Principal,
  type Role,
  roleAtLeast,
  type TokenKind,
  tokenKind,
} from "../tokens/model.ts";
import { findTokenByHash, type TokenRecord, touchToken } from "../tokens/queries.ts";

export type AuthOptions = {
  /** Token kinds this route accepts. */
  kinds: readonly TokenKind[];
  /** Minimum org role, for org tokens. */
  role?: Role;
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

function toPrincipal(kind: TokenKind, record: TokenRecord): Principal {
  if (kind === "org" && record.role) {
    return { kind, orgId: record.orgId, tokenId: record.id, role: record.role };
  }
  if (kind === "agent" && record.poolId) {
    return {
      kind,
      orgId: record.orgId,
      tokenId: record.id,
      poolId: record.poolId,
      chainId: record.chainId ?? record.id,
    };
  }
  if (kind === "run" && record.runId && record.workspaceId && record.jobId) {
    return {
      kind,
      orgId: record.orgId,
      tokenId: record.id,
      runId: record.runId,
      workspaceId: record.workspaceId,
      jobId: record.jobId,
    };
  }
  throw new Error(`token ${record.id} of kind ${kind} is missing its scope`);
}

/**
 * Resolves a token secret to its principal: 401 UNAUTHORIZED for anything unknown (or a run
 * token whose lease was never started), 401 TOKEN_REVOKED for a revoked token (a run token is
 * revoked the moment its job ends), 401 TOKEN_EXPIRED for an agent token from an OIDC exchange
 * past its expiry. Records `last_used_at` at most once a minute, after the
 * response, so the check adds no write to the request path.
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
  // Only agent tokens issued by OIDC exchange expire. A distinct code, so such an agent logs in
  // again with a fresh OIDC token instead of exiting as it does for a revoked token.
  if (record.expiresAt != null && record.expiresAt <= now) {
    throw new ApiError(
      "TOKEN_EXPIRED",
      `this token expired at ${new Date(record.expiresAt).toISOString()}; exchange an OIDC token for a new one`,
    );
  }
  // A run token lives with its lease: usable from the agent's start acknowledgement until the
  // job ends. A lease that was never started (and may have gone back to the queue) grants nothing.
  if (kind === "run" && (record.startedAt ?? null) === null) {
    throw new ApiError(
      "UNAUTHORIZED",
      "this run token's job has not been started; acknowledge the lease first",
    );
  }
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
  return toPrincipal(kind, record);
}

/**
 * Middleware: authenticates the request and, for org tokens, checks the role (403 FORBIDDEN).
 * @example app.openapi(createRoute({ middleware: [requireAuth({ kinds: ["org"], role: "owner" })] }), …)
 */
export function requireAuth(options: AuthOptions): MiddlewareHandler<AppEnv> {
  return async function auth(c, next) {
    const secret = credentialFromHeader(c.req.header("authorization"), options.allowBasic ?? false);
    const principal = await authenticate(c, secret, options.kinds, options.recordUse ?? true);
    if (options.role && principal.kind === "org" && !roleAtLeast(principal.role, options.role)) {
      throw new ApiError("FORBIDDEN", `this action needs the ${options.role} role`);
    }
    c.set("principal", principal);
    await next();
  };
}

/** Shorthand for user routes: an org token with at least `role`. */
export function requireRole(role: Role): MiddlewareHandler<AppEnv> {
  return requireAuth({ kinds: ["org"], role });
}

/** The org principal of a route guarded by {@link requireRole}. */
export function orgPrincipal(c: Context<AppEnv>): Extract<Principal, { kind: "org" }> {
  const principal = c.get("principal");
  if (principal?.kind !== "org") {
    throw new Error("orgPrincipal used on a route without requireRole");
  }
  return principal;
}
