/**
 * Rows of the AgentPool's SQLite storage and the single-statement reads and writes on them.
 * Every function is synchronous, so a caller's sequence of them runs inside one input gate and
 * lands as one implicit transaction.
 */
import type { AgentIsolation, JobPhase, PlanSummary } from "@outpost/protocol";
import type {
  AgentView,
  EndOutcome,
  JobEndedEvent,
  JobState,
  JobView,
  PoolSettings,
  QueuedJob,
} from "./pool-types.ts";
import {
  type AgentState,
  agentDueAt,
  agentStatus,
  assignRound,
  DEFAULT_POOL_SETTINGS,
  jobDueAt,
  mergeSettings,
  servedRound,
} from "./queue.ts";

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
};

/** The pool's settings as last configured, or the defaults. */
export function readSettings(sql: SqlStorage): PoolSettings {
  const row = sql
    .exec<{ value: string }>("SELECT value FROM settings WHERE key = 'pool'")
    .toArray()[0];
  return row ? mergeSettings(JSON.parse(row.value)) : { ...DEFAULT_POOL_SETTINGS };
}

/** Stores the settings and moves every deadline that depends on them. */
export function writeSettings(sql: SqlStorage, settings: PoolSettings): void {
  sql.exec(
    "INSERT INTO settings (key, value) VALUES ('pool', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
    JSON.stringify(settings),
  );
  for (const agent of sql.exec<AgentRow>("SELECT * FROM agents").toArray()) {
    setAgentDue(sql, agent, settings);
  }
  for (const job of sql.exec<JobRow>("SELECT * FROM jobs WHERE due_at IS NOT NULL").toArray()) {
    setJobDue(sql, job, settings);
  }
}

function nextSeq(sql: SqlStorage): number {
  const row = sql
    .exec<{ value: string | number }>(
      "INSERT INTO settings (key, value) VALUES ('seq', '1') ON CONFLICT (key) DO UPDATE SET value = CAST(value AS INTEGER) + 1 RETURNING value",
    )
    .one();
  return Number(row.value);
}

/** A job by id, in any state; null when the pool never saw it (or forgot it after 7 days). */
export function getJob(sql: SqlStorage, jobId: string): JobRow | null {
  return sql.exec<JobRow>("SELECT * FROM jobs WHERE job_id = ?", jobId).toArray()[0] ?? null;
}

/** Queues a new job at the back of its workspace's fair-share rounds. */
export function insertJob(sql: SqlStorage, job: QueuedJob, now: number): JobRow {
  const current =
    sql
      .exec<{ current_round: number }>(
        "SELECT current_round FROM class_rounds WHERE priority_class = ?",
        job.priorityClass,
      )
      .toArray()[0]?.current_round ?? 0;
  const workspaceNext =
    sql
      .exec<{ next_round: number }>(
        "SELECT next_round FROM workspace_rounds WHERE priority_class = ? AND workspace_id = ?",
        job.priorityClass,
        job.workspaceId,
      )
      .toArray()[0]?.next_round ?? null;
  const round = assignRound(workspaceNext, current);
  sql.exec(
    "INSERT INTO workspace_rounds (priority_class, workspace_id, next_round) VALUES (?, ?, ?) ON CONFLICT DO UPDATE SET next_round = excluded.next_round",
    job.priorityClass,
    job.workspaceId,
    round + 1,
  );
  sql.exec(
    `INSERT INTO jobs (job_id, run_id, workspace_id, org_id, phase, priority_class, spec, round, seq, state, enqueued_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'queued', ?)`,
    job.jobId,
    job.runId,
    job.workspaceId,
    job.orgId,
    job.phase,
    job.priorityClass,
    JSON.stringify(job.spec),
    round,
    nextSeq(sql),
    now,
  );
  const row = getJob(sql, job.jobId);
  if (!row) {
    throw new Error(`job ${job.jobId} vanished after insert`);
  }
  return row;
}

/**
 * The head of the queue among the given classes: one indexed lookup per class, so the cost is
 * O(log n) in the queue length whatever its size. Also reports the rows SQLite read.
 */
export function pickNext(
  sql: SqlStorage,
  classes: readonly number[],
): { job: JobRow | null; rowsRead: number } {
  let rowsRead = 0;
  for (const priorityClass of classes) {
    const cursor = sql.exec<JobRow>(
      "SELECT * FROM jobs WHERE state = 'queued' AND priority_class = ? ORDER BY round, seq LIMIT 1",
      priorityClass,
    );
    const job = cursor.toArray()[0] ?? null;
    rowsRead += cursor.rowsRead;
    if (job) {
      return { job, rowsRead };
    }
  }
  return { job: null, rowsRead };
}

