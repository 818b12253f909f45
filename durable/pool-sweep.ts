/**
 * What the pool does on its own, without an agent asking: the alarm's sweep of overdue agents
 * and jobs, and taking a lost or departing agent offline. Every job these end is written to the
 * outbox, so the ending reaches the Worker through the `JOB_EVENTS` queue.
 */
import type { OpsContext } from "./pool-ops.ts";
import type { AgentRow, JobEnd } from "./pool-store.ts";
import { agentDueAt, agentTransition, describeLostAgent, phaseTimeoutReason } from "./queue.ts";

/** How the pool itself (not an agent) ends a job. */
export function systemEnd(outcome: "errored" | "canceled", reason: string, forced = false): JobEnd {
  return { outcome, actor: "system", reason, exitCode: null, planSummary: null, forced };
}

/** How the pool ends a started job whose agent is gone: errored, marked as an agent loss. */
export function lostAgentEnd(reason: string): JobEnd {
  return { ...systemEnd("errored", reason), agentLost: true };
}

/**
 * Takes an agent offline: its started jobs fail (never re-run: no double apply) with `jobReason`,
 * its leased-but-unstarted jobs go back to the queue untouched. The endings go to the queue.
 */
export function loseAgent(
  ctx: OpsContext,
  agent: AgentRow,
  state: "errored" | "exited",
  reason: string,
  jobReason: string,
  at: number = ctx.now,
): AgentRow {
  for (const job of ctx.store.jobs.ofAgent(agent.id)) {
    if (job.state === "leased") {
      ctx.store.jobs.requeue(job);
    } else {
      ctx.store.jobs.end(job, lostAgentEnd(jobReason), ctx.now, true);
    }
  }
  return ctx.store.agents.setState(agent, state, reason, at, ctx.settings);
}

/** Every agent and job whose deadline has passed, handled in deadline order; idempotent. */
export function sweepDue(ctx: OpsContext): void {
  for (const due of ctx.store.agents.due(ctx.now)) {
    sweepAgent(ctx, due);
  }
  for (const job of ctx.store.jobs.due(ctx.now)) {
    if (job.state === "leased") {
      ctx.store.jobs.requeue(job);
    } else if (job.state === "started") {
      const reason = phaseTimeoutReason(job.phase, job.timeout_ms);
      ctx.store.jobs.end(job, systemEnd("errored", reason), ctx.now, true);
    } else if (job.state === "ended") {
      ctx.store.jobs.forget(job.job_id);
    }
  }
}

/** Moves one overdue agent through every step it missed, each at the time it was due. */
function sweepAgent(ctx: OpsContext, overdue: AgentRow): void {
  let agent = overdue;
  for (;;) {
    const due = agentDueAt(
      {
        state: agent.state,
        lastContactAt: agent.last_contact_at,
        pollHeldUntil: agent.poll_held_until,
        stateChangedAt: agent.state_changed_at,
      },
      ctx.settings,
    );
    if (due > ctx.now) {
      return;
    }
    const step = agentTransition(agent.state);
    if (step === "drop") {
      ctx.store.agents.drop(agent.id);
      return;
    }
    if (step === "unknown") {
      agent = ctx.store.agents.setState(agent, "unknown", "missed heartbeats", due, ctx.settings);
    } else {
      const lost = describeLostAgent(agent.id, agent.name, agent.last_contact_at);
      agent = loseAgent(ctx, agent, "errored", lost, lost, due);
    }
  }
}
