/**
 * Agent pools and agent tokens, pure: names, liveness settings (seconds in the API, ms in
 * storage), and the public shapes. Secrets and hashes never appear in any of them.
 */
import { z } from "@hono/zod-openapi";
import type { AgentView, PoolSettings } from "../../durable/pool-types.ts";
import { DEFAULT_POOL_SETTINGS } from "../../durable/queue.ts";
import type { agentPools, agentTokens } from "../db/schema.ts";

export type PoolRow = typeof agentPools.$inferSelect;
export type AgentTokenRow = typeof agentTokens.$inferSelect;

export const PoolName = z
  .string()
  .regex(
    /^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$/,
    "letters, digits, '-' and '_', starting with a letter or digit, at most 63",
  )
  .openapi({ example: "datacenter-1" });

/** Liveness settings a pool may override; each bounded so no value can wedge the scheduler. */
export const LIVENESS_LIMITS = {
  unknownAfterSeconds: { min: 10, max: 3_600, column: "unknownAfterMs" },
  erroredAfterSeconds: { min: 30, max: 7 * 86_400, column: "erroredAfterMs" },
  retentionSeconds: { min: 60, max: 30 * 86_400, column: "retentionMs" },
  /** Not liveness, but bounded and stored the same way: the cap on OIDC-issued token lifetimes. */
  maxTokenExpirationSeconds: { min: 60, max: 86_400, column: "maxTokenExpirationMs" },
} as const;

export type LivenessField = keyof typeof LIVENESS_LIMITS;
export const LIVENESS_FIELDS = Object.keys(LIVENESS_LIMITS) as LivenessField[];

/** A liveness setting in an API body: whole seconds in range, or null for the default. */
export function livenessSetting(field: LivenessField) {
  const { min, max } = LIVENESS_LIMITS[field];
  return z.int().min(min).max(max).nullable();
}

/** The overrides the pool's Durable Object is configured with; null means its default. */
export function poolOverrides(row: PoolRow): Partial<Record<keyof PoolSettings, number | null>> {
  return {
    unknownAfterMs: row.unknownAfterMs,
    erroredAfterMs: row.erroredAfterMs,
    retentionMs: row.retentionMs,
  };
}

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/** The public shape of a pool with its effective liveness settings. */
export function presentPool(row: PoolRow) {
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    unknownAfterSeconds: Math.round(
      (row.unknownAfterMs ?? DEFAULT_POOL_SETTINGS.unknownAfterMs) / 1000,
    ),
    erroredAfterSeconds: Math.round(
      (row.erroredAfterMs ?? DEFAULT_POOL_SETTINGS.erroredAfterMs) / 1000,
    ),
    retentionSeconds: Math.round((row.retentionMs ?? DEFAULT_POOL_SETTINGS.retentionMs) / 1000),
    maxTokenExpirationSeconds: Math.round(
      (row.maxTokenExpirationMs ?? DEFAULT_MAX_TOKEN_EXPIRATION_MS) / 1000,
    ),
    organizationScoped: row.organizationScoped,
    allowedWorkspaceIds: row.allowedWorkspaceIds,
    allowedProjectIds: row.allowedProjectIds,
    createdAt: iso(row.createdAt) ?? "",
    updatedAt: iso(row.updatedAt) ?? "",
  };
}

/**
 * Which workspaces may run on a pool: every workspace of the organization when it is
 * `organizationScoped`, else those it names and those of the projects it names.
 */
export type PoolScope = {
  organizationScoped: boolean;
  allowedWorkspaceIds: string[];
  allowedProjectIds: string[];
};

/** Most workspaces, and most projects, one pool may name. */
export const MAX_POOL_SCOPE_ENTRIES = 100;

/**
 * The rule, in one place: null when `pool` allows `workspace` to run on it, else the sentence
 * a refused assignment, an errored run and the workspace page all say ("pool dc1-prod does not
 * allow workspace app-staging"). The lease path, the queueing of a job, a workspace's pool
 * change and a pool's scope change all ask here.
 */
export function poolScopeRefusal(
  pool: PoolScope & { name: string },
  workspace: { id: string; name: string; projectId: string | null },
): string | null {
  if (pool.organizationScoped || pool.allowedWorkspaceIds.includes(workspace.id)) {
    return null;
  }
  if (workspace.projectId !== null && pool.allowedProjectIds.includes(workspace.projectId)) {
    return null;
  }
  return `pool ${pool.name} does not allow workspace ${workspace.name}`;
}

/** A scope as stored: the lists sorted and without repeats, so an equal scope compares equal. */
export function normalizeScope(scope: PoolScope): PoolScope {
  const tidy = (ids: readonly string[]) => [...new Set(ids)].sort();
  return {
    organizationScoped: scope.organizationScoped,
    allowedWorkspaceIds: tidy(scope.allowedWorkspaceIds),
    allowedProjectIds: tidy(scope.allowedProjectIds),
  };
}

/** When a pool sets no maximum: agent tokens from OIDC exchanges live at most an hour. */
export const DEFAULT_MAX_TOKEN_EXPIRATION_MS = 3_600_000;

/** The public shape of an agent token; never its secret or hash. */
export function presentAgentToken(row: AgentTokenRow) {
  return {
    id: row.id,
    poolId: row.poolId,
    description: row.description,
    createdAt: iso(row.createdAt) ?? "",
    lastUsedAt: iso(row.lastUsedAt),
    revokedAt: iso(row.revokedAt),
    expiresAt: iso(row.expiresAt),
    oidc:
      row.oidcTrustId === null
        ? null
        : {
            trustId: row.oidcTrustId,
            issuer: row.oidcIssuer ?? "",
            subject: row.oidcSubject,
            chainId: row.chainId ?? row.id,
          },
  };
}

/** The public shape of an agent as the pool's Durable Object reports it. */
export function presentAgent(agent: AgentView) {
  return {
    id: agent.id,
    name: agent.name,
    version: agent.version,
    os: agent.os,
    arch: agent.arch,
    status: agent.status,
    statusReason: agent.statusReason,
    capacity: agent.capacity,
    acceptedPhases: agent.acceptedPhases,
    isolation: agent.isolation,
    tokenId: agent.tokenId,
    runningJobs: agent.runningJobs,
    lastContactAt: new Date(agent.lastContactAt).toISOString(),
    registeredAt: new Date(agent.registeredAt).toISOString(),
  };
}
