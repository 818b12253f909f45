/**
 * All of the AgentPool's SQL: its schema, settings, jobs, agents, fair-share rounds and outbox.
 * Every method is synchronous, so a caller's sequence of them runs inside one input gate and
 * lands as one implicit transaction. Job state changes are checked against the job state
 * machine (`queue.ts`); a refused one is a bug and throws.
 */
import type { PlanSummary } from "@outpost/protocol";
import type { JobEndedEvent, QueuedJob, RegisterInput } from "./pool-types.ts";
import { type AgentRow, endingOf, type JobRow, toJobView } from "./pool-views.ts";
import {
  type AgentState,
  agentDueAt,
  assignRound,
  canMoveJob,
  DEFAULT_POOL_SETTINGS,
  type JobState,
  jobDueAt,
  mergeSettings,
  type PoolSettings,
  servedRound,
} from "./queue.ts";
import { SCHEMA_STATEMENTS, SCHEMA_VERSION, UPGRADES } from "./schema.ts";

export type { AgentRow, JobRow } from "./pool-views.ts";

/** How a job ends: outcome, who ended it and what they said. */
export type JobEnd = {
  outcome: JobEndedEvent["outcome"];
  actor: string;
  reason: string | null;
  exitCode: number | null;
  planSummary: PlanSummary | null;
  forced: boolean;
  /** The pool ends a started job because its agent was lost. */
  agentLost?: boolean;
};

type OutboxRow = { id: number; event: string; attempts: number };

/** One listed agent's load: what "why does my job wait" weighs. */
export type AgentLoad = {
  state: AgentState;
  capacity: number;
  accepts: string;
  last_contact_at: number;
  held: number;
};

export class PoolStore {
  /**
   * False once a look at the outbox found nothing due, until an ending is queued or the alarm
   * runs: most changes then skip looking again.
   */
  eventsMayBeDue = true;
  private retired: boolean | undefined;

  constructor(private readonly sql: SqlStorage) {}

  /** Creates the schema, or brings storage written under an older version up to this one. */
  migrate(): void {
    const hadJobs = this.sql
      .exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'jobs'")
      .toArray().length;
    for (const statement of SCHEMA_STATEMENTS) {
      this.sql.exec(statement);
    }
    const stored = this.sql
      .exec<{ value: string }>("SELECT value FROM settings WHERE key = 'schema_version'")
      .toArray()[0];
    const from = stored ? Number(stored.value) : hadJobs ? 2 : SCHEMA_VERSION;
    for (let version = from + 1; version <= SCHEMA_VERSION; version++) {
      for (const statement of UPGRADES[version] ?? []) {
        this.sql.exec(statement);
      }
    }
    this.setValue("schema_version", String(SCHEMA_VERSION));
  }

  // --- settings and the pool's own marks ---------------------------------------------------

  /** The pool's settings as last configured, or the defaults. */
  readSettings(): PoolSettings {
    const value = this.value("pool");
    return value ? mergeSettings(JSON.parse(value)) : { ...DEFAULT_POOL_SETTINGS };
  }

  /** Stores the settings and moves every deadline that depends on them. */
  writeSettings(settings: PoolSettings): void {
    this.setValue("pool", JSON.stringify(settings));
    for (const agent of this.sql.exec<AgentRow>("SELECT * FROM agents").toArray()) {
      this.setAgentDue(agent, settings);
    }
    for (const job of this.sql
      .exec<JobRow>("SELECT * FROM jobs WHERE due_at IS NOT NULL")
      .toArray()) {
      this.sql.exec(
        "UPDATE jobs SET due_at = ? WHERE job_id = ?",
        jobDueAt(clockOf(job), settings),
        job.job_id,
      );
    }
  }

  /** Whether the pool was deleted; read once, then kept (only `retire` changes it). */
  isRetired(): boolean {
    this.retired ??= this.value("retired") !== null;
    return this.retired;
  }

  /** Marks the pool deleted and empties it, keeping only the events still to be sent. */
  retire(): void {
    this.retired = true;
    this.setValue("retired", "1");
    for (const table of ["agents", "jobs", "class_rounds", "workspace_rounds"]) {
      this.sql.exec(`DELETE FROM ${table}`);
    }
  }

