/**
 * The pool's transitions: lease, start, heartbeat, finish, cancel, agent loss and the alarm's
 * sweep, composed from the row operations in `pool-store.ts`. Synchronous, so each runs as one
 * transaction inside the Durable Object's input gate.
 */

import type { CancelRequest, ExitInstruction, RunningJob } from "@outpost/protocol";
import { newId } from "../src/db/ids.ts";
import { fail, ok, type Result } from "../src/lib/result.ts";
import {
  type AgentRow,
  acceptedPhases,
  agentJobs,
  endJob,
  getAgent,
  getJob,
  type JobRow,
  leaseJob,
  pickNext,
  requeueJob,
  setAgentState,
  startJob,
  toAgentView,
  toJobView,
} from "./pool-store.ts";
import type {
  AgentRef,
  AgentView,
  FinishReport,
  JobView,
  LeasedJob,
  PoolSettings,
  WaitInfo,
  WaitReason,
} from "./pool-types.ts";
import {
  agentDueAt,
  agentTransition,
  classesForPhases,
  describeLostAgent,
  unreportedGraceMs,
} from "./queue.ts";

export type OpsContext = { sql: SqlStorage; settings: PoolSettings; now: number };

/** The agent behind an agent-scoped call; another token's agent is as unknown as no agent. */
export function resolveAgent(sql: SqlStorage, ref: AgentRef): AgentRow | null {
  const agent = getAgent(sql, ref.agentId);
  return agent && agent.token_id === ref.tokenId ? agent : null;
}

/** Why an offline agent must stop, or null when it may keep working. */
export function exitFor(agent: AgentRow): ExitInstruction | null {
  if (agent.state === "errored" || agent.state === "exited") {
    return { reason: `agent ${agent.id} is ${agent.state}: ${agent.state_reason ?? "offline"}` };
  }
  return null;
}

/**
 * Leases the head of the queue to the agent if it is online, has room and accepts the phase.
 * `nothingFor` remembers the phase sets (an agent's `accepts`) the queue had nothing for, so a
 * pass over many agents looks each set up once.
 */
export function tryLease(
  ctx: OpsContext,
  agent: AgentRow,
  nothingFor: Set<string> = new Set(),
): LeasedJob | null {
  if (
    agent.state !== "online" ||
    nothingFor.has(agent.accepts) ||
    agentJobs(ctx.sql, agent.id).length >= agent.capacity
  ) {
    return null;
  }
  const { job } = pickNext(ctx.sql, classesForPhases(acceptedPhases(agent)));
  if (!job) {
    nothingFor.add(agent.accepts);
    return null;
  }
  const leaseId = newId("lease");
  leaseJob(ctx.sql, job, agent.id, leaseId, ctx.now, ctx.settings);
  return {
    jobId: job.job_id,
    leaseId,
    runId: job.run_id,
    workspaceId: job.workspace_id,
    orgId: job.org_id,
    phase: job.phase,
    priorityClass: job.priority_class,
    spec: JSON.parse(job.spec) as Record<string, unknown>,
    agentId: agent.id,
    leasedAt: ctx.now,
    startBy: ctx.now + ctx.settings.leaseStartTimeoutMs,
  };
}

/**
 * Takes an agent offline: its started jobs fail (never re-run: no double apply) with `jobReason`,
 * its leased-but-unstarted jobs go back to the queue untouched.
 */
export function loseAgent(
  ctx: OpsContext,
  agent: AgentRow,
  state: "errored" | "exited",
  reason: string,
  jobReason: string,
  at: number = ctx.now,
): AgentRow {
  for (const job of agentJobs(ctx.sql, agent.id)) {
    if (job.state === "leased") {
      requeueJob(ctx.sql, job.job_id);
    } else {
      endJob(ctx.sql, job, lostAgentEnd(jobReason), ctx.now);
    }
  }
  return setAgentState(ctx.sql, agent, state, reason, at, ctx.settings);
}

/** How the pool itself (not an agent) ends a job. */
export function systemEnd(outcome: "errored" | "canceled", reason: string, forced = false) {
  return {
    outcome,
    action: outcome === "errored" ? ("job.errored" as const) : ("job.canceled" as const),
    actor: "system",
    reason,
    exitCode: null,
    planSummary: null,
    forced,
  };
}

/** How the pool ends a started job whose agent is gone: errored, marked as an agent loss. */
function lostAgentEnd(reason: string) {
  return { ...systemEnd("errored", reason), agentLost: true };
}

