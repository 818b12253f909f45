/**
 * A pool's change as the API and the dashboard make it: the pool service writes it, and when its
 * scope changed the runs it no longer allows error at once (`runs/pool-scope.ts`).
 */
import { ok } from "@outpost/common";
import type { AuditActor } from "../authz/actor.ts";
import type { Deps } from "../deps.ts";
import { enforcePoolScope } from "../runs/pool-scope.ts";
import { presentPool } from "./model.ts";
import { type PoolInput, type PoolResult, updatePool } from "./service.ts";

/**
 * Updates the pool; with a changed scope, the waiting runs of the workspaces it leaves out are
 * errored with the sentence naming the pool and the workspace, and their jobs leave its queue.
 */
export async function changePool(
  deps: Deps,
  input: { orgId: string; id: string; actor: AuditActor; patch: PoolInput },
): Promise<PoolResult<ReturnType<typeof presentPool> & { erroredRunIds: string[] }>> {
  const result = await updatePool(deps, input);
  if (!result.ok) {
    return result;
  }
  const { row, scopeChanged } = result.value;
  const erroredRunIds = scopeChanged ? await enforcePoolScope(deps, row) : [];
  return ok({ ...presentPool(row), erroredRunIds });
}