  private value(key: string): string | null {
    return (
      this.sql.exec<{ value: string }>("SELECT value FROM settings WHERE key = ?", key).toArray()[0]
        ?.value ?? null
    );
  }

  private setValue(key: string, value: string): void {
    this.sql.exec(
      "INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
      key,
      value,
    );
  }

  // --- jobs --------------------------------------------------------------------------------

  /** A job by id, in any state; null when the pool never saw it (or forgot it after 7 days). */
  getJob(jobId: string): JobRow | null {
    return this.sql.exec<JobRow>("SELECT * FROM jobs WHERE job_id = ?", jobId).toArray()[0] ?? null;
  }

  /** Queues a new job at the back of its workspace's fair-share rounds. */
  insertJob(job: QueuedJob, now: number): JobRow {
    const rounds = this.sql
      .exec<{ current: number | null; next: number | null }>(
        `SELECT (SELECT current_round FROM class_rounds WHERE priority_class = ?1) AS current,
           (SELECT next_round FROM workspace_rounds WHERE priority_class = ?1 AND workspace_id = ?2) AS next`,
        job.priorityClass,
        job.workspaceId,
      )
      .one();
    const round = assignRound(rounds.next, rounds.current ?? 0);
    this.sql.exec(
      "INSERT INTO workspace_rounds (priority_class, workspace_id, next_round) VALUES (?, ?, ?) ON CONFLICT DO UPDATE SET next_round = excluded.next_round",
      job.priorityClass,
      job.workspaceId,
      round + 1,
    );
    const seq = Number(
      this.sql
        .exec<{ value: string | number }>(
          "INSERT INTO settings (key, value) VALUES ('seq', '1') ON CONFLICT (key) DO UPDATE SET value = CAST(value AS INTEGER) + 1 RETURNING value",
        )
        .one().value,
    );
    return this.sql
      .exec<JobRow>(
        `INSERT INTO jobs (job_id, run_id, workspace_id, org_id, phase, priority_class, spec, round, seq, state, enqueued_at, timeout_ms)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'queued', ?, ?) RETURNING *`,
        job.jobId,
        job.runId,
        job.workspaceId,
        job.orgId,
        job.phase,
        job.priorityClass,
        JSON.stringify(job.spec),
        round,
        seq,
        now,
        job.timeoutMs,
      )
      .one();
  }

  /**
   * The head of the queue among the given classes: one indexed lookup, so the cost is O(log n)
   * in the queue length whatever its size. Also reports the rows SQLite read.
   */
  pickNext(classes: readonly number[]): { job: JobRow | null; rowsRead: number } {
    if (classes.length === 0) {
      return { job: null, rowsRead: 0 };
    }
    const cursor = this.sql.exec<JobRow>(
      `SELECT * FROM jobs WHERE state = 'queued' AND priority_class IN (${classes.map(() => "?").join(", ")})
       ORDER BY priority_class, round, seq LIMIT 1`,
      ...classes,
    );
    const job = cursor.toArray()[0] ?? null;
    return { job, rowsRead: cursor.rowsRead };
  }

  /** Whether any job is queued: one lookup in the queue index. */
  hasQueued(): boolean {
    return this.sql.exec("SELECT 1 FROM jobs WHERE state = 'queued' LIMIT 1").toArray().length > 0;
  }

  /** How many jobs wait in the queue, and how many are leased or started. */
  jobCounts(): { queued: number; running: number } {
    return this.sql
      .exec<{ queued: number; running: number }>(
        `SELECT COALESCE(SUM(state = 'queued'), 0) AS queued,
           COALESCE(SUM(state IN ('leased', 'started')), 0) AS running
         FROM jobs WHERE state IN ('queued', 'leased', 'started')`,
      )
      .one();
  }

  /** Where a queued job stands: how many queued jobs are ahead of it, and how many are queued. */
  queuePosition(job: JobRow): { ahead: number; length: number } {
    return this.sql
      .exec<{ ahead: number; length: number }>(
        `SELECT COUNT(*) AS length,
           COALESCE(SUM((priority_class, round, seq) < (?, ?, ?)), 0) AS ahead
         FROM jobs WHERE state = 'queued'`,
        job.priority_class,
        job.round,
        job.seq,
      )
      .one();
  }

