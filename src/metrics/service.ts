/**
 * One scrape of an organization's metrics: one D1 batch (pools, run outcomes, job timings) and
 * one call to each pool's object, in parallel, whatever the number of runs. Reads only.
 */
import type { Deps } from "../deps.ts";
import { poolStub } from "../pools/service.ts";
import { workspaceDrift } from "./drift.ts";
import type { MetricFamily } from "./exposition.ts";
import { buildFamilies } from "./model.ts";
import { outcomesQuery, poolsQuery, timingsQuery } from "./queries.ts";

/** The org's metric families at `deps.now()`; covers that organization only. */
export async function collectMetrics(deps: Deps, orgId: string): Promise<MetricFamily[]> {
  const { db, env } = deps;
  const [pools, outcomes, timings] = await db.batch([
    poolsQuery(db, orgId),
    outcomesQuery(db, orgId),
    timingsQuery(db, orgId),
  ]);
  const [reports, drift] = await Promise.all([
    Promise.all(pools.map((pool) => poolStub(env, pool.id).report())),
    workspaceDrift(db, orgId),
  ]);
  return buildFamilies({
    pools: pools.map((pool, i) => {
      const report = reports[i];
      if (!report) {
        throw new Error(`no report for pool ${pool.id}`);
      }
      const { minAgents, maxAgents, jobsPerAgent } = pool;
      return {
        id: pool.id,
        name: pool.name,
        settings: { minAgents, maxAgents, jobsPerAgent },
        report,
      };
    }),
    outcomes,
    timings,
    drift,
    now: deps.now(),
  });
}
