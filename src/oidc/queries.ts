/** D1 access for OIDC trusts and the agent tokens exchanges issue. */
import { and, asc, count, eq, gt, isNotNull, isNull, lt, or } from "drizzle-orm";
import type { Database } from "../db/client.ts";
import { agentPools, agentTokens, oidcTokenUses, oidcTrusts } from "../db/schema.ts";
import type { TrustRow } from "./trust-model.ts";

/** The trusts of a pool of the org, oldest first. */
export function listTrustRows(db: Database, orgId: string, poolId: string): Promise<TrustRow[]> {
  return db
    .select()
    .from(oidcTrusts)
    .where(and(eq(oidcTrusts.orgId, orgId), eq(oidcTrusts.poolId, poolId)))
    .orderBy(asc(oidcTrusts.createdAt), asc(oidcTrusts.id));
}

/** The trusts of a pool, whatever its org: the exchange knows only the pool id. */
export function trustsOfPool(db: Database, poolId: string): Promise<TrustRow[]> {
  return db
    .select()
    .from(oidcTrusts)
    .where(eq(oidcTrusts.poolId, poolId))
    .orderBy(asc(oidcTrusts.createdAt), asc(oidcTrusts.id));
}

export async function countTrusts(db: Database, poolId: string): Promise<number> {
  const [row] = await db
    .select({ n: count() })
    .from(oidcTrusts)
    .where(eq(oidcTrusts.poolId, poolId));
  return row?.n ?? 0;
}

export function insertTrustQuery(db: Database, row: typeof oidcTrusts.$inferInsert) {
  return db.insert(oidcTrusts).values(row);
}

export function getTrust(db: Database, orgId: string, poolId: string, id: string) {
  return db.query.oidcTrusts.findFirst({
    where: and(eq(oidcTrusts.orgId, orgId), eq(oidcTrusts.poolId, poolId), eq(oidcTrusts.id, id)),
  });
}

export function deleteTrustQuery(db: Database, id: string) {
  return db.delete(oidcTrusts).where(eq(oidcTrusts.id, id));
}

/** Every trust of a pool (they cannot outlive it). */
export function deletePoolTrustsQuery(db: Database, poolId: string) {
  return db.delete(oidcTrusts).where(eq(oidcTrusts.poolId, poolId));
}

/** A pool by id alone, for the exchange, which is not scoped by an org token. */
export function poolById(db: Database, poolId: string) {
  return db.query.agentPools.findFirst({ where: eq(agentPools.id, poolId) });
}

/** Stores the agent token an exchange issued (its hash, never its secret). */
export function insertIssuedTokenQuery(db: Database, row: typeof agentTokens.$inferInsert) {
  return db.insert(agentTokens).values(row);
}

/**
 * The predecessor in a chain stays usable only for `graceMs` more (requests already on their
 * way), so a renewed agent holds one live token at a time.
 */
export function shortenPredecessorQuery(db: Database, id: string, until: number) {
  return db
    .update(agentTokens)
    .set({ expiresAt: until })
    .where(
      and(
        eq(agentTokens.id, id),
        isNull(agentTokens.revokedAt),
        or(isNull(agentTokens.expiresAt), gt(agentTokens.expiresAt, until)),
      ),
    );
}

/** Exchange-issued tokens of a pool that expired before `before`: history nobody can use. */
export function deleteExpiredIssuedTokensQuery(db: Database, poolId: string, before: number) {
  return db
    .delete(agentTokens)
    .where(
      and(
        eq(agentTokens.poolId, poolId),
        isNotNull(agentTokens.oidcTrustId),
        lt(agentTokens.expiresAt, before),
      ),
    );
}

/**
 * Records that the OIDC token `tokenKey` of `issuer` was accepted for renewal chain `chainId`
 * (until `expiresAt`); true when this is its first use or its use by the same chain (a renewal
 * before the platform rotated the token), false when another chain used it (a replay).
 */
export async function claimTokenUse(
  db: Database,
  use: { issuer: string; tokenKey: string; poolId: string; chainId: string; expiresAt: number },
): Promise<boolean> {
  const rows = await db
    .insert(oidcTokenUses)
    .values(use)
    .onConflictDoNothing()
    .returning({ issuer: oidcTokenUses.issuer });
  if (rows.length === 1) {
    return true;
  }
  const [earlier] = await db
    .select({ chainId: oidcTokenUses.chainId })
    .from(oidcTokenUses)
    .where(and(eq(oidcTokenUses.issuer, use.issuer), eq(oidcTokenUses.tokenKey, use.tokenKey)));
  return earlier?.chainId === use.chainId;
}

/** Forgets used tokens that expired before `before`: they cannot be replayed any more. */
export function deleteExpiredTokenUsesQuery(db: Database, before: number) {
  return db.delete(oidcTokenUses).where(lt(oidcTokenUses.expiresAt, before));
}

/** How many agent tokens exchanges issued in the pool to `subject` since `since`. */
export async function countRecentExchanges(
  db: Database,
  poolId: string,
  subject: string | null,
  since: number,
): Promise<number> {
  const [row] = await db
    .select({ n: count() })
    .from(agentTokens)
    .where(
      and(
        eq(agentTokens.poolId, poolId),
        isNotNull(agentTokens.oidcTrustId),
        subject === null ? isNull(agentTokens.oidcSubject) : eq(agentTokens.oidcSubject, subject),
        gt(agentTokens.createdAt, since),
      ),
    );
  return row?.n ?? 0;
}
