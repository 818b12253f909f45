/**
 * `POST /agent/v1/oidc/exchange`, the service: an OIDC token that a trust of the pool accepts
 * becomes a short-lived agent token of that pool. A renewing agent presents its current agent
 * token (expired or not, never revoked) to continue its chain: the new token keeps the chain id
 * the pool bound the agent's registration to, and the predecessor dies a minute later.
 */

import { newId, ok } from "@outpost/common";
import { and, eq, gt, sql } from "drizzle-orm";
import type { JWTPayload } from "jose";
import { auditQuery, auditWhereQuery } from "../audit/service.ts";
import type { Database } from "../db/client.ts";
import { auditEvents } from "../db/schema.ts";
import type { Deps } from "../deps.ts";
import { type Outcome, type Reason, refuse } from "../lib/reason.ts";
import { DEFAULT_MAX_TOKEN_EXPIRATION_MS } from "../pools/model.ts";
import { generateToken, hashToken, tokenKind } from "../tokens/model.ts";
import { findTokenByHash } from "../tokens/queries.ts";
import { issuerUrl } from "./issuer.ts";
import {
  claimTokenUse,
  countRecentExchanges,
  deleteExpiredIssuedTokensQuery,
  deleteExpiredTokenUsesQuery,
  insertIssuedTokenQuery,
  poolById,
  shortenPredecessorQuery,
  trustsOfPool,
} from "./queries.ts";
import { allowsLoopbackIssuers } from "./trust-service.ts";
import { CLOCK_SKEW_SECONDS, type Rejection, reject, verifyForTrusts } from "./verify.ts";

/** How long a renewed token's predecessor still works, for requests already on their way. */
export const PREDECESSOR_GRACE_MS = 60_000;
/** Agent tokens one subject may obtain from one pool per {@link EXCHANGE_WINDOW_MS}. */
export const MAX_EXCHANGES_PER_SUBJECT = 30;
const EXCHANGE_WINDOW_MS = 60_000;
/** Refused exchanges recorded in a pool's audit log per {@link EXCHANGE_WINDOW_MS}. */
export const MAX_REFUSALS_AUDITED = 30;
const REFUSED_ACTION = "agent_token.oidc_refused";
/** Expired exchange-issued tokens are deleted from the pool's listing history after this. */
const ISSUED_TOKEN_HISTORY_MS = 7 * 86_400_000;

export type ExchangeInput = {
  poolId: string;
  oidcToken: string;
  tokenExpirationSeconds: number;
  /** The agent token being renewed, if any (from the Authorization header). */
  previousToken: string | null;
  /** The request's id: a refusal names it, and the pool's audit event of the refusal keeps it. */
  requestId: string;
};

/** The claims of an OIDC token a trust accepted. */
type VerifiedClaims = JWTPayload & { iss: string };

export type Exchanged = { token: string; tokenId: string; poolId: string; expiresAt: string };

/** The chain a renewal continues, or a refusal when that chain was revoked. */
async function chainOf(
  db: Database,
  previous: string | null,
  match: { poolId: string; issuer: string; subject: string | null },
): Promise<Outcome<{ chainId: string; predecessorId: string } | null, "revoked">> {
  if (previous === null || tokenKind(previous) !== "agent") {
    return ok(null);
  }
  const record = await findTokenByHash(db, "agent", await hashToken(previous));
  const same =
    record &&
    record.poolId === match.poolId &&
    record.oidcIssuer === match.issuer &&
    (record.oidcSubject ?? null) === match.subject;
  // Any other token starts a new chain: the OIDC token alone is what grants access.
  if (!record || !same) {
    return ok(null);
  }
  if (record.revokedAt !== null) {
    return refuse(
      "revoked",
      "this agent's token has been revoked; start a new agent to log in again",
    );
  }
  return ok({ chainId: record.chainId ?? record.id, predecessorId: record.id });
}

/**
 * The refusal an unauthenticated caller sees: only that the token was rejected, with the request
 * id. Why (the expected audience, a trust's id and pattern, whether the pool trusts the issuer)
 * goes to the pool's audit log for its owners, never to the caller.
 */
