/**
 * The agent API's calls that concern the agent itself (register, heartbeat, goodbye), made on
 * its pool's Durable Object, and the one translation of the pool's answers into refusals; the
 * calls about jobs are the run service's (`runs/agent-jobs.ts`).
 */

import { fail, ok } from "@outpost/common";
import type { RunningJob } from "@outpost/protocol";
import type { AgentRef, RegisterInput } from "../../durable/pool-types.ts";
import { MAX_AGENTS_PER_TOKEN } from "../../durable/pool-types.ts";
import { type Reason, refuse } from "../lib/reason.ts";
import { poolStub } from "../pools/service.ts";

/** What a pool answers an agent's call it refuses. */
export type PoolRefusal =
  | "agent_not_found"
  | "job_not_found"
  | "lease_lost"
  | "pool_deleted"
  | "too_many_agents"
  | "too_many_polls";

/** The agent and, for job-scoped calls, the job and lease the refusal names. */
export type CallIds = { agentId: string; jobId?: string; leaseId?: string };

/**
 * A pool's refusal in words: an agent the pool does not know must register again (`not_found`),
 * a lease it no longer holds is `lease_lost`, a deleted pool is `gone`.
 */
export function poolRefusal(
  failure: PoolRefusal,
  ids: CallIds,
): Reason<"not_found" | "lease_lost" | "gone" | "over_limit"> {
  switch (failure) {
    case "agent_not_found":
      return refuse(
        "not_found",
        `agent ${ids.agentId} is not registered in this pool with this token; register again`,
      ).reason;
    case "job_not_found":
      return refuse("not_found", `job ${ids.jobId} not found in this pool`).reason;
    case "lease_lost":
      return refuse(
        "lease_lost",
        `lease ${ids.leaseId} of job ${ids.jobId} is not held by agent ${ids.agentId}`,
      ).reason;
    case "pool_deleted":
      return refuse("gone", "the agent pool of this token was deleted").reason;
    case "too_many_agents":
      return refuse(
        "over_limit",
        `this agent token already has ${MAX_AGENTS_PER_TOKEN} live agents; stop one (or let it go offline) before registering another`,
        { retryAfterSeconds: 60 },
      ).reason;
    case "too_many_polls":
      return refuse(
        "over_limit",
        `agent ${ids.agentId} already holds as many polls as its capacity; wait for one to end`,
        { retryAfterSeconds: 5 },
      ).reason;
  }
}

/** Registers an agent in the pool of its token; refused `gone` once the pool was deleted. */
export async function registerAgent(env: Env, poolId: string, input: RegisterInput) {
  const result = await poolStub(env, poolId).register(input);
  return result.ok ? ok(result.value) : fail(poolRefusal(result.reason, { agentId: "" }));
}

/** A heartbeat: the pool renews the listed leases and answers cancel requests and an exit. */
export async function agentHeartbeat(
  env: Env,
  poolId: string,
  ref: AgentRef,
  running: RunningJob[],
) {
  const result = await poolStub(env, poolId).heartbeat(ref, running);
  return result.ok ? ok(result.value) : fail(poolRefusal(result.reason, { agentId: ref.agentId }));
}

/** A graceful exit: the agent takes no more work, its unstarted leases return to the queue. */
export async function agentGoodbye(env: Env, poolId: string, ref: AgentRef, reason: string | null) {
  const result = await poolStub(env, poolId).goodbye(ref, reason);
  return result.ok ? ok(result.value) : fail(poolRefusal(result.reason, { agentId: ref.agentId }));
}
