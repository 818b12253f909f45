/**
 * The pool's jobs and their fair-share rounds. Each job state write is checked against the job
 * state machine (`queue.ts`); a refused one is a bug and throws.
 */
import type { PlanSummary } from "@outpost/protocol";
import type { PoolStore } from "./pool-store.ts";
import type { JobEndedEvent, QueuedJob } from "./pool-types.ts";
import { endingOf, type JobRow, toJobView } from "./pool-views.ts";
import {
  assignRound,
  canMoveJob,
  DEFAULT_POOL_SETTINGS,
  type JobState,
  jobDueAt,
  type PoolSettings,
  servedRound,
} from "./queue.ts";

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

export class JobsTable {
  constructor(private readonly store: PoolStore) {}

  private get sql(): SqlStorage {
    return this.store.sql;
  }

  /** A job by id, in any state; null when the pool never saw it (or forgot it after 7 days). */
  get(jobId: string): JobRow | null {
    return this.sql.exec<JobRow>("SELECT * FROM jobs WHERE job_id = ?", jobId).toArray()[0] ?? null;
  }

  /** Queues a new job at the back of its workspace's fair-share rounds. */
  insert(job: QueuedJob, now: number): JobRow {
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
    const seq = this.store.settings.nextSeq();
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

  /** Hands a queued job to an agent; the lease must be started before its deadline. */
  lease(job: JobRow, agentId: string, leaseId: string, now: number, settings: PoolSettings) {
    checkMove(job, "leased");
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
  requeue(job: JobRow): void {
    checkMove(job, "queued");
    this.sql.exec(
      "UPDATE jobs SET state = 'queued', agent_id = NULL, lease_id = NULL, leased_at = NULL, due_at = NULL WHERE job_id = ?",
      job.job_id,
    );
  }

  /** Marks a leased job started; from now on only its agent, a timeout or a cancel ends it. */
  start(job: JobRow, now: number, settings: PoolSettings): JobRow {
    checkMove(job, "started");
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

  /** A user asked to cancel the started job; its agent hears of it with its next heartbeat. */
  requestCancel(jobId: string, now: number): void {
    this.sql.exec("UPDATE jobs SET cancel_requested_at = ? WHERE job_id = ?", now, jobId);
  }

  /**
   * Ends a job and returns its ending. With `queue`, the ending is also written to the outbox in
   * the same transaction, so it reaches the `JOB_EVENTS` queue at least once even if the object
   * is evicted right after; without it, the caller that ended the job applies the ending.
   */
  end(
    job: JobRow,
    end: JobEnd,
    now: number,
    queue: boolean,
  ): { ending: JobEndedEvent; row: JobRow } {
    checkMove(job, "ended");
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
      this.store.outbox.add(event, now);
    }
    return { ending: event, row: ended };
  }

  /** The jobs an agent holds (leased or started), oldest first. */
  ofAgent(agentId: string): JobRow[] {
    return this.sql
      .exec<JobRow>(
        "SELECT * FROM jobs WHERE agent_id = ? AND state IN ('leased', 'started') ORDER BY leased_at, seq",
        agentId,
      )
      .toArray();
  }

  /** Every job that has not ended. */
  open(): JobRow[] {
    return this.sql.exec<JobRow>("SELECT * FROM jobs WHERE state <> 'ended'").toArray();
  }

  /** Jobs whose deadline has passed, earliest first. */
  due(now: number): JobRow[] {
    return this.sql
      .exec<JobRow>("SELECT * FROM jobs WHERE due_at <= ? ORDER BY due_at", now)
      .toArray();
  }

  /** Forgets an ended job (its retention passed). */
  forget(jobId: string): void {
    this.sql.exec("DELETE FROM jobs WHERE job_id = ? AND state = 'ended'", jobId);
  }

  /** Moves every pending deadline to what `settings` say. */
  reschedule(settings: PoolSettings): void {
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

  /** Forgets every job and every round (the pool was deleted). */
  deleteAll(): void {
    for (const table of ["jobs", "class_rounds", "workspace_rounds"]) {
      this.sql.exec(`DELETE FROM ${table}`);
    }
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
}

function checkMove(job: JobRow, to: JobState): void {
  if (!canMoveJob(job.state, to)) {
    throw new Error(`job ${job.job_id}: ${job.state} → ${to} is not a job transition`);
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
