/**
 * Agent pools and agent tokens, pure: names, liveness settings (seconds in the API, ms in
 * storage), autoscaling settings and the rule of `desiredAgents`, and the public shapes. Secrets and hashes never appear in any of them.
 */
import { z } from "@hono/zod-openapi";
import { fail, ok, type Result } from "@outpost/common";
import type { AgentView, PoolReport, PoolSettings } from "../../durable/pool-types.ts";
import { DEFAULT_POOL_SETTINGS } from "../../durable/queue.ts";
import type { agentPools, agentTokens } from "../db/schema.ts";
import { refField, refParam } from "../names/model.ts";

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

/**
 * Autoscaling settings a pool may set, each bounded: the fewest and most agents `desiredAgents`
 * asks for, and the jobs one agent runs at once (its `--concurrency`).
 */
export const AUTOSCALING_LIMITS = {
  minAgents: { min: 0, max: 1_000, default: 0 },
  maxAgents: { min: 0, max: 1_000, default: 10 },
  jobsPerAgent: { min: 1, max: 100, default: 1 },
} as const;

export type AutoscalingField = keyof typeof AUTOSCALING_LIMITS;
export const AUTOSCALING_FIELDS = Object.keys(AUTOSCALING_LIMITS) as AutoscalingField[];
export type AutoscalingSettings = Record<AutoscalingField, number>;

/** An autoscaling setting in an API body: a whole number in range. */
export function autoscalingSetting(field: AutoscalingField) {
  const { min, max } = AUTOSCALING_LIMITS[field];
  return z.int().min(min).max(max);
}

/**
 * The settings a change leads to (`patch` over `current`), or why they cannot be: `minAgents`
 * above `maxAgents`, in a sentence naming both.
 */
export function nextAutoscaling(
  current: AutoscalingSettings,
  patch: Partial<AutoscalingSettings>,
): Result<AutoscalingSettings, string> {
  const next = { ...current };
  for (const field of AUTOSCALING_FIELDS) {
    next[field] = patch[field] ?? current[field];
  }
  if (next.minAgents > next.maxAgents) {
    return fail(`minAgents (${next.minAgents}) must not be above maxAgents (${next.maxAgents})`);
  }
  return ok(next);
}

/** What the pool holds now, as its object reports it. */
export type PoolLoad = {
  /** Jobs in the pool's queue: each can run as soon as an agent takes it. */
  queuedJobs: number;
  /** Jobs leased to or started by an agent. */
  runningJobs: number;
  /** Agents holding at least one job (busy, or unknown with a job). */
  agentsHoldingJobs: number;
};

/**
 * The agents the pool should have: enough for its queued and running jobs at `jobsPerAgent`
 * each (rounded up), within `[minAgents, maxAgents]`, and never fewer than the agents holding
 * jobs, so scaling down never asks an agent in the middle of a job to stop (when more agents hold
 * jobs than `maxAgents` allows, the answer is those agents until their jobs end).
 *
 * Only jobs in the pool's queue count as waiting: a run behind another run of its workspace, or
 * held by a workspace lock, stays `pending` and is queued only once it may run.
 */
export function desiredAgents(load: PoolLoad, settings: AutoscalingSettings): number {
  const forJobs = Math.ceil((load.queuedJobs + load.runningJobs) / settings.jobsPerAgent);
  const bounded = Math.min(Math.max(forJobs, settings.minAgents), settings.maxAgents);
  return Math.max(bounded, load.agentsHoldingJobs);
}

/** The autoscaling signal of a pool, as `GET /api/v1/pools/{poolId}/autoscaling` answers it. */
export type AutoscalingSignal = {
  desiredAgents: number;
  queuedJobs: number;
  runningJobs: number;
  idleAgents: number;
  busyAgents: number;
  minAgents: number;
  maxAgents: number;
};

/** The signal from the pool's settings and its object's report. */
export function autoscalingSignal(
  settings: AutoscalingSettings,
  report: PoolReport,
): AutoscalingSignal {
  const load: PoolLoad = {
    queuedJobs: report.jobs.plan.queued + report.jobs.apply.queued,
    runningJobs: report.jobs.plan.running + report.jobs.apply.running,
    agentsHoldingJobs: report.agentsHoldingJobs,
  };
  return {
    desiredAgents: desiredAgents(load, settings),
    queuedJobs: load.queuedJobs,
    runningJobs: load.runningJobs,
    idleAgents: report.agents.idle,
    busyAgents: report.agents.busy,
    minAgents: settings.minAgents,
    maxAgents: settings.maxAgents,
  };
}

/** A pool's autoscaling settings as stored. */
export function autoscalingOf(row: PoolRow): AutoscalingSettings {
  return { minAgents: row.minAgents, maxAgents: row.maxAgents, jobsPerAgent: row.jobsPerAgent };
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
    ...autoscalingOf(row),
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

/**
 * The public shape of an agent as the pool's Durable Object reports it; `tokenId` (which agent
 * token it logged in with) only for callers who manage agent tokens (owners), null for others.
 */
export function presentAgent(agent: AgentView, showTokenId: boolean) {
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
    engines: agent.engines,
    tokenId: showTokenId ? agent.tokenId : null,
    runningJobs: agent.runningJobs,
    lastContactAt: new Date(agent.lastContactAt).toISOString(),
    registeredAt: new Date(agent.registeredAt).toISOString(),
  };
}

/** A `{poolId}` path parameter: the pool's id or its name. */
export const PoolRef = refParam("pool", "poolId", POOL_NAME_PATTERN);
/** A `poolId` body field (a workspace's pool): the pool's id or its name. */
export const PoolRefField = refField("pool", POOL_NAME_PATTERN);
