/**
 * The AgentPool's rows as its callers see them: the RPC views of jobs and agents, and the ending
 * of an ended job. Pure, so the run service can derive an ending from a view it read (the
 * reconciler does) exactly as the pool does.
 */
import {
  type AgentIsolation,
  type JobPhase,
  OfferedEngineVersion,
  type PlanSummary,
} from "@outpost/protocol";
import { z } from "zod";
import type { AgentView, EndOutcome, JobEndedEvent, JobView } from "./pool-types.ts";
import { type AgentState, agentStatus, type JobState } from "./queue.ts";

export type AgentRow = {
  id: string;
  token_id: string;
  name: string | null;
  version: string;
  os: string;
  arch: string;
  capacity: number;
  accepts: string;
  isolation: AgentIsolation | null;
  /** JSON of the OfferedEngineVersion list the agent reported; null when it reported none. */
  engines: string | null;
  state: AgentState;
  state_reason: string | null;
  registered_at: number;
  last_contact_at: number;
  poll_held_until: number | null;
  state_changed_at: number;
  due_at: number | null;
};

export type JobRow = {
  job_id: string;
  run_id: string;
  workspace_id: string;
  org_id: string;
  phase: JobPhase;
  priority_class: 0 | 1 | 2;
  spec: string;
  round: number;
  seq: number;
  state: JobState;
  agent_id: string | null;
  lease_id: string | null;
  enqueued_at: number;
  leased_at: number | null;
  started_at: number | null;
  reported_at: number | null;
  cancel_requested_at: number | null;
  forced: number;
  ended_at: number | null;
  ended_by: string | null;
  outcome: EndOutcome | null;
  exit_code: number | null;
  reason: string | null;
  plan_summary: string | null;
  due_at: number | null;
  timeout_ms: number;
  /** 1 when the pool ended the started job because its agent was lost. */
  agent_lost: number;
};

/** The RPC shape of a job row. */
export function toJobView(row: JobRow): JobView {
  return {
    jobId: row.job_id,
    runId: row.run_id,
    workspaceId: row.workspace_id,
    orgId: row.org_id,
    phase: row.phase,
    priorityClass: row.priority_class,
    state: row.state,
    agentId: row.agent_id,
    leaseId: row.lease_id,
    enqueuedAt: row.enqueued_at,
    leasedAt: row.leased_at,
    startedAt: row.started_at,
    cancelRequestedAt: row.cancel_requested_at,
    endedAt: row.ended_at,
    endedBy: row.ended_by,
    outcome: row.outcome,
    exitCode: row.exit_code,
    reason: row.reason,
    planSummary: row.plan_summary ? (JSON.parse(row.plan_summary) as PlanSummary) : null,
    forced: row.forced === 1,
    timeoutMs: row.timeout_ms,
    agentLost: row.agent_lost === 1,
    spec: JSON.parse(row.spec) as JobView["spec"],
  };
}

/**
 * The ending of an ended job, or null while it has not ended. The same job always yields the
 * same ending, so applying it twice (an event redelivered, a finish repeated, the reconciler
 * catching up) is recognised downstream as one.
 */
export function endingOf(job: JobView): JobEndedEvent | null {
  if (job.state !== "ended" || job.outcome === null || job.endedAt === null) {
    return null;
  }
  const actor = job.endedBy ?? "system";
  const action =
    actor !== "system"
      ? ("job.finished" as const)
      : job.outcome === "canceled"
        ? ("job.canceled" as const)
        : ("job.errored" as const);
  return {
    jobId: job.jobId,
    runId: job.runId,
    workspaceId: job.workspaceId,
    orgId: job.orgId,
    phase: job.phase,
    outcome: job.outcome,
    action,
    actor,
    agentId: job.agentId,
    reason: job.reason,
    exitCode: job.exitCode,
    planSummary: job.planSummary,
    forced: job.forced,
    agentLost: job.agentLost,
    endedAt: job.endedAt,
    operation: job.spec.operation,
    isSpeculative: job.spec.isSpeculative,
  };
}

/** The phases an agent registered to accept. */
export function acceptedPhases(agent: AgentRow): JobPhase[] {
  return agent.accepts.split(",").filter((p): p is JobPhase => p === "plan" || p === "apply");
}

/**
 * The engine versions stored with an agent; what does not read as the protocol's list (it was
 * checked on the way in) reads as none.
 */
function offeredEngines(json: string | null): OfferedEngineVersion[] {
  if (json === null) {
    return [];
  }
  const parsed = z.array(OfferedEngineVersion).safeParse(JSON.parse(json));
  return parsed.success ? parsed.data : [];
}

/** The RPC shape of an agent row with the jobs it holds. */
export function toAgentView(agent: AgentRow, jobs: JobRow[]): AgentView {
  return {
    id: agent.id,
    name: agent.name,
    version: agent.version,
    os: agent.os,
    arch: agent.arch,
    status: agentStatus(agent.state, jobs.length),
    statusReason: agent.state_reason,
    capacity: agent.capacity,
    acceptedPhases: acceptedPhases(agent),
    isolation: agent.isolation,
    engines: offeredEngines(agent.engines),
    tokenId: agent.token_id,
    runningJobs: jobs.map((job) => ({
      jobId: job.job_id,
      phase: job.phase,
      state: job.state === "started" ? "started" : "leased",
    })),
    lastContactAt: agent.last_contact_at,
    registeredAt: agent.registered_at,
  };
}
