/**
 * Agent pools and agent tokens, pure: names, liveness settings (seconds in the API, ms in
 * storage), and the public shapes. Secrets and hashes never appear in any of them.
 */
import { z } from "@hono/zod-openapi";
import type { AgentView, PoolSettings } from "../../durable/pool-types.ts";
import { DEFAULT_POOL_SETTINGS } from "../../durable/queue.ts";
import type { agentPools, agentTokens } from "../db/schema.ts";
import { refParam } from "../names/model.ts";

export type PoolRow = typeof agentPools.$inferSelect;
export type AgentTokenRow = typeof agentTokens.$inferSelect;

/** The grammar of pool names. */
export const POOL_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$/;

export const PoolName = z
  .string()
  .regex(
    POOL_NAME_PATTERN,
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
    createdAt: iso(row.createdAt) ?? "",
    updatedAt: iso(row.updatedAt) ?? "",
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

/** A `{poolId}` path parameter: the pool's id or its name. */
export const PoolRef = refParam("pool", "poolId", POOL_NAME_PATTERN);