function rejection(requestId: string): { ok: false; reason: Reason<"rejected"> } {
  return refuse(
    "rejected",
    `OIDC token rejected; the pool's owners can see why in its audit log (request ${requestId})`,
  );
}

/**
 * Records why the exchange of `input` was refused in the pool's audit log, then refuses it. Anyone
 * who knows a pool id can be refused, so at most {@link MAX_REFUSALS_AUDITED} refusals a minute
 * are recorded per pool: a flood of bad tokens cannot grow the audit log without bound (the
 * refusals past the bound are still refused, only not recorded).
 */
async function rejected(
  deps: Deps,
  pool: { id: string; orgId: string },
  input: ExchangeInput,
  reason: Rejection,
): Promise<{ ok: false; reason: Reason<"rejected"> }> {
  const now = deps.now();
  await auditWhereQuery(
    deps.db,
    {
      orgId: pool.orgId,
      actor: { type: "agent", id: "oidc", name: "OIDC exchange (unauthenticated)" },
      action: REFUSED_ACTION,
      targetType: "pool",
      targetId: pool.id,
      data: { requestId: input.requestId, reason: reason.check, message: reason.message },
      now,
    },
    sql`(SELECT count(*) FROM ${auditEvents} WHERE ${and(
      eq(auditEvents.orgId, pool.orgId),
      eq(auditEvents.targetType, "pool"),
      eq(auditEvents.targetId, pool.id),
      gt(auditEvents.createdAt, now - EXCHANGE_WINDOW_MS),
      eq(auditEvents.action, REFUSED_ACTION),
    )}) < ${MAX_REFUSALS_AUDITED}`,
  );
  return rejection(input.requestId);
}

/** The trust of the pool that accepts `input`'s OIDC token, with its claims; refusals audited. */
async function verifyForPool(
  deps: Deps,
  pool: { id: string; orgId: string },
  input: ExchangeInput,
): Promise<Outcome<{ trust: { id: string }; claims: VerifiedClaims }, "rejected">> {
  const verified = await verifyForTrusts(input.oidcToken, await trustsOfPool(deps.db, pool.id), {
    allowLoopbackHttp: allowsLoopbackIssuers(deps.env),
    poolId: pool.id,
    now: deps.now(),
    ownIssuer: issuerUrl(deps.env),
    poolOrgId: pool.orgId,
  });
  return verified.ok ? ok(verified.value) : rejected(deps, pool, input, verified.reason);
}

/** Refuses a subject's exchange past {@link MAX_EXCHANGES_PER_SUBJECT} a minute in a pool. */
async function checkExchangeRate(
  db: Database,
  poolId: string,
  subject: string | null,
  now: number,
): Promise<Outcome<void, "over_limit">> {
  const recent = await countRecentExchanges(db, poolId, subject, now - EXCHANGE_WINDOW_MS);
  if (recent < MAX_EXCHANGES_PER_SUBJECT) {
    return ok(undefined);
  }
  return refuse(
    "over_limit",
    `too many exchanges for this subject in this pool (at most ${MAX_EXCHANGES_PER_SUBJECT} a minute); retry later`,
    { retryAfterSeconds: EXCHANGE_WINDOW_MS / 1000 },
  );
}

/** Records the OIDC token's use; false when it (its `jti`, or its hash) was already exchanged. */
async function claimOnce(
  db: Database,
  use: { chainId: string; poolId: string; claims: VerifiedClaims; oidcToken: string },
): Promise<boolean> {
  const { claims } = use;
  return claimTokenUse(db, {
    chainId: use.chainId,
    issuer: claims.iss,
    tokenKey:
      typeof claims.jti === "string"
        ? `jti:${claims.jti}`
        : `sha256:${await hashToken(use.oidcToken)}`,
    poolId: use.poolId,
    // Kept past exp by the clock skew, as long as the token could still be accepted.
    expiresAt: ((claims.exp ?? 0) + CLOCK_SKEW_SECONDS) * 1000,
  });
}

