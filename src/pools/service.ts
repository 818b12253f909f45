/**
 * Agent pools and their agent tokens: each D1 change lands with its audit event in one batch, and
 * the pool's Durable Object is told what concerns it (liveness settings, revoked tokens, deletion).
 * Expected refusals come back as {@link PoolResult} reasons, never thrown.
 */

import { newId, ok } from "@outpost/common";
import { sql } from "drizzle-orm";
import { auditQuery, auditWhereQuery } from "../audit/service.ts";
import type { AuditActor } from "../authz/actor.ts";
import type { Database } from "../db/client.ts";
import type { agentPools } from "../db/schema.ts";
import type { Deps } from "../deps.ts";
import { type Outcome, refuse } from "../lib/reason.ts";
import { notFoundSentence } from "../names/model.ts";
import { deletePoolTrustsQuery } from "../oidc/queries.ts";
import { generateToken, hashToken } from "../tokens/model.ts";
import {
  AUTOSCALING_FIELDS,
  AUTOSCALING_LIMITS,
  type AutoscalingSettings,
  autoscalingOf,
  LIVENESS_FIELDS,
  LIVENESS_LIMITS,
  type LivenessField,
  nextAutoscaling,
  normalizeScope,
  type PoolRow,
  type PoolScope,
  poolOverrides,
  poolScopeRefusal,
  presentAgent,
  presentAgentToken,
  presentPool,
} from "./model.ts";
import {
  deletePoolQuery,
  deletePoolTokensQuery,
  findAgentTokenInOrg,
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
import { sameScope, scopeOf, scopeProblem } from "./scope.ts";

/**
 * A pool operation's outcome: `not_found` (also another org's), `invalid` (autoscaling settings
 * that do not fit, a scope naming what is not in the org), or `conflict` (a name, a use).
 */
export type PoolResult<T> = Outcome<T, "not_found" | "invalid" | "conflict">;

function poolNotFound(poolId: string) {
  return refuse("not_found", notFoundSentence("pool", poolId));
}

/** Autoscaling settings whose `minAgents` would be above `maxAgents`; the sentence names both. */
function invalidAutoscaling(message: string) {
  return refuse("invalid", message);
}

function nameTaken(name: string) {
  return refuse("conflict", `a pool named ${JSON.stringify(name)} exists`);
}

/** A pool that workspaces use cannot be deleted; the reason names them. */
function inUse(assigned: { id: string; name: string }[]) {
  const workspaces = assigned.map(({ id, name }) => ({ id, name }));
  return refuse(
    "conflict",
    `the pool is assigned to ${workspaces.map((w) => w.name).join(", ")}; assign them another pool first`,
    { details: { workspaces } },
  );
}

/** The pool's Durable Object; one per pool, addressed by the pool id. */
export function poolStub(env: Env, poolId: string) {
  return env.AGENT_POOL.getByName(poolId);
}

export type PoolInput = {
  name?: string;
  description?: string;
} & Partial<Record<LivenessField, number | null>> &
  Partial<PoolScope> &
  Partial<AutoscalingSettings>;

/** The columns a pool input sets: liveness settings in ms, autoscaling settings as given. */
function settingColumns(input: PoolInput): Partial<typeof agentPools.$inferInsert> {
  const out: Partial<typeof agentPools.$inferInsert> = {};
  for (const field of LIVENESS_FIELDS) {
    const value = input[field];
    if (value !== undefined) {
      out[LIVENESS_LIMITS[field].column] = value === null ? null : value * 1000;
    }
  }
  for (const field of AUTOSCALING_FIELDS) {
    const value = input[field];
    if (value !== undefined) {
      out[field] = value;
    }
  }
  return out;
}

const DEFAULT_AUTOSCALING: AutoscalingSettings = {
  minAgents: AUTOSCALING_LIMITS.minAgents.default,
  maxAgents: AUTOSCALING_LIMITS.maxAgents.default,
  jobsPerAgent: AUTOSCALING_LIMITS.jobsPerAgent.default,
};

function isUniqueViolation(err: unknown): boolean {
  return err instanceof Error && /UNIQUE constraint failed/i.test(`${err.message} ${err.cause}`);
}

/** Creates a pool; its name is unique in the org. */
export async function createPool(
  deps: Deps,
  input: { orgId: string; actor: AuditActor; name: string } & PoolInput,
): Promise<PoolResult<ReturnType<typeof presentPool>>> {
  const { db, env } = deps;
  const autoscaling = nextAutoscaling(DEFAULT_AUTOSCALING, input);
  if (!autoscaling.ok) {
    return invalidAutoscaling(autoscaling.reason);
  }
  const scope = scopeOf(input);
  const problem = await scopeProblem(db, input.orgId, scope);
  if (problem) {
    return problem;
  }
  const now = deps.now();
  const id = newId("pool");
  const [inserted] = await db.batch([
    insertPoolQuery(db, {
      id,
      orgId: input.orgId,
      name: input.name,
      description: input.description ?? "",
      ...settingColumns(input),
      ...scope,
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
        data: { name: input.name, ...(scope.organizationScoped ? {} : { scope }) },
        now,
      },
      sql`EXISTS (SELECT 1 FROM agent_pools WHERE id = ${id})`,
    ),
  ]);
  const row = inserted[0];
  if (!row) {
    return nameTaken(input.name);
  }
  await poolStub(env, id).configure(poolOverrides(row));
  return ok(presentPool(row));
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

/**
 * A pool with its agents (from its Durable Object) and the workspaces assigned to it; the agents'
 * token ids only when `showTokenIds` (the caller manages the pool's tokens).
 */
export async function getPoolDetail(
  db: Database,
  env: Env,
  orgId: string,
  id: string,
  showTokenIds: boolean,
) {
  const row = await getPool(db, orgId, id);
  if (!row) {
    return poolNotFound(id);
  }
  const [agents, assigned] = await Promise.all([
    poolStub(env, id).listAgents(),
    workspacesUsingPool(db, id),
  ]);
  const workspaces = assigned.map((w) => ({
    id: w.id,
    name: w.name,
    allowed: poolScopeRefusal(row, w) === null,
  }));
  return ok({
    ...presentPool(row),
    agents: agents.map((agent) => presentAgent(agent, showTokenIds)),
    workspaces,
  });
}

/**
 * Renames, redescribes, rescopes or changes liveness settings; the Durable Object applies the
 * liveness settings at once. Answers the updated row and whether its scope changed (the caller
 * then errors the queued runs the new scope leaves out: `scope-service.ts`).
 */
export async function updatePool(
  deps: Deps,
  input: { orgId: string; id: string; actor: AuditActor; patch: PoolInput },
): Promise<PoolResult<{ row: PoolRow; scopeChanged: boolean }>> {
  const { db, env } = deps;
  const current = await getPool(db, input.orgId, input.id);
  if (!current) {
    return poolNotFound(input.id);
  }
  const scope = scopeOf(input.patch, current);
  const scopeChanged = !sameScope(scope, current);
  const problem = scopeChanged ? await scopeProblem(db, input.orgId, scope, current) : null;
  if (problem) {
    return problem;
  }
  const { name, description } = input.patch;
  const autoscaling = nextAutoscaling(autoscalingOf(current), input.patch);
  if (!autoscaling.ok) {
    return invalidAutoscaling(autoscaling.reason);
  }
  if (name !== undefined && name !== current.name) {
    const taken = await findPoolByName(db, input.orgId, name);
    if (taken) {
      return nameTaken(name);
    }
  }
  const now = deps.now();
  const set = {
    ...(name === undefined ? {} : { name }),
    ...(description === undefined ? {} : { description }),
    ...settingColumns(input.patch),
    ...(scopeChanged ? scope : {}),
    updatedAt: now,
  };
  let updated: PoolRow | undefined;
  try {
    const [rows] = await db.batch([
      updatePoolQuery(db, input.orgId, input.id, set, autoscaling.value),
      auditQuery(db, {
        orgId: input.orgId,
        actor: input.actor,
        action: "pool.update",
        targetType: "pool",
        targetId: input.id,
        data: {
          ...input.patch,
          ...(scopeChanged ? { scope: { from: normalizeScope(current), to: scope } } : {}),
        },
        now,
      }),
    ]);
    updated = rows[0];
  } catch (err) {
    if (name !== undefined && isUniqueViolation(err)) {
      return nameTaken(name);
    }
    throw err;
  }
  if (!updated) {
    return whyNotUpdated(db, input);
  }
  await poolStub(env, input.id).configure(poolOverrides(updated));
  return ok({ row: updated, scopeChanged });
}

/** The pool is gone, or a concurrent change left a bound the patch no longer fits. */
async function whyNotUpdated(
  db: Database,
  input: { orgId: string; id: string; patch: PoolInput },
): Promise<PoolResult<never>> {
  const now = await getPool(db, input.orgId, input.id);
  const autoscaling = now ? nextAutoscaling(autoscalingOf(now), input.patch) : null;
  return autoscaling && !autoscaling.ok
    ? invalidAutoscaling(autoscaling.reason)
    : poolNotFound(input.id);
}

/**
 * Deletes a pool no workspace uses (else `in_use` naming them, and nothing changes): its tokens
 * go with it, its agents are told to exit and its Durable Object is emptied.
 */
export async function deletePool(
  deps: Deps,
  input: { orgId: string; id: string; actor: AuditActor },
): Promise<PoolResult<null>> {
  const { db, env } = deps;
  const current = await getPool(db, input.orgId, input.id);
  if (!current) {
    return poolNotFound(input.id);
  }
  const assigned = await workspacesUsingPool(db, input.id);
  if (assigned.length > 0) {
    return inUse(assigned);
  }
  const now = deps.now();
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
      return inUse(raced);
    }
    throw err;
  }
  await poolStub(env, input.id).retire();
  return ok(null);
}

