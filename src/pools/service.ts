/**
 * Agent pools and their agent tokens: each D1 change lands with its audit event in one batch, and
 * the pool's Durable Object is told what concerns it (liveness settings, revoked tokens, deletion).
 * Expected refusals come back as {@link PoolFailure}, never thrown.
 */

import { newId } from "@outpost/common";
import { sql } from "drizzle-orm";
import { auditQuery, auditWhereQuery } from "../audit/service.ts";
import type { AuditActor } from "../authz/actor.ts";
import type { Database } from "../db/client.ts";
import type { agentPools } from "../db/schema.ts";
import { deletePoolTrustsQuery } from "../oidc/queries.ts";
import { generateToken, hashToken } from "../tokens/model.ts";
import {
  LIVENESS_FIELDS,
  LIVENESS_LIMITS,
  type LivenessField,
  type PoolRow,
  poolOverrides,
  presentAgent,
  presentAgentToken,
  presentPool,
} from "./model.ts";
import {
  deletePoolQuery,
  deletePoolTokensQuery,
  findPoolByName,
  getAgentToken,
  getPool,
  insertAgentTokenQuery,
  insertPoolQuery,
  listAgentTokenRows,
  listPoolRows,
  revokeAgentTokenQuery,
  updatePoolQuery,
  workspacesUsingPool,
} from "./queries.ts";

export type PoolFailure =
  | { reason: "not_found" }
  | { reason: "name_taken"; name: string }
  | { reason: "in_use"; workspaces: { id: string; name: string }[] };

export type PoolResult<T> = { ok: true; value: T } | ({ ok: false } & PoolFailure);

const refuse = (failure: PoolFailure): { ok: false } & PoolFailure => ({ ok: false, ...failure });

/** The pool's Durable Object; one per pool, addressed by the pool id. */
export function poolStub(env: Env, poolId: string) {
  return env.AGENT_POOL.getByName(poolId);
}

export type PoolInput = {
  name?: string;
  description?: string;
} & Partial<Record<LivenessField, number | null>>;

function livenessColumns(input: PoolInput): Partial<typeof agentPools.$inferInsert> {
  const out: Partial<typeof agentPools.$inferInsert> = {};
  for (const field of LIVENESS_FIELDS) {
    const value = input[field];
    if (value !== undefined) {
      out[LIVENESS_LIMITS[field].column] = value === null ? null : value * 1000;
    }
  }
  return out;
}

function isUniqueViolation(err: unknown): boolean {
  return err instanceof Error && /UNIQUE constraint failed/i.test(`${err.message} ${err.cause}`);
}

/** Creates a pool; its name is unique in the org. */
export async function createPool(
  db: Database,
  env: Env,
  input: { orgId: string; actor: AuditActor; name: string } & PoolInput,
): Promise<PoolResult<ReturnType<typeof presentPool>>> {
  const now = Date.now();
  const id = newId("pool");
  const [inserted] = await db.batch([
    insertPoolQuery(db, {
      id,
      orgId: input.orgId,
      name: input.name,
      description: input.description ?? "",
      ...livenessColumns(input),
      createdAt: now,
      updatedAt: now,
    }),
    auditWhereQuery(
      db,
      {
        orgId: input.orgId,
        actor: input.actor,
        action: "pool.create",
        targetType: "pool",
        targetId: id,
        data: { name: input.name },
        now,
      },
      sql`EXISTS (SELECT 1 FROM agent_pools WHERE id = ${id})`,
    ),
  ]);
  const row = inserted[0];
  if (!row) {
    return refuse({ reason: "name_taken", name: input.name });
  }
  await poolStub(env, id).configure(poolOverrides(row));
  return { ok: true, value: presentPool(row) };
}

export async function listPools(db: Database, orgId: string) {
  return (await listPoolRows(db, orgId)).map(presentPool);
}

/** The org's pools, each with its agents by status and its queue (one call per pool object). */
export async function listPoolsWithSummary(db: Database, env: Env, orgId: string) {
  const pools = await listPools(db, orgId);
  return Promise.all(
    pools.map(async (pool) => ({ ...pool, summary: await poolStub(env, pool.id).summary() })),
  );
}

/** A pool with its agents (from its Durable Object) and the workspaces assigned to it. */
export async function getPoolDetail(db: Database, env: Env, orgId: string, id: string) {
  const row = await getPool(db, orgId, id);
  if (!row) {
    return refuse({ reason: "not_found" });
  }
  const [agents, assigned] = await Promise.all([
    poolStub(env, id).listAgents(),
    workspacesUsingPool(db, id),
  ]);
  return {
    ok: true as const,
    value: { ...presentPool(row), agents: agents.map(presentAgent), workspaces: assigned },
  };
}

/** Renames, redescribes or changes liveness settings; the Durable Object applies them at once. */
export async function updatePool(
  db: Database,
  env: Env,
  input: { orgId: string; id: string; actor: AuditActor; patch: PoolInput },
): Promise<PoolResult<ReturnType<typeof presentPool>>> {
  const current = await getPool(db, input.orgId, input.id);
  if (!current) {
    return refuse({ reason: "not_found" });
  }
  const { name, description } = input.patch;
  if (name !== undefined && name !== current.name) {
    const taken = await findPoolByName(db, input.orgId, name);
    if (taken) {
      return refuse({ reason: "name_taken", name });
    }
  }
  const now = Date.now();
  const set = {
    ...(name === undefined ? {} : { name }),
    ...(description === undefined ? {} : { description }),
    ...livenessColumns(input.patch),
    updatedAt: now,
  };
  let updated: PoolRow | undefined;
  try {
    const [rows] = await db.batch([
      updatePoolQuery(db, input.orgId, input.id, set),
      auditQuery(db, {
        orgId: input.orgId,
        actor: input.actor,
        action: "pool.update",
        targetType: "pool",
        targetId: input.id,
        data: { ...input.patch },
        now,
      }),
    ]);
    updated = rows[0];
  } catch (err) {
    if (name !== undefined && isUniqueViolation(err)) {
      return refuse({ reason: "name_taken", name });
    }
    throw err;
  }
  if (!updated) {
    return refuse({ reason: "not_found" });
  }
  await poolStub(env, input.id).configure(poolOverrides(updated));
  return { ok: true, value: presentPool(updated) };
}

