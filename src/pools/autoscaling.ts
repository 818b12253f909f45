/**
 * A pool's autoscaling signal: its settings from D1 and its load from its Durable Object, read at
 * request time and never written (the rule is `desiredAgents` in `model.ts`).
 */
import type { Database } from "../db/client.ts";
import { type AutoscalingSignal, autoscalingOf, autoscalingSignal } from "./model.ts";
import { getPool } from "./queries.ts";
import { type PoolResult, poolStub } from "./service.ts";

/**
 * The signal of the org's pool: one D1 statement and one call to the pool's object. Another
 * organization's pool is `not_found`.
 */
export async function getAutoscaling(
  db: Database,
  env: Env,
  orgId: string,
  poolId: string,
): Promise<PoolResult<AutoscalingSignal>> {
  const row = await getPool(db, orgId, poolId);
  if (!row) {
    return { ok: false, reason: "not_found" };
  }
  const report = await poolStub(env, poolId).report();
  return { ok: true, value: autoscalingSignal(autoscalingOf(row), report) };
}
