/**
 * The pool's registry changes: registering agents, goodbyes, revoked tokens and retiring the
 * whole pool. Synchronous, like `pool-ops.ts`, so each is one transaction. Jobs these end reach
 * the Worker through the outbox and the `JOB_EVENTS` queue.
 */
import { fail, newId, ok, type Result } from "@outpost/common";
import { MAX_POLL_WAIT_SECONDS } from "@outpost/protocol";
import { type OpsContext, resolveAgent } from "./pool-ops.ts";
import type { AgentRow } from "./pool-store.ts";
import { loseAgent, systemEnd } from "./pool-sweep.ts";
import { MAX_AGENTS_PER_TOKEN, type RegisterInput, type RegisterOutcome } from "./pool-types.ts";
import { HEARTBEAT_INTERVAL_SECONDS } from "./queue.ts";

/**
 * The live agent a registering agent names as its predecessor, or null. Only an agent of this
 * pool registered under the same token (chain) counts: naming another token's agent, an unknown
 * id or an agent already offline changes nothing, so an agent token cannot end others' jobs.
 */
export function predecessorOf(ctx: OpsContext, input: RegisterInput): AgentRow | null {
  if (!input.predecessorAgentId) {
    return null;
  }
  const agent = resolveAgent(ctx.store, {
    agentId: input.predecessorAgentId,
    tokenId: input.tokenId,
  });
  return agent && (agent.state === "online" || agent.state === "unknown") ? agent : null;
}

/**
 * Registers an agent, online from now, under the token that authenticated it; answers its id
 * and the intervals it keeps to. A predecessor the agent names (see {@link predecessorOf}) is
 * taken offline first through the agent-lost path: its started jobs end at once (an apply's run
 * says what state the engine saved), its unstarted leases return to the queue.
 */
export function registerAgent(
  ctx: OpsContext,
  input: RegisterInput,
): Result<RegisterOutcome, "pool_deleted" | "too_many_agents"> {
  if (ctx.store.settings.isRetired()) {
    return fail("pool_deleted");
  }
  const predecessor = predecessorOf(ctx, input);
  // One token registers at most MAX_AGENTS_PER_TOKEN live agents: more is a flood. A restarted
  // agent takes its predecessor's place, so a token at its limit can restart.
  const live = ctx.store.agents.liveOfToken(input.tokenId).filter((a) => a.id !== predecessor?.id);
  if (live.length >= MAX_AGENTS_PER_TOKEN) {
    return fail("too_many_agents");
  }
  const agentId = newId("agent");
  if (predecessor) {
    const jobReason = `agent ${predecessor.id} restarted (as ${agentId}, same data directory) while running this job`;
    loseAgent(ctx, predecessor, "exited", `restarted as ${agentId}`, jobReason);
  }
  ctx.store.agents.insert(agentId, input, ctx.now, ctx.settings);
  return ok({
    agentId,
    heartbeatIntervalSeconds: HEARTBEAT_INTERVAL_SECONDS,
    pollWaitSeconds: MAX_POLL_WAIT_SECONDS,
    leaseStartTimeoutSeconds: Math.ceil(ctx.settings.leaseStartTimeoutMs / 1000),
    unknownAfterSeconds: Math.ceil(ctx.settings.unknownAfterMs / 1000),
  });
}

/** A graceful exit: unstarted leases requeue, jobs still running fail. Repeats are no-ops. */
export function sayGoodbye(ctx: OpsContext, agent: AgentRow, reason: string | null): void {
  if (agent.state === "online" || agent.state === "unknown") {
    const jobReason = `agent ${agent.id} exited while running this job`;
    loseAgent(ctx, agent, "exited", reason ?? "said goodbye", jobReason);
  }
}

/** The agents registered with a revoked token exit; returns their ids. */
export function revokeTokenAgents(ctx: OpsContext, tokenId: string): string[] {
  const agents = ctx.store.agents.liveOfToken(tokenId);
  for (const agent of agents) {
    const jobReason = `the token of agent ${agent.id} was revoked while it ran this job`;
    loseAgent(ctx, agent, "exited", "its agent token was revoked", jobReason);
  }
  return agents.map((agent) => agent.id);
}

/** The pool is deleted: every unfinished job errors and every agent is exited. */
export function retirePool(ctx: OpsContext): void {
  for (const job of ctx.store.jobs.open()) {
    ctx.store.jobs.end(job, systemEnd("errored", "the agent pool was deleted"), ctx.now, true);
  }
  for (const agent of ctx.store.agents.all()) {
    if (agent.state === "online" || agent.state === "unknown") {
      ctx.store.agents.setState(
        agent,
        "exited",
        "the agent pool was deleted",
        ctx.now,
        ctx.settings,
      );
    }
  }
}