/**
 * Deletes a pool no workspace uses (else `in_use` naming them, and nothing changes): its tokens
 * go with it, its agents are told to exit and its Durable Object is emptied.
 */
export async function deletePool(
  db: Database,
  env: Env,
  input: { orgId: string; id: string; actor: AuditActor },
): Promise<PoolResult<null>> {
  const current = await getPool(db, input.orgId, input.id);
  if (!current) {
    return refuse({ reason: "not_found" });
  }
  const assigned = await workspacesUsingPool(db, input.id);
  if (assigned.length > 0) {
    return refuse({ reason: "in_use", workspaces: assigned });
  }
  const now = Date.now();
  try {
    await db.batch([
      deletePoolTokensQuery(db, input.id),
      deletePoolTrustsQuery(db, input.id),
      deletePoolQuery(db, input.orgId, input.id),
      auditQuery(db, {
        orgId: input.orgId,
        actor: input.actor,
        action: "pool.delete",
        targetType: "pool",
        targetId: input.id,
        data: { name: current.name },
        now,
      }),
    ]);
  } catch (err) {
    // A workspace was assigned between the check and the delete: the foreign key refused it.
    const raced = await workspacesUsingPool(db, input.id);
    if (raced.length > 0) {
      return refuse({ reason: "in_use", workspaces: raced });
    }
    throw err;
  }
  await poolStub(env, input.id).retire();
  return { ok: true, value: null };
}

/** Creates an agent token for a pool; the returned secret is the only copy there will be. */
export async function createAgentToken(
  db: Database,
  input: { orgId: string; poolId: string; description: string; actor: AuditActor },
) {
  const pool = await getPool(db, input.orgId, input.poolId);
  if (!pool) {
    return refuse({ reason: "not_found" });
  }
  const secret = generateToken("agent");
  const now = Date.now();
  const row = {
    id: newId("agentToken"),
    orgId: input.orgId,
    poolId: input.poolId,
    description: input.description,
    tokenHash: await hashToken(secret),
    createdBy: input.actor.id,
    createdAt: now,
    lastUsedAt: null,
    revokedAt: null,
    expiresAt: null,
    oidcTrustId: null,
    oidcIssuer: null,
    oidcSubject: null,
    chainId: null,
  };
  await db.batch([
    insertAgentTokenQuery(db, row),
    auditQuery(db, {
      orgId: input.orgId,
      actor: input.actor,
      action: "agent_token.create",
      targetType: "agent_token",
      targetId: row.id,
      data: { poolId: input.poolId, description: input.description },
      now,
    }),
  ]);
  return { ok: true as const, value: { ...presentAgentToken(row), token: secret } };
}

/**
 * The pool's active agent tokens (static ones, and OIDC-issued ones until they expire). A token's
 * last use is the later of D1's `last_used_at` (register, start, finish, goodbye) and its agents'
 * last contact in the pool (polls and heartbeats, which write nothing to D1), which the pool keeps
 * per chain for OIDC agents.
 */
export async function listAgentTokens(db: Database, env: Env, orgId: string, poolId: string) {
  const pool = await getPool(db, orgId, poolId);
  if (!pool) {
    return refuse({ reason: "not_found" });
  }
  const [rows, contact] = await Promise.all([
    listAgentTokenRows(db, poolId, Date.now()),
    poolStub(env, poolId).tokenLastContact(),
  ]);
  return {
    ok: true as const,
    value: rows.map((row) =>
      presentAgentToken({
        ...row,
        lastUsedAt: Math.max(row.lastUsedAt ?? 0, contact[row.chainId ?? row.id] ?? 0) || null,
      }),
    ),
  };
}

/**
 * Revokes an agent token: every later request with it gets 401 TOKEN_REVOKED, and the agents
 * registered with it are told to exit (their running jobs fail, unstarted leases requeue). For a
 * token issued by OIDC exchange, every token of its chain is revoked, and the chain cannot be
 * renewed.
 */
export async function revokeAgentToken(
  db: Database,
  env: Env,
  input: { orgId: string; poolId: string; id: string; actor: AuditActor },
): Promise<PoolResult<ReturnType<typeof presentAgentToken> & { exitedAgentIds: string[] }>> {
  const token = await getAgentToken(db, input.orgId, input.poolId, input.id);
  if (!token) {
    return refuse({ reason: "not_found" });
  }
  const now = token.revokedAt ?? Date.now();
  if (token.revokedAt === null) {
    await db.batch([
      revokeAgentTokenQuery(db, token, now),
      auditQuery(db, {
        orgId: input.orgId,
        actor: input.actor,
        action: "agent_token.revoke",
        targetType: "agent_token",
        targetId: input.id,
        data: { poolId: input.poolId, ...(token.chainId ? { chainId: token.chainId } : {}) },
        now,
      }),
    ]);
  }
  // Also on a repeated revoke, so a Durable Object call lost the first time is made again.
  const { agentIds } = await poolStub(env, input.poolId).revokeToken(token.chainId ?? input.id);
  return {
    ok: true,
    value: { ...presentAgentToken({ ...token, revokedAt: now }), exitedAgentIds: agentIds },
  };
}
