/**
 * Pure rules of an agent pool: queue order, the job and agent state machines, and every
 * deadline. No storage and no clock: the Durable Object passes `now` in. The object and the
 * reference model in the tests both follow these rules (docs/queue.md says them in words).
 */

import type { AgentStatus, JobPhase } from "@outpost/protocol";

/** Liveness and lease settings of one pool (the phase timeout travels with each job). */
export type PoolSettings = {
  unknownAfterMs: number;
  erroredAfterMs: number;
  retentionMs: number;
  leaseStartTimeoutMs: number;
};

export const DEFAULT_POOL_SETTINGS: PoolSettings = {
  unknownAfterMs: 30_000,
  erroredAfterMs: 5 * 60_000,
  retentionMs: 2 * 3_600_000,
  leaseStartTimeoutMs: 30_000,
};

export const HEARTBEAT_INTERVAL_SECONDS = 10;
/** Ended jobs are kept this long so a repeated enqueue of the same job id never runs it again. */
export const ENDED_JOB_RETENTION_MS = 7 * 24 * 3_600_000;
const OUTBOX_MAX_DELAY_MS = 10 * 60_000;

export type JobState = "queued" | "leased" | "started" | "ended";
export type AgentState = "online" | "unknown" | "errored" | "exited";

/**
 * The job state machine, from → the states it may move to. A lease not started goes back to
 * `queued`; a started job never does (no double apply): it can only end.
 */
const JOB_MOVES: Record<JobState, readonly JobState[]> = {
  queued: ["leased", "ended"],
  leased: ["queued", "started", "ended"],
  started: ["ended"],
  ended: [],
};

/** Whether a job may move `from → to`; every write of a job's state goes through it. */
export function canMoveJob(from: JobState, to: JobState): boolean {
  return JOB_MOVES[from].includes(to);
}

/** The queue classes an agent may take from, in the order they are served (apply first). */
export function classesForPhases(phases: readonly JobPhase[]): (0 | 1 | 2)[] {
  const classes: (0 | 1 | 2)[] = [];
  if (phases.includes("apply")) {
    classes.push(0);
  }
  if (phases.includes("plan")) {
    classes.push(1, 2);
  }
  return classes;
}

/**
 * The fair-share round of a newly queued job: one past the workspace's last job in this class,
 * but never behind the round being served now (a workspace that was idle joins the current round
 * rather than jumping ahead with credit it saved). Queue order is (class, round, arrival).
 */
export function assignRound(workspaceNextRound: number | null, currentRound: number): number {
  return Math.max(workspaceNextRound ?? 0, currentRound);
}

/** The round being served after a job of `jobRound` is taken from a class at `currentRound`. */
export function servedRound(currentRound: number, jobRound: number): number {
  return Math.max(currentRound, jobRound);
}

export type AgentClock = {
  state: AgentState;
  lastContactAt: number;
  /** A held long-poll keeps the agent in contact until it ends. */
  pollHeldUntil: number | null;
  stateChangedAt: number;
};

/** The last moment the agent is known to have been in contact (a held poll counts). */
export function effectiveContact(agent: AgentClock): number {
  return Math.max(agent.lastContactAt, agent.pollHeldUntil ?? 0);
}

/**
 * The agent's next liveness deadline: online → unknown, unknown → errored, and for an agent
 * that is offline (errored or exited) the moment it drops out of the registry.
 */
export function agentDueAt(agent: AgentClock, settings: PoolSettings): number {
  switch (agent.state) {
    case "online":
      return effectiveContact(agent) + settings.unknownAfterMs;
    case "unknown":
      return agent.stateChangedAt + settings.erroredAfterMs;
    case "errored":
    case "exited":
      return agent.lastContactAt + settings.retentionMs;
  }
}

/** What the alarm does to an agent whose deadline has passed. */
export function agentTransition(state: AgentState): "unknown" | "errored" | "drop" {
  return state === "online" ? "unknown" : state === "unknown" ? "errored" : "drop";
}

/** The status shown to users: online agents are busy while they hold any job. */
export function agentStatus(state: AgentState, activeJobs: number): AgentStatus {
  if (state === "online") {
    return activeJobs > 0 ? "busy" : "idle";
  }
  return state;
}

export type JobClock = {
  state: JobState;
  leasedAt: number | null;
  startedAt: number | null;
  endedAt: number | null;
  /** The job's phase timeout, fixed by the run service when it queued the job. */
  timeoutMs: number;
};

/**
 * The job's next deadline: a lease not started returns to the queue, a started job that runs
 * past its phase timeout errors, an ended job is forgotten. Queued jobs have none.
 */
export function jobDueAt(job: JobClock, settings: PoolSettings): number | null {
  switch (job.state) {
    case "queued":
      return null;
    case "leased":
      return (job.leasedAt ?? 0) + settings.leaseStartTimeoutMs;
    case "started":
      return (job.startedAt ?? 0) + job.timeoutMs;
    case "ended":
      return (job.endedAt ?? 0) + ENDED_JOB_RETENTION_MS;
  }
}

/**
 * Why a phase was stopped at its timeout. The pool and the reconciler both say it with this
 * function, so a run reads the same whichever of them got there first.
 */
export function phaseTimeoutReason(phase: JobPhase, timeoutMs: number): string {
  return `${phase} ran longer than its ${describeDuration(timeoutMs)} limit`;
}

/** A duration in the largest whole unit that states it exactly: "2 hours", "90 seconds". */
function describeDuration(ms: number): string {
  const units = [
    ["hour", 3_600_000],
    ["minute", 60_000],
  ] as const;
  for (const [name, size] of units) {
    if (ms >= size && ms % size === 0) {
      return `${ms / size} ${name}${ms === size ? "" : "s"}`;
    }
  }
  const seconds = Math.round(ms / 1000);
  return `${seconds} second${seconds === 1 ? "" : "s"}`;
}

/**
 * A started job the agent stopped listing in its heartbeats is treated as lost after this long;
 * the grace covers a heartbeat that was already in flight when the job started.
 */
export function unreportedGraceMs(settings: PoolSettings): number {
  return settings.unknownAfterMs;
}

/** Capped exponential backoff for handing a job-ended event to the queue again. */
export function outboxRetryDelayMs(attempts: number): number {
  return Math.min(OUTBOX_MAX_DELAY_MS, 1_000 * 2 ** Math.min(attempts, 20));
}

/** The pool settings with the pool's overrides applied; null means the default. */
export function mergeSettings(
  overrides: Partial<Record<keyof PoolSettings, number | null>>,
): PoolSettings {
  const merged = { ...DEFAULT_POOL_SETTINGS };
  for (const key of Object.keys(merged) as (keyof PoolSettings)[]) {
    const value = overrides[key];
    if (typeof value === "number" && Number.isFinite(value) && value > 0) {
      merged[key] = value;
    }
  }
  return merged;
}

/** Words for when an agent was last heard from, for failure reasons users read. */
export function describeLostAgent(
  agentId: string,
  name: string | null,
  lastContactAt: number,
): string {
  const who = name ? `${name} (${agentId})` : agentId;
  return `agent ${who} stopped responding; last contact ${new Date(lastContactAt).toISOString()}`;
}
