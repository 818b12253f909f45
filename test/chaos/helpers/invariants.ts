/**
 * What every chaos case must leave true, checked through the public API: applies started at
 * most once, state versions neither lost nor reordered, no job leased to a dead agent.
 */
import { expect, vi } from "vitest";
import { expectStatus, type Json, readRunLog, stateVersions } from "../../e2e/helpers/e2e.ts";
import type { World } from "../../e2e/helpers/world.ts";

/** How many times the engine's apply command was started for the run (from its apply log). */
export async function applyStarts(world: World, runId: string): Promise<number> {
  const log = await readRunLog(world, runId, "apply");
  return log.split("$ terraform apply").length - 1;
}

/**
 * The workspace's state versions in serial order: serials 1..n without gaps or repeats, created
 * in serial order, each written by one of `runIds` (in that order).
 */
export async function expectStateHistory(
  world: World,
  workspaceId: string,
  runIds: string[],
): Promise<Json[]> {
  const versions = await stateVersions(world, workspaceId);
  const bySerial = [...versions].sort((a, b) => Number(a.serial) - Number(b.serial));
  expect(bySerial.map((v) => Number(v.serial))).toEqual(bySerial.map((_, i) => i + 1));
  const created = bySerial.map((v) => Date.parse(String(v.createdAt)));
  expect(created).toEqual([...created].sort((a, b) => a - b));
  const order = bySerial.map((v) => runIds.indexOf(String(v.runId)));
  expect(order.every((i) => i >= 0)).toBe(true);
  expect(order).toEqual([...order].sort((a, b) => a - b));
  return bySerial;
}

/** Waits (bounded) until no agent that is not alive holds a job, and returns the agents. */
export async function expectNoJobOnDeadAgents(
  world: World,
  poolId: string,
  timeoutMs = 15_000,
): Promise<Json[]> {
  return vi.waitFor(
    async () => {
      const pool = await expectStatus(world.api("GET", `/api/v1/pools/${poolId}`), 200);
      const agents = pool.agents as Json[];
      const stuck = agents.filter(
        (a) =>
          !["idle", "busy"].includes(String(a.status)) && (a.runningJobs as unknown[]).length > 0,
      );
      expect(stuck, "jobs still leased to dead agents").toEqual([]);
      return agents;
    },
    { timeout: timeoutMs, interval: 250 },
  );
}