  /** Hands a queued job to an agent; the lease must be started before its deadline. */
  leaseJob(job: JobRow, agentId: string, leaseId: string, now: number, settings: PoolSettings) {
    this.checkMove(job, "leased");
    const due = jobDueAt({ ...clockOf(job), state: "leased", leasedAt: now }, settings);
    this.sql.exec(
      "UPDATE jobs SET state = 'leased', agent_id = ?, lease_id = ?, leased_at = ?, due_at = ? WHERE job_id = ?",
      agentId,
      leaseId,
      now,
      due,
      job.job_id,
    );
    this.sql.exec(
      "INSERT INTO class_rounds (priority_class, current_round) VALUES (?, ?) ON CONFLICT DO UPDATE SET current_round = excluded.current_round",
      job.priority_class,
      servedRound(this.currentRound(job.priority_class), job.round),
    );
  }

  /** Puts a leased, unstarted job back exactly where it was in the queue. */
  requeueJob(job: JobRow): void {
    this.checkMove(job, "queued");
    this.sql.exec(
      "UPDATE jobs SET state = 'queued', agent_id = NULL, lease_id = NULL, leased_at = NULL, due_at = NULL WHERE job_id = ?",
      job.job_id,
    );
  }

  /** Marks a leased job started; from now on only its agent, a timeout or a cancel ends it. */
  startJob(job: JobRow, now: number, settings: PoolSettings): JobRow {
    this.checkMove(job, "started");
    const due = jobDueAt({ ...clockOf(job), state: "started", startedAt: now }, settings);
    return this.sql
      .exec<JobRow>(
        "UPDATE jobs SET state = 'started', started_at = ?, reported_at = ?, due_at = ? WHERE job_id = ? RETURNING *",
        now,
        now,
        due,
        job.job_id,
      )
      .one();
  }

  /** A heartbeat listed the started job: it is still running on its agent. */
  recordReport(jobId: string, now: number): void {
    this.sql.exec("UPDATE jobs SET reported_at = ? WHERE job_id = ?", now, jobId);
  }

  requestCancel(jobId: string, now: number): void {
    this.sql.exec("UPDATE jobs SET cancel_requested_at = ? WHERE job_id = ?", now, jobId);
  }

  /**
   * Ends a job and returns its ending. With `queue`, the ending is also written to the outbox in
   * the same transaction, so it reaches the `JOB_EVENTS` queue at least once even if the object
   * is evicted right after; without it, the caller that ended the job applies the ending.
   */
  endJob(
    job: JobRow,
    end: JobEnd,
    now: number,
    queue: boolean,
  ): { ending: JobEndedEvent; row: JobRow } {
    this.checkMove(job, "ended");
    const ended = this.sql
      .exec<JobRow>(
        `UPDATE jobs SET state = 'ended', ended_at = ?, ended_by = ?, outcome = ?, exit_code = ?, reason = ?,
           plan_summary = ?, forced = ?, agent_lost = ?, due_at = ? WHERE job_id = ? RETURNING *`,
        now,
        end.actor,
        end.outcome,
        end.exitCode,
        end.reason,
        end.planSummary ? JSON.stringify(end.planSummary) : null,
        end.forced ? 1 : 0,
        end.agentLost ? 1 : 0,
        jobDueAt({ ...clockOf(job), state: "ended", endedAt: now }, DEFAULT_POOL_SETTINGS),
        job.job_id,
      )
      .one();
    const event = endingOf(toJobView(ended));
    if (!event) {
      throw new Error(`job ${job.job_id} has no ending after it ended`);
    }
    if (queue) {
      this.eventsMayBeDue = true;
      this.sql.exec(
        "INSERT INTO outbox (event, next_attempt_at) VALUES (?, ?)",
        JSON.stringify(event),
        now,
      );
    }
    return { ending: event, row: ended };
  }

