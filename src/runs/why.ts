/**
 * "Why does my run wait?" answered from the real state: the workspace lock, the run ahead of it,
 * the org's queue limit, or the pool (no agents, none online, all busy, none for this phase,
 * position in the queue).
 */

import { ok } from "@outpost/common";
import { eq } from "drizzle-orm";
import type { WaitInfo, WaitReason } from "../../durable/pool-types.ts";
import { orgTokens, runs } from "../db/schema.ts";
import type { Deps } from "../deps.ts";
import { count } from "../lib/words.ts";
import { poolStub } from "../pools/service.ts";
import { lockHolderKind } from "../workspaces/model.ts";
import { getWorkspaceById, type WorkspaceRow } from "../workspaces/queries.ts";
import { isOverQueueLimit, jobId, phaseOf, queueLimit, WAITING_STATUSES } from "./model.ts";
import { countQueuedRuns, poolNameQuery, type RunRow } from "./queries.ts";

/** Words for a pool's wait reason. */
export function describeWaitReason(
  reason: WaitReason,
  poolName: string,
  phase: "plan" | "apply",
): string {
  switch (reason.kind) {
    case "no_agents_registered":
      return `no agent is registered in pool ${poolName}`;
    case "no_agents_online":
      return reason.lastContactAt
        ? `no agent online in pool ${poolName} (${count(reason.registered, "agent")} registered, last contact ${new Date(reason.lastContactAt).toISOString()})`
        : `no agent online in pool ${poolName}`;
    case "no_agent_accepts_phase":
      return reason.online === 1
        ? `the one online agent in pool ${poolName} does not accept ${phase} jobs`
        : `none of the ${reason.online} online agents in pool ${poolName} accepts ${phase} jobs`;
    case "all_agents_busy":
      return reason.agents === 1
        ? `the only agent in pool ${poolName} is busy (${count(reason.runningJobs, "job")} running)`
        : `all ${reason.agents} agents in pool ${poolName} are busy (${count(reason.runningJobs, "job")} running)`;
    case "behind_other_jobs":
      return `waiting behind ${count(reason.ahead, "other job")} in pool ${poolName}`;
  }
}

/** Words for a job that waits, or null once an agent started it (it runs; it does not wait). */
function describeJobWait(info: WaitInfo, poolName: string, phase: "plan" | "apply"): string | null {
  if (info.state === "queued") {
    const position = `position ${info.position} of ${info.queueLength} in the queue`;
    return `${describeWaitReason(info.reason, poolName, phase)}; ${position}`;
  }
  if (info.state === "leased") {
    return `handed to agent ${info.agentId}, waiting for it to start (by ${new Date(info.startBy).toISOString()})`;
  }
  return null;
}

/**
 * Why `run` waits, or null when it is not waiting. `known` carries what the caller already
 * holds (the workspace; the pool's answer when the job was just queued), so it is not read again.
 */
export async function whyWaiting(
  deps: Deps,
  run: RunRow,
  known: { workspace?: WorkspaceRow; wait?: WaitInfo | null; poolName?: string | null } = {},
): Promise<string | null> {
  if (!WAITING_STATUSES.includes(run.status)) {
    return null;
  }
  const workspace = known.workspace ?? (await getWorkspaceById(deps.db, run.workspaceId));
  if (!workspace) {
    return null;
  }
  if (run.status === "pending") {
    if (workspace.lockedBy && lockHolderKind(workspace.lockedBy) === "user") {
      const holder = await deps.db.query.orgTokens.findFirst({
        where: eq(orgTokens.id, workspace.lockedBy),
      });
      const reason = workspace.lockReason ? `: ${workspace.lockReason}` : "";
      return `workspace ${workspace.name} is locked by ${holder ? `token "${holder.description}"` : workspace.lockedBy}${reason}`;
    }
    const current =
      workspace.currentRunId ??
      (workspace.lockedBy && lockHolderKind(workspace.lockedBy) === "run"
        ? workspace.lockedBy
        : null);
    if (current && current !== run.id) {
      const ahead = await deps.db.query.runs.findFirst({ where: eq(runs.id, current) });
      return `waiting for run ${current}${ahead ? ` (${ahead.status.replaceAll("_", " ")})` : ""} to finish`;
    }
    if (isOverQueueLimit(await countQueuedRuns(deps.db, run.orgId), queueLimit(deps.env))) {
      return "the organization is over its queue limit";
    }
    return "waiting to be queued";
  }
  const phase = phaseOf(run.status);
  const poolId = run.plannedPoolId ?? workspace.poolId;
  if (!poolId) {
    return `workspace ${workspace.name} has no agent pool`;
  }
  const poolName = known.poolName ?? (await poolNameQuery(deps.db, poolId))[0]?.name ?? poolId;
  const info = known.wait
    ? ok(known.wait)
    : await poolStub(deps.env, poolId).whyWaiting(jobId(run.id, phase));
  if (!info.ok) {
    return `the ${phase} job is not in pool ${poolName}'s queue yet; it will be re-queued within a minute`;
  }
  return describeJobWait(info.value, poolName, phase);
}
