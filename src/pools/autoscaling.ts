/**
 * A pool's autoscaling signal: its settings from D1 and its load from its Durable Object, read at
 * request time and never written (the rule is `desiredAgents` in `model.ts`).
 */
import { ok } from "@outpost/common";
import type { Deps } from "../deps.ts";
import { refuse } from "../lib/reason.ts";
import { type AutoscalingSignal, autoscalingOf, autoscalingSignal } from "./model.ts";
import { getPool } from "./queries.ts";
import { type PoolResult, poolStub } from "./service.ts";

/**
 * The signal of the org's pool: one D1 statement and one call to the pool's object. Another
 * organization's pool is `not_found`.
 */
export async function getAutoscaling(
  deps: Pick<Deps, "db" | "env">,
  orgId: string,
  poolId: string,
): Promise<PoolResult<AutoscalingSignal>> {
  const row = await getPool(deps.db, orgId, poolId);
  if (!row) {
    return refuse("not_found", `pool ${poolId} not found`);
  }
  const report = await poolStub(deps.env, poolId).report();
  return ok(autoscalingSignal(autoscalingOf(row), report));
}