type Issue = {
  pool: { id: string; orgId: string };
  trust: { id: string };
  claims: VerifiedClaims;
  subject: string | null;
  id: string;
  tokenHash: string;
  chainId: string;
  predecessorId: string | null;
  expiresAt: number;
  now: number;
};

/** The writes of one exchange: the token, its predecessor's grace, history pruning, the audit. */
function issueQueries(db: Database, issue: Issue) {
  const { pool, trust, claims, subject, id, chainId, expiresAt, now } = issue;
  return [
    insertIssuedTokenQuery(db, {
      id,
      orgId: pool.orgId,
      poolId: pool.id,
      description: `OIDC: ${subject ?? claims.iss}`.slice(0, 200),
      tokenHash: issue.tokenHash,
      createdBy: trust.id,
      createdAt: now,
      lastUsedAt: null,
      revokedAt: null,
      expiresAt,
      oidcTrustId: trust.id,
      oidcIssuer: claims.iss,
      oidcSubject: subject,
      chainId,
    }),
    ...(issue.predecessorId
      ? [shortenPredecessorQuery(db, issue.predecessorId, now + PREDECESSOR_GRACE_MS)]
      : []),
    deleteExpiredIssuedTokensQuery(db, pool.id, now - ISSUED_TOKEN_HISTORY_MS),
    deleteExpiredTokenUsesQuery(db, now),
    auditQuery(db, {
      orgId: pool.orgId,
      actor: { type: "agent", id: trust.id, name: `OIDC trust ${trust.id} (${claims.iss})` },
      action: issue.predecessorId ? "agent_token.oidc_renew" : "agent_token.oidc_exchange",
      targetType: "agent_token",
      targetId: id,
      data: { poolId: pool.id, issuer: claims.iss, subject, chainId, expiresAt },
      now,
    }),
  ] as const;
}

/**
 * Verifies `oidcToken` against the pool's trusts and issues an agent token of the pool expiring
 * after the requested seconds, capped by the pool's maximum. Refused `rejected` with a sentence
 * that says nothing about why (an unknown pool looks like any refusal; the reason is audited in
 * the pool's organization), or `revoked` when the renewed chain was revoked.
 */
export async function exchangeOidcToken(
  deps: Deps,
  input: ExchangeInput,
): Promise<Outcome<Exchanged, "rejected" | "revoked" | "over_limit">> {
  const { db } = deps;
  const pool = await poolById(db, input.poolId);
  if (!pool) {
    return rejection(input.requestId);
  }
  const verified = await verifyForPool(deps, pool, input);
  if (!verified.ok) {
    return verified;
  }
  const { trust, claims } = verified.value;
  const subject = typeof claims.sub === "string" ? claims.sub : null;
  const now = deps.now();
  const limited = await checkExchangeRate(db, pool.id, subject, now);
  if (!limited.ok) {
    return limited;
  }
  const chain = await chainOf(db, input.previousToken, {
    poolId: pool.id,
    issuer: claims.iss,
    subject,
  });
  if (!chain.ok) {
    return chain;
  }
  const secret = generateToken("agent");
  const id = newId("agentToken");
  const chainId = chain.value?.chainId ?? id;
  if (!(await claimOnce(db, { chainId, poolId: pool.id, claims, oidcToken: input.oidcToken }))) {
    const replay = reject(
      "replayed_token",
      "the token was already exchanged; each OIDC token buys one agent token (exchange a fresh one)",
    );
    return rejected(deps, pool, input, replay.reason);
  }
  const maxMs = pool.maxTokenExpirationMs ?? DEFAULT_MAX_TOKEN_EXPIRATION_MS;
  const expiresAt = now + Math.min(input.tokenExpirationSeconds * 1000, maxMs);
  await db.batch(
    issueQueries(db, {
      pool,
      trust,
      claims,
      subject,
      id,
      tokenHash: await hashToken(secret),
      chainId,
      predecessorId: chain.value?.predecessorId ?? null,
      expiresAt,
      now,
    }),
  );
  return ok({
    token: secret,
    tokenId: id,
    poolId: pool.id,
    expiresAt: new Date(expiresAt).toISOString(),
  });
}
