/**
 * Read-only figures over the pool's jobs for its reports: the queue's size, its load by phase,
 * and a queued job's place. Each is one or two statements over the open jobs only.
 */
import type { JobPhase } from "@outpost/protocol";
import type { PoolStore } from "./pool-store.ts";
import type { JobRow } from "./pool-views.ts";

export class JobFigures {
  constructor(private readonly store: PoolStore) {}

  private get sql(): SqlStorage {
    return this.store.sql;
  }

  /** How many jobs wait in the queue, and how many are leased or started. */
  counts(): { queued: number; running: number } {
    return this.sql
      .exec<{ queued: number; running: number }>(
        `SELECT COALESCE(SUM(state = 'queued'), 0) AS queued,
           COALESCE(SUM(state IN ('leased', 'started')), 0) AS running
         FROM jobs WHERE state IN ('queued', 'leased', 'started')`,
      )
      .one();
  }

  /**
   * Queued and running (leased or started) jobs by phase, when the longest-waiting queued job was
   * queued, and how many agents hold a job: two statements over the open jobs only.
   */
  load(): {
    phases: { phase: JobPhase; queued: number; running: number; oldest_queued_at: number | null }[];
    holders: number;
  } {
    const phases = this.sql
      .exec<{ phase: JobPhase; queued: number; running: number; oldest_queued_at: number | null }>(
        `SELECT phase, COALESCE(SUM(state = 'queued'), 0) AS queued,
           COALESCE(SUM(state IN ('leased', 'started')), 0) AS running,
           MIN(CASE WHEN state = 'queued' THEN enqueued_at END) AS oldest_queued_at
         FROM jobs WHERE state IN ('queued', 'leased', 'started') GROUP BY phase`,
      )
      .toArray();
    const { holders } = this.sql
      .exec<{ holders: number }>(
        "SELECT COUNT(DISTINCT agent_id) AS holders FROM jobs WHERE state IN ('leased', 'started')",
      )
      .one();
    return { phases, holders };
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
}