  /** The jobs an agent holds (leased or started), oldest first. */
  agentJobs(agentId: string): JobRow[] {
    return this.sql
      .exec<JobRow>(
        "SELECT * FROM jobs WHERE agent_id = ? AND state IN ('leased', 'started') ORDER BY leased_at, seq",
        agentId,
      )
      .toArray();
  }

  /** Every job that has not ended. */
  openJobs(): JobRow[] {
    return this.sql.exec<JobRow>("SELECT * FROM jobs WHERE state <> 'ended'").toArray();
  }

  /** Jobs whose deadline has passed, earliest first. */
  dueJobs(now: number): JobRow[] {
    return this.sql
      .exec<JobRow>("SELECT * FROM jobs WHERE due_at <= ? ORDER BY due_at", now)
      .toArray();
  }

  /** Forgets an ended job (its retention passed). */
  forgetJob(jobId: string): void {
    this.sql.exec("DELETE FROM jobs WHERE job_id = ? AND state = 'ended'", jobId);
  }

  private currentRound(priorityClass: number): number {
    return (
      this.sql
        .exec<{ current_round: number }>(
          "SELECT current_round FROM class_rounds WHERE priority_class = ?",
          priorityClass,
        )
        .toArray()[0]?.current_round ?? 0
    );
  }

  private checkMove(job: JobRow, to: JobState): void {
    if (!canMoveJob(job.state, to)) {
      throw new Error(`job ${job.job_id}: ${job.state} → ${to} is not a job transition`);
    }
  }

  // --- agents ------------------------------------------------------------------------------

  /** An agent by id, whatever its state; null once dropped after the retention window. */
  getAgent(agentId: string): AgentRow | null {
    return (
      this.sql.exec<AgentRow>("SELECT * FROM agents WHERE id = ?", agentId).toArray()[0] ?? null
    );
  }