/** Hands a queued job to an agent; the lease must be started before its deadline. */
export function leaseJob(
  sql: SqlStorage,
  job: JobRow,
  agentId: string,
  leaseId: string,
  now: number,
  settings: PoolSettings,
): JobRow {
  const due = jobDueAt({ ...toClock(job), state: "leased", leasedAt: now }, settings);
  sql.exec(
    "UPDATE jobs SET state = 'leased', agent_id = ?, lease_id = ?, leased_at = ?, due_at = ? WHERE job_id = ? AND state = 'queued'",
    agentId,
    leaseId,
    now,
    due,
    job.job_id,
  );
  const current =
    sql
      .exec<{ current_round: number }>(
        "SELECT current_round FROM class_rounds WHERE priority_class = ?",
        job.priority_class,
      )
      .toArray()[0]?.current_round ?? 0;
  sql.exec(
    "INSERT INTO class_rounds (priority_class, current_round) VALUES (?, ?) ON CONFLICT DO UPDATE SET current_round = excluded.current_round",
    job.priority_class,
    servedRound(current, job.round),
  );
  return { ...job, state: "leased", agent_id: agentId, lease_id: leaseId, leased_at: now };
}

/** Puts a leased, unstarted job back exactly where it was in the queue. */
export function requeueJob(sql: SqlStorage, jobId: string): void {
  sql.exec(
    "UPDATE jobs SET state = 'queued', agent_id = NULL, lease_id = NULL, leased_at = NULL, due_at = NULL WHERE job_id = ? AND state = 'leased'",
    jobId,
  );
}

/** Marks a leased job started; from now on only its agent, a timeout or a cancel ends it. */
export function startJob(sql: SqlStorage, job: JobRow, now: number, settings: PoolSettings): void {
  const due = jobDueAt({ ...toClock(job), state: "started", startedAt: now }, settings);
  sql.exec(
    "UPDATE jobs SET state = 'started', started_at = ?, reported_at = ?, due_at = ? WHERE job_id = ?",
    now,
    now,
    due,
    job.job_id,
  );
}

export type JobEnd = {
  outcome: EndOutcome;
  action: JobEndedEvent["action"];
  actor: string;
  reason: string | null;
  exitCode: number | null;
  planSummary: PlanSummary | null;
  forced: boolean;
  agentLost?: boolean;
};

/**
 * Ends a job and records the event for `onJobEnded` in the outbox, in the same transaction, so
 * the event is delivered at least once even if the object is evicted right after.
 */
export function endJob(sql: SqlStorage, job: JobRow, end: JobEnd, now: number): JobEndedEvent {
  const due = jobDueAt({ ...toClock(job), state: "ended", endedAt: now }, DEFAULT_POOL_SETTINGS);
  sql.exec(
    `UPDATE jobs SET state = 'ended', ended_at = ?, ended_by = ?, outcome = ?, exit_code = ?, reason = ?,
       plan_summary = ?, forced = ?, due_at = ? WHERE job_id = ?`,
    now,
    end.actor,
    end.outcome,
    end.exitCode,
    end.reason,
    end.planSummary ? JSON.stringify(end.planSummary) : null,
    end.forced ? 1 : 0,
    due,
    job.job_id,
  );
  const event: JobEndedEvent = {
    jobId: job.job_id,
    runId: job.run_id,
    workspaceId: job.workspace_id,
    orgId: job.org_id,
    phase: job.phase,
    outcome: end.outcome,
    action: end.action,
    actor: end.actor,
    agentId: job.agent_id,
    reason: end.reason,
    exitCode: end.exitCode,
    planSummary: end.planSummary,
    forced: end.forced,
    agentLost: end.agentLost ?? false,
    endedAt: now,
  };
  sql.exec("INSERT INTO outbox (event, next_attempt_at) VALUES (?, ?)", JSON.stringify(event), now);
  return event;
}

/** Recomputes a job's deadline from its state and the settings. */
export function setJobDue(sql: SqlStorage, job: JobRow, settings: PoolSettings): void {
  sql.exec(
    "UPDATE jobs SET due_at = ? WHERE job_id = ?",
    jobDueAt(toClock(job), settings),
    job.job_id,
  );
}

function toClock(job: JobRow) {
  return {
    state: job.state,
    phase: job.phase,
    leasedAt: job.leased_at,
    startedAt: job.started_at,
    endedAt: job.ended_at,
  };
}

/** The jobs an agent holds (leased or started), oldest first. */
export function agentJobs(sql: SqlStorage, agentId: string): JobRow[] {
  return sql
    .exec<JobRow>(
      "SELECT * FROM jobs WHERE agent_id = ? AND state IN ('leased', 'started') ORDER BY leased_at, seq",
      agentId,
    )
    .toArray();
}

/**
 * The agents that are offline (errored, exited) and not yet dropped, by id. Read through a
 * partial index, so it costs as many rows as there are such agents, not as many as are
 * registered or polling.
 */
export function offlineAgents(sql: SqlStorage): Map<string, AgentRow> {
  const rows = sql
    .exec<AgentRow>("SELECT * FROM agents WHERE state IN ('errored', 'exited')")
    .toArray();
  return new Map(rows.map((row) => [row.id, row]));
}

