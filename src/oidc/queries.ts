/** D1 access for OIDC trusts and the agent tokens exchanges issue. */
import { and, asc, count, eq, gt, isNotNull, isNull, lt, or } from "drizzle-orm";
import type { Database } from "../db/client.ts";
import { agentPools, agentTokens, oidcTrusts } from "../db/schema.ts";
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
