/**
 * The D1 statements of one scrape, each scoped to the organization. Each reads rows bounded by
 * the organization's pools and workspaces, never by its runs: the counters they read are kept by
 * triggers as runs and jobs end (migration 0010).
 */
import { asc, eq } from "drizzle-orm";
import type { Database } from "../db/client.ts";
import { agentPools, jobTimings, runOutcomes, workspaces } from "../db/schema.ts";

/** The org's pools with their autoscaling settings, by name. */
export function poolsQuery(db: Database, orgId: string) {
  return db
    .select({
      id: agentPools.id,
      name: agentPools.name,
      minAgents: agentPools.minAgents,
      maxAgents: agentPools.maxAgents,
      jobsPerAgent: agentPools.jobsPerAgent,
    })
    .from(agentPools)
    .where(eq(agentPools.orgId, orgId))
    .orderBy(asc(agentPools.name));
}

/** Runs that ended, by workspace (with its name) and final status. */
export function outcomesQuery(db: Database, orgId: string) {
  return db
    .select({
      workspaceId: runOutcomes.workspaceId,
      workspaceName: workspaces.name,
      outcome: runOutcomes.outcome,
      count: runOutcomes.count,
    })
    .from(runOutcomes)
    .innerJoin(workspaces, eq(workspaces.id, runOutcomes.workspaceId))
    .where(eq(runOutcomes.orgId, orgId))
    .orderBy(asc(workspaces.name), asc(runOutcomes.outcome));
}

/** Every bucket of the org's job wait and duration histograms. */
export function timingsQuery(db: Database, orgId: string) {
  return db
    .select({
      poolId: jobTimings.poolId,
      phase: jobTimings.phase,
      metric: jobTimings.metric,
      le: jobTimings.le,
      count: jobTimings.count,
      sumSeconds: jobTimings.sumSeconds,
    })
    .from(jobTimings)
    .where(eq(jobTimings.orgId, orgId));
}