  /** Stores a newly registered agent, online from `now`, with its first liveness deadline. */
  insertAgent(id: string, input: RegisterInput, now: number, settings: PoolSettings): void {
    const row: AgentRow = {
      id,
      token_id: input.tokenId,
      name: input.name,
      version: input.version,
      os: input.os,
      arch: input.arch,
      capacity: input.capacity,
      accepts: input.acceptedPhases.join(","),
      isolation: input.isolation ?? null,
      state: "online",
      state_reason: null,
      registered_at: now,
      last_contact_at: now,
      poll_held_until: null,
      state_changed_at: now,
      due_at: null,
    };
    this.sql.exec(
      `INSERT INTO agents (id, token_id, name, version, os, arch, capacity, accepts, isolation, state,
         registered_at, last_contact_at, state_changed_at, due_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      row.id,
      row.token_id,
      row.name,
      row.version,
      row.os,
      row.arch,
      row.capacity,
      row.accepts,
      row.isolation,
      row.state,
      row.registered_at,
      row.last_contact_at,
      row.state_changed_at,
      dueOf(row, settings),
    );
  }

  /** Records contact: an unknown agent is online again. Offline agents are left as they are. */
  touchAgent(
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
    this.sql.exec(
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
  setAgentState(
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
    next.due_at = dueOf(next, settings);
    this.sql.exec(
      "UPDATE agents SET state = ?, state_reason = ?, state_changed_at = ?, poll_held_until = NULL, due_at = ? WHERE id = ?",
      state,
      reason,
      at,
      next.due_at,
      agent.id,
    );
    return next;
  }

  dropAgent(agentId: string): void {
    this.sql.exec("DELETE FROM agents WHERE id = ?", agentId);
  }

  /** Agents whose deadline has passed, earliest first. */
  dueAgents(now: number): AgentRow[] {
    return this.sql
      .exec<AgentRow>("SELECT * FROM agents WHERE due_at <= ? ORDER BY due_at", now)
      .toArray();
  }

  /** Every agent still in the registry, in registration order. */
  allAgents(): AgentRow[] {
    return this.sql.exec<AgentRow>("SELECT * FROM agents ORDER BY registered_at, id").toArray();
  }

  /** The online or unknown agents registered with a token. */
  liveAgentsOfToken(tokenId: string): AgentRow[] {
    return this.sql
      .exec<AgentRow>(
        "SELECT * FROM agents WHERE token_id = ? AND state IN ('online', 'unknown') ORDER BY registered_at, id",
        tokenId,
      )
      .toArray();
  }

  /**
   * The agents that are offline (errored, exited) and not yet dropped, by id. Read through a
   * partial index, so it costs as many rows as there are such agents, not as many as are
   * registered or polling.
   */
  offlineAgents(): Map<string, AgentRow> {
    const rows = this.sql
      .exec<AgentRow>("SELECT * FROM agents WHERE state IN ('errored', 'exited')")
      .toArray();
    return new Map(rows.map((row) => [row.id, row]));
  }

  /**
   * Every agent still listed (online or unknown, or offline within `retentionMs` of its last
   * contact) with the jobs it holds: one statement, however many agents there are.
   */
  agentLoads(now: number, retentionMs: number): AgentLoad[] {
    return this.sql
      .exec<AgentLoad>(
        `SELECT a.state, a.capacity, a.accepts, a.last_contact_at,
           (SELECT COUNT(*) FROM jobs j WHERE j.agent_id = a.id AND j.state IN ('leased', 'started')) AS held
         FROM agents a WHERE a.state IN ('online', 'unknown') OR a.last_contact_at + ? > ?`,
        retentionMs,
        now,
      )
      .toArray();
  }

  /** Each token's latest contact by any agent still registered with it. */
  lastContactByToken(): Record<string, number> {
    const rows = this.sql
      .exec<{ token_id: string; at: number }>(
        "SELECT token_id, MAX(last_contact_at) AS at FROM agents GROUP BY token_id",
      )
      .toArray();
    return Object.fromEntries(rows.map((row) => [row.token_id, row.at]));
  }

  private setAgentDue(agent: AgentRow, settings: PoolSettings): void {
    this.sql.exec("UPDATE agents SET due_at = ? WHERE id = ?", dueOf(agent, settings), agent.id);
  }

  // --- outbox and the alarm ----------------------------------------------------------------

  /**
   * Claims up to `limit` due events for sending (oldest first): each is not due again for
   * `claimMs`, so a send that never returns is retried, and one in flight is not sent twice.
   */
  claimEvents(now: number, claimMs: number, limit: number): OutboxRow[] {
    if (!this.eventsMayBeDue) {
      return [];
    }
    const rows = this.sql
      .exec<OutboxRow>(
        "SELECT id, event, attempts FROM outbox WHERE next_attempt_at <= ? ORDER BY id LIMIT ?",
        now,
        limit,
      )
      .toArray();
    if (rows.length === 0) {
      this.eventsMayBeDue = false;
    }
    for (const row of rows) {
      this.sql.exec(
        "UPDATE outbox SET attempts = attempts + 1, next_attempt_at = ? WHERE id = ?",
        now + claimMs,
        row.id,
      );
    }
    return rows;
  }

  /** The events were handed to the queue. */
  deleteEvents(ids: readonly number[]): void {
    for (const id of ids) {
      this.sql.exec("DELETE FROM outbox WHERE id = ?", id);
    }
  }

  /** A send failed: try these events again at `at`. */
  retryEvents(ids: readonly number[], at: number): void {
    for (const id of ids) {
      this.sql.exec("UPDATE outbox SET next_attempt_at = ? WHERE id = ?", at, id);
    }
  }

  /** The earliest deadline of any row, or null when nothing is due ever. */
  earliestDue(): number | null {
    return this.sql
      .exec<{ due: number | null }>(
        `SELECT MIN(due) AS due FROM (
           SELECT MIN(due_at) AS due FROM agents WHERE due_at IS NOT NULL
           UNION ALL SELECT MIN(due_at) FROM jobs WHERE due_at IS NOT NULL
           UNION ALL SELECT MIN(next_attempt_at) FROM outbox)`,
      )
      .one().due;
  }
}

function clockOf(job: JobRow) {
  return {
    state: job.state,
    leasedAt: job.leased_at,
    startedAt: job.started_at,
    endedAt: job.ended_at,
    timeoutMs: job.timeout_ms,
  };
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