/** Each token's latest contact by any agent still registered with it (polls, heartbeats, calls). */
export function lastContactByToken(sql: SqlStorage): Record<string, number> {
  const rows = sql
    .exec<{ token_id: string; at: number }>(
      "SELECT token_id, MAX(last_contact_at) AS at FROM agents GROUP BY token_id",
    )
    .toArray();
  return Object.fromEntries(rows.map((row) => [row.token_id, row.at]));
}

/** Whether any job is queued: one lookup in the queue index. */
export function hasQueued(sql: SqlStorage): boolean {
  return sql.exec("SELECT 1 FROM jobs WHERE state = 'queued' LIMIT 1").toArray().length > 0;
}

/** An agent by id, whatever its state; null once dropped after the retention window. */
export function getAgent(sql: SqlStorage, agentId: string): AgentRow | null {
  return sql.exec<AgentRow>("SELECT * FROM agents WHERE id = ?", agentId).toArray()[0] ?? null;
}

/** Stores a newly registered agent with its first liveness deadline. */
export function insertAgent(sql: SqlStorage, agent: AgentRow, settings: PoolSettings): void {
  sql.exec(
    `INSERT INTO agents (id, token_id, name, version, os, arch, capacity, accepts, isolation, state,
       registered_at, last_contact_at, state_changed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    agent.id,
    agent.token_id,
    agent.name,
    agent.version,
    agent.os,
    agent.arch,
    agent.capacity,
    agent.accepts,
    agent.isolation,
    agent.state,
    agent.registered_at,
    agent.last_contact_at,
    agent.state_changed_at,
  );
  setAgentDue(sql, agent, settings);
}

/** Records contact: an unknown agent is online again. Offline agents are left as they are. */
export function touchAgent(
  sql: SqlStorage,
  agent: AgentRow,
  now: number,
  pollHeldUntil: number | null,
  settings: PoolSettings,
): AgentRow {
  if (agent.state !== "online" && agent.state !== "unknown") {
    return agent;
  }
  const touched = {
    ...agent,
    state: "online" as const,
    state_reason: null,
    last_contact_at: Math.max(agent.last_contact_at, now),
    poll_held_until: pollHeldUntil,
    state_changed_at: agent.state === "online" ? agent.state_changed_at : now,
  };
  const next: AgentRow = { ...touched, due_at: dueOf(touched, settings) };
  // One statement, row and deadline together: this runs on every poll.
  sql.exec(
    "UPDATE agents SET state = 'online', state_reason = NULL, last_contact_at = ?, poll_held_until = ?, state_changed_at = ?, due_at = ? WHERE id = ?",
    next.last_contact_at,
    next.poll_held_until,
    next.state_changed_at,
    next.due_at,
    agent.id,
  );
  return next;
}

/** Moves an agent to `state` as of `at`; a held poll no longer counts as contact. */
export function setAgentState(
  sql: SqlStorage,
  agent: AgentRow,
  state: AgentState,
  reason: string | null,
  at: number,
  settings: PoolSettings,
): AgentRow {
  const next: AgentRow = {
    ...agent,
    state,
    state_reason: reason,
    state_changed_at: at,
    poll_held_until: null,
  };
  sql.exec(
    "UPDATE agents SET state = ?, state_reason = ?, state_changed_at = ?, poll_held_until = NULL WHERE id = ?",
    state,
    reason,
    at,
    agent.id,
  );
  setAgentDue(sql, next, settings);
  return next;
}

function dueOf(agent: AgentRow, settings: PoolSettings): number {
  return agentDueAt(
    {
      state: agent.state,
      lastContactAt: agent.last_contact_at,
      pollHeldUntil: agent.poll_held_until,
      stateChangedAt: agent.state_changed_at,
    },
    settings,
  );
}

function setAgentDue(sql: SqlStorage, agent: AgentRow, settings: PoolSettings): void {
  sql.exec("UPDATE agents SET due_at = ? WHERE id = ?", dueOf(agent, settings), agent.id);
}

/** The earliest deadline of any row, or null when nothing is due ever. */
export function earliestDue(sql: SqlStorage): number | null {
  const row = sql
    .exec<{ due: number | null }>(
      `SELECT MIN(due) AS due FROM (
         SELECT MIN(due_at) AS due FROM agents WHERE due_at IS NOT NULL
         UNION ALL SELECT MIN(due_at) FROM jobs WHERE due_at IS NOT NULL
         UNION ALL SELECT MIN(next_attempt_at) FROM outbox)`,
    )
    .one();
  return row.due;
}

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
    outcome: row.outcome,
    exitCode: row.exit_code,
    reason: row.reason,
    planSummary: row.plan_summary ? (JSON.parse(row.plan_summary) as PlanSummary) : null,
  };
}

/** The phases an agent registered to accept. */
export function acceptedPhases(agent: AgentRow): JobPhase[] {
  return agent.accepts.split(",").filter((p): p is JobPhase => p === "plan" || p === "apply");
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
