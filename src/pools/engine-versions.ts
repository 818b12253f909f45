/**
 * The engine versions a workspace form offers: what the live agents of the organization's pools
 * reported when they registered (the newest releases their `--release-mirror` lists, the
 * versions in their caches and on their PATH), each with where it came from and which pools'
 * agents offer it. The coordinator never asks a mirror itself: the agents are the ones that
 * can reach it, so their report is the truthful source.
 */
import { ENGINES, type EngineVersionSource } from "@outpost/protocol";
import semver from "semver";
import type { AgentView } from "../../durable/pool-types.ts";
import type { Database } from "../db/client.ts";
import { listPools, poolStub } from "./service.ts";

/** One version of one engine, offered by at least one live agent. */
export type EngineVersionOffer = {
  engine: (typeof ENGINES)[number];
  version: string;
  /** Where the agents found it, in a fixed order: mirror, cache, path. */
  sources: EngineVersionSource[];
  /** The names of the pools whose agents offer it, sorted. */
  pools: string[];
};

const SOURCE_ORDER: readonly EngineVersionSource[] = ["mirror", "cache", "path"];
/** Agents whose report still stands: an errored or exited agent no longer runs jobs. */
const LIVE = new Set<AgentView["status"]>(["idle", "busy", "unknown"]);

/**
 * The versions the live agents of `pools` offer, merged: by engine (in `ENGINES` order), then
 * newest first. Pure.
 */
export function mergeOffers(
  pools: readonly { name: string; agents: readonly Pick<AgentView, "status" | "engines">[] }[],
): EngineVersionOffer[] {
  const byKey = new Map<string, { offer: EngineVersionOffer; sources: Set<EngineVersionSource> }>();
  for (const pool of pools) {
    for (const agent of pool.agents.filter((a) => LIVE.has(a.status))) {
      for (const { engine, version, source } of agent.engines) {
        const key = `${engine} ${version}`;
        const entry = byKey.get(key) ?? {
          offer: { engine, version, sources: [], pools: [] },
          sources: new Set<EngineVersionSource>(),
        };
        entry.sources.add(source);
        if (!entry.offer.pools.includes(pool.name)) {
          entry.offer.pools.push(pool.name);
        }
        byKey.set(key, entry);
      }
    }
  }
  return [...byKey.values()]
    .map(({ offer, sources }) => ({
      ...offer,
      sources: SOURCE_ORDER.filter((s) => sources.has(s)),
      pools: offer.pools.sort(),
    }))
    .sort(
      (a, b) =>
        ENGINES.indexOf(a.engine) - ENGINES.indexOf(b.engine) ||
        semver.rcompare(a.version, b.version),
    );
}

/** The engine versions the live agents of the org's pools offer (one call per pool object). */
export async function offeredEngineVersions(
  db: Database,
  env: Env,
  orgId: string,
): Promise<EngineVersionOffer[]> {
  const pools = await listPools(db, orgId);
  const withAgents = await Promise.all(
    pools.map(async (pool) => ({
      name: pool.name,
      agents: await poolStub(env, pool.id).listAgents(),
    })),
  );
  return mergeOffers(withAgents);
}
