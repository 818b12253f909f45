/** D1 access for agent pools and agent tokens. Every read is scoped to the org. */
import { and, asc, desc, eq, gt, gte, isNull, lte, or, sql } from "drizzle-orm";
import type { Database } from "../db/client.ts";
import { agentPools, agentTokens, projects, workspaces } from "../db/schema.ts";
import type { AgentTokenRow, PoolRow } from "./model.ts";

/** A pool of the org; another org's pool is as absent as none. */
export function getPool(db: Database, orgId: string, id: string): Promise<PoolRow | undefined> {
  return db.query.agentPools.findFirst({
    where: and(eq(agentPools.orgId, orgId), eq(agentPools.id, id)),
  });
}

/** The org's pools by name. */
export function listPoolRows(db: Database, orgId: string): Promise<PoolRow[]> {
  return db
    .select()
    .from(agentPools)
    .where(eq(agentPools.orgId, orgId))
    .orderBy(asc(agentPools.name));
}

/** Inserts unless the name is taken in the org; the returning row is absent when it was. */
export function insertPoolQuery(db: Database, row: typeof agentPools.$inferInsert) {
  return db.insert(agentPools).values(row).onConflictDoNothing().returning();
}

/**
 * Updates a pool of the org; the returning row is absent when there is none, or when its
 * autoscaling settings are no longer those `expected` was computed from (a concurrent change), so
 * two changes can never leave `minAgents` above `maxAgents`.
 */
export function updatePoolQuery(
  db: Database,
  orgId: string,
  id: string,
  set: Partial<typeof agentPools.$inferInsert>,
  expected: { minAgents: number; maxAgents: number },
) {
  return db
    .update(agentPools)
    .set(set)
    .where(
      and(
        eq(agentPools.orgId, orgId),
        eq(agentPools.id, id),
        // Only one bound changes: the other, as stored, must still admit it.
        set.minAgents === undefined && set.maxAgents !== undefined
          ? lte(agentPools.minAgents, expected.maxAgents)
          : undefined,
        set.maxAgents === undefined && set.minAgents !== undefined
          ? gte(agentPools.maxAgents, expected.minAgents)
          : undefined,
      ),
    )
    .returning();
}

/** The org's pool with this name, if any. */
export function findPoolByName(db: Database, orgId: string, name: string) {
  return db.query.agentPools.findFirst({
    where: and(eq(agentPools.orgId, orgId), eq(agentPools.name, name)),
  });
}

/** The workspaces assigned to a pool (which keep it from being deleted). */
export function workspacesUsingPool(db: Database, poolId: string) {
  return db
    .select({ id: workspaces.id, name: workspaces.name, projectId: workspaces.projectId })
    .from(workspaces)
    .where(eq(workspaces.poolId, poolId))
    .orderBy(asc(workspaces.name));
}

/** Every token of the pool, revoked or not (they cannot outlive it). */
export function deletePoolTokensQuery(db: Database, poolId: string) {
  return db.delete(agentTokens).where(eq(agentTokens.poolId, poolId));
}

/** Deletes the pool; the workspaces foreign key refuses it while one is assigned. */
export function deletePoolQuery(db: Database, orgId: string, id: string) {
  return db.delete(agentPools).where(and(eq(agentPools.orgId, orgId), eq(agentPools.id, id)));
}

/** Stores a new agent token (its hash, never its secret). */
export function insertAgentTokenQuery(db: Database, row: typeof agentTokens.$inferInsert) {
  return db.insert(agentTokens).values(row);
}

/** Active tokens of a pool (neither revoked nor expired), newest first. */
export function listAgentTokenRows(
  db: Database,
  poolId: string,
  now: number,
): Promise<AgentTokenRow[]> {
  return db
    .select()
    .from(agentTokens)
    .where(
      and(
        eq(agentTokens.poolId, poolId),
        isNull(agentTokens.revokedAt),
        or(isNull(agentTokens.expiresAt), gt(agentTokens.expiresAt, now)),
      ),
    )
    .orderBy(desc(agentTokens.createdAt), desc(agentTokens.id));
}

/** A token of the org's pool, revoked or not. */
export function getAgentToken(db: Database, orgId: string, poolId: string, id: string) {
  return db.query.agentTokens.findFirst({
    where: and(
      eq(agentTokens.orgId, orgId),
      eq(agentTokens.poolId, poolId),
      eq(agentTokens.id, id),
    ),
  });
}

/** An agent token of the org by its id alone (the TFE API addresses tokens without their pool). */
export function findAgentTokenInOrg(db: Database, orgId: string, id: string) {
  return db.query.agentTokens.findFirst({
    where: and(eq(agentTokens.orgId, orgId), eq(agentTokens.id, id)),
  });
}

/**
 * Revokes once: an already revoked token keeps its first revocation time. A token of an OIDC
 * agent's chain takes the whole chain with it (the renewals of the same agent).
 */
export function revokeAgentTokenQuery(db: Database, token: AgentTokenRow, now: number) {
  const target =
    token.chainId === null ? eq(agentTokens.id, token.id) : eq(agentTokens.chainId, token.chainId);
  return db
    .update(agentTokens)
    .set({ revokedAt: now })
    .where(and(eq(agentTokens.poolId, token.poolId), target, isNull(agentTokens.revokedAt)));
}

/**
 * Takes a deleted project or workspace out of every pool scope of the org that names it: put it
 * in the batch after the delete, and it takes effect only if the delete did, so no scope lists
 * what no longer exists.
 */
export function forgetInPoolScopesQuery(
  db: Database,
  orgId: string,
  kind: "project" | "workspace",
  id: string,
) {
  const column = kind === "project" ? agentPools.allowedProjectIds : agentPools.allowedWorkspaceIds;
  const name = kind === "project" ? "allowedProjectIds" : "allowedWorkspaceIds";
  const table = kind === "project" ? projects : workspaces;
  return db
    .update(agentPools)
    .set({
      [name]: sql`(SELECT json_group_array(value) FROM json_each(${column}) WHERE value <> ${id})`,
    })
    .where(
      and(
        eq(agentPools.orgId, orgId),
        sql`EXISTS (SELECT 1 FROM json_each(${column}) WHERE value = ${id})`,
        sql`NOT EXISTS (SELECT 1 FROM ${table} WHERE ${table.id} = ${id})`,
      ),
    );
}

/** What the scope rule reads of a pool (`poolScopeRefusal`): zero or one row. */
export function poolScopeQuery(db: Database, poolId: string) {
  return db
    .select({
      name: agentPools.name,
      organizationScoped: agentPools.organizationScoped,
      allowedWorkspaceIds: agentPools.allowedWorkspaceIds,
      allowedProjectIds: agentPools.allowedProjectIds,
    })
    .from(agentPools)
    .where(eq(agentPools.id, poolId))
    .limit(1);
}
