/**
 * The pool's registry changes: registering agents, goodbyes, revoked tokens and retiring the
 * whole pool. Synchronous, like `pool-ops.ts`, so each is one transaction. Jobs these end reach
 * the Worker through the outbox and the `JOB_EVENTS` queue.
 */
import { newId } from "@outpost/common";
import { loseAgent, type OpsContext, systemEnd } from "./pool-ops.ts";
import type { AgentRow } from "./pool-store.ts";
import type { RegisterInput } from "./pool-types.ts";

/** Registers an agent, online from now, under the token that authenticated it. */
export function registerAgent(ctx: OpsContext, input: RegisterInput): string {
  const agentId = newId("agent");
  ctx.store.insertAgent(agentId, input, ctx.now, ctx.settings);
  return agentId;
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
  const agents = ctx.store.liveAgentsOfToken(tokenId);
  for (const agent of agents) {
    const jobReason = `the token of agent ${agent.id} was revoked while it ran this job`;
    loseAgent(ctx, agent, "exited", "its agent token was revoked", jobReason);
  }
  return agents.map((agent) => agent.id);
}

/** The pool is deleted: every unfinished job errors and every agent is exited. */
export function retirePool(ctx: OpsContext): void {
  for (const job of ctx.store.openJobs()) {
    ctx.store.endJob(job, systemEnd("errored", "the agent pool was deleted"), ctx.now, true);
  }
  for (const agent of ctx.store.allAgents()) {
    if (agent.state === "online" || agent.state === "unknown") {
      ctx.store.setAgentState(agent, "exited", "the agent pool was deleted", ctx.now, ctx.settings);
    }
  }
}
