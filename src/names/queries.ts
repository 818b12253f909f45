/** The lookups behind the resolver: each kind by id, or by name (description for tokens). */
import { and, eq, gt, isNull, or } from "drizzle-orm";
import type { Database } from "../db/client.ts";
import { agentTokens } from "../db/schema.ts";
import type { AgentTokenRow } from "../pools/model.ts";
import { findPoolByName, getAgentToken, getPool } from "../pools/queries.ts";
import { findWorkspace } from "../workspaces/queries.ts";

export { findWorkspace as findWorkspaceRef };

/** The org's pool with this id or name. */
export function findPoolRef(db: Database, orgId: string, ref: string, byId: boolean) {
  return byId ? getPool(db, orgId, ref) : findPoolByName(db, orgId, ref);
}

/** The pool's token with this id (revoked or not), as a list of zero or one. */
export async function findAgentTokenById(
  db: Database,
  orgId: string,
  poolId: string,
  id: string,
): Promise<AgentTokenRow[]> {
  const row = await getAgentToken(db, orgId, poolId, id);
  return row ? [row] : [];
}

/** The pool's active tokens (neither revoked nor expired) with this description. */
export function findAgentTokensByDescription(
  db: Database,
  orgId: string,
  poolId: string,
  description: string,
  now: number,
): Promise<AgentTokenRow[]> {
  return db
    .select()
    .from(agentTokens)
    .where(
      and(
        eq(agentTokens.orgId, orgId),
        eq(agentTokens.poolId, poolId),
        eq(agentTokens.description, description),
        isNull(agentTokens.revokedAt),
        or(isNull(agentTokens.expiresAt), gt(agentTokens.expiresAt, now)),
      ),
    )
    .limit(10);
}
