/**
 * What the pool reports about itself without changing anything: the agents it lists, its load
 * (for metrics and autoscaling) and why a job still waits.
 */
import type { OpsContext } from "./pool-ops.ts";
import type { JobRow } from "./pool-store.ts";
import type { AgentView, PoolReport, PoolSummary, WaitInfo, WaitReason } from "./pool-types.ts";
import { toAgentView } from "./pool-views.ts";

/** Agents still listed: offline ones drop out once the retention window has passed. */
export function listedAgents(ctx: OpsContext): AgentView[] {
  return ctx.store.agents
    .all()
    .filter(
      (agent) =>
        (agent.state !== "errored" && agent.state !== "exited") ||
        agent.last_contact_at + ctx.settings.retentionMs > ctx.now,
    )
    .map((agent) => toAgentView(agent, ctx.store.jobs.ofAgent(agent.id)));
}

/** The pool at a glance: listed agents by status, and its queued and running jobs. */
export function poolSummary(ctx: OpsContext): PoolSummary {
  const agents: PoolSummary["agents"] = { idle: 0, busy: 0, unknown: 0, errored: 0, exited: 0 };
  for (const agent of listedAgents(ctx)) {
    agents[agent.status] += 1;
  }
  const jobs = ctx.store.figures.counts();
  return { agents, queuedJobs: jobs.queued, runningJobs: jobs.running };
}

/** The pool's load for metrics and autoscaling: agents by status, holders, jobs by phase. */
export function poolReport(ctx: OpsContext): PoolReport {
  const { agents } = poolSummary(ctx);
  const load = ctx.store.figures.load();
  const jobs: PoolReport["jobs"] = {
    plan: { queued: 0, running: 0 },
    apply: { queued: 0, running: 0 },
  };
  let oldestQueuedAt: number | null = null;
  for (const row of load.phases) {
    jobs[row.phase] = { queued: row.queued, running: row.running };
    if (row.oldest_queued_at !== null) {
      oldestQueuedAt = Math.min(oldestQueuedAt ?? row.oldest_queued_at, row.oldest_queued_at);
    }
  }
  return { agents, agentsHoldingJobs: load.holders, jobs, oldestQueuedAt };
}

/** Why a job has not been picked up yet, in structured form. */
export function waitInfo(ctx: OpsContext, job: JobRow): WaitInfo {
  if (job.state === "leased") {
    return {
      state: "leased",
      agentId: job.agent_id ?? "",
      startBy: (job.leased_at ?? ctx.now) + ctx.settings.leaseStartTimeoutMs,
    };
  }
  if (job.state !== "queued") {
    return { state: job.state, agentId: job.agent_id };
  }
  const { ahead, length } = ctx.store.figures.queuePosition(job);
  return {
    state: "queued",
    position: ahead + 1,
    queueLength: length,
    reason: reasonFor(ctx, job, ahead),
  };
}

function reasonFor(ctx: OpsContext, job: JobRow, ahead: number): WaitReason {
  const agents = ctx.store.agents.loads(ctx.now, ctx.settings.retentionMs);
  if (agents.length === 0) {
    return { kind: "no_agents_registered" };
  }
  const online = agents.filter((a) => a.state === "online");
  if (online.length === 0) {
    const lastContactAt = Math.max(...agents.map((a) => a.last_contact_at));
    return { kind: "no_agents_online", registered: agents.length, lastContactAt };
  }
  const accepting = online.filter((a) => a.accepts.split(",").includes(job.phase));
  if (accepting.length === 0) {
    return { kind: "no_agent_accepts_phase", phase: job.phase, online: online.length };
  }
  if (accepting.every((a) => a.held >= a.capacity)) {
    const runningJobs = accepting.reduce((sum, a) => sum + a.held, 0);
    return { kind: "all_agents_busy", agents: accepting.length, runningJobs };
  }
  return { kind: "behind_other_jobs", ahead };
}

/** True when an online agent holds (has leased or started) one of `jobIds`. */
export function heldByLiveAgent(ctx: OpsContext, jobIds: string[]): boolean {
  return jobIds.some((id) => {
    const job = ctx.store.jobs.get(id);
    if (!job?.agent_id || (job.state !== "leased" && job.state !== "started")) {
      return false;
    }
    return ctx.store.agents.get(job.agent_id)?.state === "online";
  });
}