/** Every agent and job whose deadline has passed, handled in deadline order; idempotent. */
export function sweepDue(ctx: OpsContext): void {
  const agents = ctx.sql
    .exec<AgentRow>("SELECT * FROM agents WHERE due_at <= ? ORDER BY due_at", ctx.now)
    .toArray();
  for (let agent of agents) {
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
        break;
      }
      const step = agentTransition(agent.state);
      const lost = describeLostAgent(agent.id, agent.name, agent.last_contact_at);
      if (step === "unknown") {
        agent = setAgentState(ctx.sql, agent, "unknown", "missed heartbeats", due, ctx.settings);
      } else if (step === "errored") {
        agent = loseAgent(ctx, agent, "errored", lost, lost, due);
      } else {
        ctx.sql.exec("DELETE FROM agents WHERE id = ?", agent.id);
        break;
      }
    }
  }
  const jobs = ctx.sql
    .exec<JobRow>("SELECT * FROM jobs WHERE due_at <= ? ORDER BY due_at", ctx.now)
    .toArray();
  for (const job of jobs) {
    if (job.state === "leased") {
      requeueJob(ctx.sql, job.job_id);
    } else if (job.state === "started") {
      const limitMs =
        job.phase === "apply" ? ctx.settings.applyTimeoutMs : ctx.settings.planTimeoutMs;
      const reason = `${job.phase} ran longer than its ${Math.round(limitMs / 60_000)} minute limit`;
      endJob(ctx.sql, job, systemEnd("errored", reason), ctx.now);
    } else if (job.state === "ended") {
      ctx.sql.exec("DELETE FROM jobs WHERE job_id = ? AND state = 'ended'", job.job_id);
    }
  }
}

function holdsLease(job: JobRow | null, agent: AgentRow, leaseId: string): job is JobRow {
  return job !== null && job.agent_id === agent.id && job.lease_id === leaseId;
}

/**
 * A heartbeat: renews the listed leases, answers cancel requests (graceful for a requested
 * cancel, force for a job that is no longer this agent's), and fails started jobs the agent has
 * stopped listing for longer than the grace period.
 */
export function heartbeat(
  ctx: OpsContext,
  agent: AgentRow,
  running: RunningJob[],
): CancelRequest[] {
  const cancel: CancelRequest[] = [];
  const listed = new Set<string>();
  for (const entry of running) {
    const job = getJob(ctx.sql, entry.jobId);
    if (holdsLease(job, agent, entry.leaseId) && job.state !== "ended") {
      listed.add(job.job_id);
      if (job.state === "started") {
        ctx.sql.exec("UPDATE jobs SET reported_at = ? WHERE job_id = ?", ctx.now, job.job_id);
      }
      if (job.cancel_requested_at !== null) {
        cancel.push({ ...entry, mode: "graceful", reason: "cancel requested" });
      }
    } else {
      const reason = job?.state === "ended" && holdsLease(job, agent, entry.leaseId);
      cancel.push({
        ...entry,
        mode: "force",
        reason: reason ? (job?.reason ?? "the job has ended") : "lease lost",
      });
    }
  }
  for (const job of agentJobs(ctx.sql, agent.id)) {
    const reportedAt = job.reported_at ?? job.started_at ?? ctx.now;
    if (
      job.state === "started" &&
      !listed.has(job.job_id) &&
      reportedAt + unreportedGraceMs(ctx.settings) <= ctx.now
    ) {
      const reason = `agent ${agent.id} stopped reporting this job; last report ${new Date(reportedAt).toISOString()}`;
      endJob(ctx.sql, job, lostAgentEnd(reason), ctx.now);
    }
  }
  return cancel;
}

export type LeaseFailure = "job_not_found" | "lease_lost";

/** Two-phase acknowledge; repeating it for the same lease is a no-op. */
export function start(
  ctx: OpsContext,
  agent: AgentRow,
  jobId: string,
  leaseId: string,
): Result<JobView, LeaseFailure> {
  const job = getJob(ctx.sql, jobId);
  if (!job) {
    return fail("job_not_found");
  }
  if (!holdsLease(job, agent, leaseId) || (job.state !== "leased" && job.state !== "started")) {
    return fail("lease_lost");
  }
  if (job.state === "leased") {
    startJob(ctx.sql, job, ctx.now, ctx.settings);
  }
  return ok(toJobView(getJob(ctx.sql, jobId) ?? job));
}