/** The pool of the org's agent token `id`, or undefined (another org's token is not found). */
export async function agentTokenPoolId(db: Database, orgId: string, id: string) {
  return (await findAgentTokenInOrg(db, orgId, id))?.poolId;
}

/** Creates an agent token for a pool; the returned secret is the only copy there will be. */
export async function createAgentToken(
  deps: Deps,
  input: { orgId: string; poolId: string; description: string; actor: AuditActor },
) {
  const { db } = deps;
  const pool = await getPool(db, input.orgId, input.poolId);
  if (!pool) {
    return poolNotFound(input.poolId);
  }
  const secret = generateToken("agent");
  const now = deps.now();
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
  return ok({ ...presentAgentToken(row), token: secret });
}

/**
 * The pool's active agent tokens (static ones, and OIDC-issued ones until they expire). A token's
 * last use is the later of D1's `last_used_at` (register, start, finish, goodbye) and its agents'
 * last contact in the pool (polls and heartbeats, which write nothing to D1), which the pool keeps
 * per chain for OIDC agents.
 */
export async function listAgentTokens(deps: Deps, orgId: string, poolId: string) {
  const { db, env } = deps;
  const pool = await getPool(db, orgId, poolId);
  if (!pool) {
    return poolNotFound(poolId);
  }
  const [rows, contact] = await Promise.all([
    listAgentTokenRows(db, poolId, deps.now()),
    poolStub(env, poolId).tokenLastContact(),
  ]);
  return ok(
    rows.map((row) =>
      presentAgentToken({
        ...row,
        lastUsedAt: Math.max(row.lastUsedAt ?? 0, contact[row.chainId ?? row.id] ?? 0) || null,
      }),
    ),
  );
}

/**
 * Revokes an agent token: every later request with it gets 401 TOKEN_REVOKED, and the agents
 * registered with it are told to exit (their running jobs fail, unstarted leases requeue). For a
 * token issued by OIDC exchange, every token of its chain is revoked, and the chain cannot be
 * renewed.
 */
export async function revokeAgentToken(
  deps: Deps,
  input: { orgId: string; poolId: string; id: string; actor: AuditActor },
): Promise<PoolResult<ReturnType<typeof presentAgentToken> & { exitedAgentIds: string[] }>> {
  const { db, env } = deps;
  const token = await getAgentToken(db, input.orgId, input.poolId, input.id);
  if (!token) {
    return refuse("not_found", notFoundSentence("agentToken", input.id));
  }
  const now = token.revokedAt ?? deps.now();
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
  return ok({ ...presentAgentToken({ ...token, revokedAt: now }), exitedAgentIds: agentIds });
}
