/**
 * The pool's transitions an agent or a user asks for: lease, start, heartbeat, finish, cancel,
 * composed from the store's row operations (what the pool does on its own is in
 * `pool-sweep.ts`). Synchronous, so each runs as one transaction inside the Durable Object's
 * input gate. `ctx.now` is the object's injected clock.
 */
import { fail, newId, ok, type Result } from "@outpost/common";
import {
  type CancelRequest,
  type ExitInstruction,
  MAX_POLL_WAIT_SECONDS,
  type RunningJob,
} from "@outpost/protocol";
import type { AgentRow, JobRow, PoolStore } from "./pool-store.ts";
import { lostAgentEnd, systemEnd } from "./pool-sweep.ts";
import {
  type AgentRef,
  type CancelOutcome,
  type FinishOutcome,
  type FinishReport,
  FORCE_CANCELED,
  type JobView,
  type LeasedJob,
  type PollOutcome,
  type StartingAgent,
} from "./pool-types.ts";
import { acceptedPhases, endingOf, toJobView } from "./pool-views.ts";
import { classesForPhases, type PoolSettings, unreportedGraceMs } from "./queue.ts";

export type OpsContext = { store: PoolStore; settings: PoolSettings; now: number };

/** The agent behind an agent-scoped call; another token's agent is as unknown as no agent. */
export function resolveAgent(store: PoolStore, ref: AgentRef): AgentRow | null {
  const agent = store.agents.get(ref.agentId);
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
 * The start of a poll: a job leased to the agent now, else how long to hold the poll (0: answer
 * none at once, waits capped at {@link MAX_POLL_WAIT_SECONDS}). Contact makes an unknown agent
 * online; the lease is tried as that, and the agent's row is written once: the contact, plus the
 * hold about to start when nothing could be leased.
 */
export function beginPoll(
  ctx: OpsContext,
  agent: AgentRow,
  waitMs: number,
): { job: LeasedJob | null; wait: number } {
  const wait = Math.min(Math.max(0, Math.floor(waitMs)), MAX_POLL_WAIT_SECONDS * 1000);
  const job = tryLease(ctx, { ...agent, state: "online" });
  const holdUntil =
    job || wait === 0
      ? agent.poll_held_until
      : Math.max(agent.poll_held_until ?? 0, ctx.now + wait);
  ctx.store.agents.touch(agent, ctx.now, holdUntil, ctx.settings);
  return { job, wait };
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
    ctx.store.jobs.ofAgent(agent.id).length >= agent.capacity
  ) {
    return null;
  }
  const { job } = ctx.store.jobs.pickNext(classesForPhases(acceptedPhases(agent)));
  if (!job) {
    nothingFor.add(agent.accepts);
    return null;
  }
  const leaseId = newId("lease");
  ctx.store.jobs.lease(job, agent.id, leaseId, ctx.now, ctx.settings);
  return {
    jobId: job.job_id,
    leaseId,
    runId: job.run_id,
    workspaceId: job.workspace_id,
    orgId: job.org_id,
    phase: job.phase,
    priorityClass: job.priority_class,
    spec: JSON.parse(job.spec) as LeasedJob["spec"],
    agentId: agent.id,
    leasedAt: ctx.now,
    startBy: ctx.now + ctx.settings.leaseStartTimeoutMs,
  };
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
    const job = ctx.store.jobs.get(entry.jobId);
    if (holdsLease(job, agent, entry.leaseId) && job.state !== "ended") {
      listed.add(job.job_id);
      if (job.state === "started") {
        ctx.store.jobs.recordReport(job.job_id, ctx.now);
      }
      if (job.cancel_requested_at !== null) {
        cancel.push({ ...entry, mode: "graceful", reason: "cancel requested" });
      }
    } else {
      const ended = job?.state === "ended" && holdsLease(job, agent, entry.leaseId);
      cancel.push({
        ...entry,
        mode: "force",
        reason: ended ? (job?.reason ?? "the job has ended") : "lease lost",
      });
    }
  }
  for (const job of ctx.store.jobs.ofAgent(agent.id)) {
    const reportedAt = job.reported_at ?? job.started_at ?? ctx.now;
    if (
      job.state === "started" &&
      !listed.has(job.job_id) &&
      reportedAt + unreportedGraceMs(ctx.settings) <= ctx.now
    ) {
      const reason = `agent ${agent.id} stopped reporting this job; last report ${new Date(reportedAt).toISOString()}`;
      ctx.store.jobs.end(job, lostAgentEnd(reason), ctx.now, true);
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
): Result<JobView & { agent: StartingAgent }, LeaseFailure> {
  const job = ctx.store.jobs.get(jobId);
  if (!job) {
    return fail("job_not_found");
  }
  if (!holdsLease(job, agent, leaseId) || (job.state !== "leased" && job.state !== "started")) {
    return fail("lease_lost");
  }
  const started = job.state === "leased" ? ctx.store.jobs.start(job, ctx.now, ctx.settings) : job;
  return ok({
    ...toJobView(started),
    agent: {
      id: agent.id,
      name: agent.name,
      version: agent.version,
      isolation: agent.isolation,
    },
  });
}

/**
 * The agent's report that a job ended. Answers the ending for the caller to apply; a retry of
 * the same finish answers the same ending, so a caller that failed to apply it can again.
 */
export function finish(
  ctx: OpsContext,
  agent: AgentRow,
  jobId: string,
  leaseId: string,
  report: FinishReport,
): Result<FinishOutcome, LeaseFailure> {
  const job = ctx.store.jobs.get(jobId);
  if (!job) {
    return fail("job_not_found");
  }
  if (!holdsLease(job, agent, leaseId) || (job.state === "ended" && job.ended_by !== agent.id)) {
    return fail("lease_lost");
  }
  const row =
    job.state === "ended"
      ? job
      : ctx.store.jobs.end(
          job,
          {
            outcome: report.outcome,
            actor: agent.id,
            reason: report.message,
            exitCode: report.exitCode,
            planSummary: report.planSummary,
            forced: false,
          },
          ctx.now,
          false,
        ).row;
  const view = toJobView(row);
  const ending = endingOf(view);
  if (!ending) {
    throw new Error(`job ${jobId} finished without an ending`);
  }
  return ok({ job: view, ending });
}

/**
 * Cancels a job: a queued or unstarted one ends now; a started one is asked, or forced. The
 * ending, when this call made one, is answered for the caller to apply.
 */
export function cancel(
  ctx: OpsContext,
  jobId: string,
  force: boolean,
): Result<CancelOutcome, "not_found"> {
  const job = ctx.store.jobs.get(jobId);
  if (!job) {
    return fail("not_found");
  }
  const end =
    job.state === "queued" || job.state === "leased"
      ? systemEnd("canceled", "canceled before it started")
      : job.state === "started" && force
        ? systemEnd("canceled", forceCancelReason(ctx.store, job), true)
        : null;
  if (end) {
    const { ending, row } = ctx.store.jobs.end(job, end, ctx.now, false);
    return ok({ job: toJobView(row), ending });
  }
  if (job.state === "started" && job.cancel_requested_at === null) {
    ctx.store.jobs.requestCancel(jobId, ctx.now);
  }
  return ok({ job: toJobView(ctx.store.jobs.get(jobId) ?? job), ending: null });
}

/**
 * Why a started job was force-canceled: plainly "force-canceled" when its agent is online (it is
 * told to kill the engine), otherwise which agent held it and why it is not live, so the closing
 * line does not claim a process was killed by an agent already gone.
 */
function forceCancelReason(store: PoolStore, job: JobRow): string {
  const agent = job.agent_id ? store.agents.get(job.agent_id) : null;
  if (agent?.state === "online") {
    return FORCE_CANCELED;
  }
  if (!agent) {
    return "force-canceled; no live agent held it";
  }
  const why = agent.state_reason ? `: ${agent.state_reason}` : "";
  return `force-canceled; no live agent held it (agent ${agent.id} is ${agent.state}${why})`;
}

/**
 * A held poll ended. A hold that ran its course left the contact right (held until now); an
 * early answer, or another poll of the same agent still held, records the contact now.
 */
export function endHold(
  ctx: OpsContext,
  agentId: string,
  outcome: PollOutcome,
  stillHeld: boolean,
): void {
  const after = ctx.store.agents.get(agentId);
  if (after && (outcome.kind !== "none" || stillHeld)) {
    const holdUntil = stillHeld ? after.poll_held_until : null;
    ctx.store.agents.touch(after, ctx.now, holdUntil, ctx.settings);
  }
}