/** The agent's report that a job ended; a retry of the same finish answers the same. */
export function finish(
  ctx: OpsContext,
  agent: AgentRow,
  jobId: string,
  leaseId: string,
  report: FinishReport,
): Result<JobView, LeaseFailure> {
  const job = getJob(ctx.sql, jobId);
  if (!job) {
    return fail("job_not_found");
  }
  if (!holdsLease(job, agent, leaseId)) {
    return fail("lease_lost");
  }
  if (job.state === "ended") {
    return job.ended_by === agent.id ? ok(toJobView(job)) : fail("lease_lost");
  }
  endJob(
    ctx.sql,
    job,
    {
      outcome: report.outcome,
      action: "job.finished",
      actor: agent.id,
      reason: report.message,
      exitCode: report.exitCode,
      planSummary: report.planSummary,
      forced: false,
    },
    ctx.now,
  );
  return ok(toJobView(getJob(ctx.sql, jobId) ?? job));
}

/** Cancels a job: a queued or unstarted one ends now; a started one is asked, or forced. */
export function cancel(
  ctx: OpsContext,
  jobId: string,
  force: boolean,
): Result<JobView, "not_found"> {
  const job = getJob(ctx.sql, jobId);
  if (!job) {
    return fail("not_found");
  }
  if (job.state === "queued" || job.state === "leased") {
    endJob(ctx.sql, job, systemEnd("canceled", "canceled before it started"), ctx.now);
  } else if (job.state === "started" && force) {
    endJob(ctx.sql, job, systemEnd("canceled", "force-canceled", true), ctx.now);
  } else if (job.state === "started" && job.cancel_requested_at === null) {
    ctx.sql.exec("UPDATE jobs SET cancel_requested_at = ? WHERE job_id = ?", ctx.now, jobId);
  }
  return ok(toJobView(getJob(ctx.sql, jobId) ?? job));
}

/** Agents still listed: offline ones drop out once the retention window has passed. */
export function listedAgents(ctx: OpsContext): AgentView[] {
  return ctx.sql
    .exec<AgentRow>("SELECT * FROM agents ORDER BY registered_at, id")
    .toArray()
    .filter(
      (agent) =>
        (agent.state !== "errored" && agent.state !== "exited") ||
        agent.last_contact_at + ctx.settings.retentionMs > ctx.now,
    )
    .map((agent) => toAgentView(agent, agentJobs(ctx.sql, agent.id)));
}

/** Why a job has not been picked up yet, in structured form. */
export function waitInfo(ctx: OpsContext, jobId: string): Result<WaitInfo, "not_found"> {
  const job = getJob(ctx.sql, jobId);
  if (!job) {
    return fail("not_found");
  }
  if (job.state === "leased") {
    return ok({
      state: "leased",
      agentId: job.agent_id ?? "",
      startBy: (job.leased_at ?? ctx.now) + ctx.settings.leaseStartTimeoutMs,
    });
  }
  if (job.state !== "queued") {
    return ok({ state: job.state, agentId: job.agent_id });
  }
  const ahead = ctx.sql
    .exec<{ n: number }>(
      "SELECT COUNT(*) AS n FROM jobs WHERE state = 'queued' AND (priority_class, round, seq) < (?, ?, ?)",
      job.priority_class,
      job.round,
      job.seq,
    )
    .one().n;
  const queueLength = ctx.sql
    .exec<{ n: number }>("SELECT COUNT(*) AS n FROM jobs WHERE state = 'queued'")
    .one().n;
  return ok({
    state: "queued",
    position: ahead + 1,
    queueLength,
    reason: reasonFor(ctx, job, ahead),
  });
}

function reasonFor(ctx: OpsContext, job: JobRow, ahead: number): WaitReason {
  const agents = listedAgents(ctx);
  if (agents.length === 0) {
    return { kind: "no_agents_registered" };
  }
  const online = agents.filter((a) => a.status === "idle" || a.status === "busy");
  if (online.length === 0) {
    const lastContactAt = Math.max(...agents.map((a) => a.lastContactAt));
    return { kind: "no_agents_online", registered: agents.length, lastContactAt };
  }
  const accepting = online.filter((a) => a.acceptedPhases.includes(job.phase));
  if (accepting.length === 0) {
    return { kind: "no_agent_accepts_phase", phase: job.phase, online: online.length };
  }
  if (accepting.every((a) => a.runningJobs.length >= a.capacity)) {
    const runningJobs = accepting.reduce((sum, a) => sum + a.runningJobs.length, 0);
    return { kind: "all_agents_busy", agents: accepting.length, runningJobs };
  }
  return { kind: "behind_other_jobs", ahead };
}
