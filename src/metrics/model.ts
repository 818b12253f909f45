/**
 * The coordinator's metrics, pure: which families `GET /metrics` answers, their labels and their
 * bucket bounds, built from what D1 and the pools' objects report. Every series carries the id of
 * its pool or workspace next to its name, so a renamed or re-created one is a new series and a
 * counter's series never decreases (docs/operations.md).
 */
import type { PoolReport } from "../../durable/pool-types.ts";
import { type AutoscalingSettings, autoscalingSignal } from "../pools/model.ts";
import type { HistogramSeries, Labels, MetricFamily, Sample } from "./exposition.ts";

/**
 * Bucket bounds in seconds. Fixed: the triggers of migration 0010 file each observation under
 * one of these bounds (a test checks that they agree), so changing them takes a migration.
 */
export const WAIT_BUCKETS_SECONDS = [
  0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600,
] as const;
export const DURATION_BUCKETS_SECONDS = [
  1, 5, 10, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200, 14400, 43200, 86400,
] as const;

const PHASES = ["plan", "apply"] as const;
const AGENT_STATUSES = ["idle", "busy", "unknown", "errored", "exited"] as const;

export type PoolInput = {
  id: string;
  name: string;
  settings: AutoscalingSettings;
  report: PoolReport;
};

/** Runs that ended in a workspace with one final status (`run_outcomes`). */
export type OutcomeRow = {
  workspaceId: string;
  workspaceName: string;
  outcome: string;
  count: number;
};

/** Observations of one bucket (not cumulative) and their sum (`job_timings`). */
export type TimingRow = {
  poolId: string;
  phase: "plan" | "apply";
  metric: "wait" | "duration";
  le: string;
  count: number;
  sumSeconds: number;
};

/** The last assessment of a workspace: whether it found drift. */
export type DriftRow = { workspaceId: string; workspaceName: string; drifted: boolean };

export type MetricsInput = {
  pools: readonly PoolInput[];
  outcomes: readonly OutcomeRow[];
  timings: readonly TimingRow[];
  drift: readonly DriftRow[];
  /** The scrape's time (ms since the epoch), for ages. */
  now: number;
};

const poolLabels = (pool: { id: string; name: string }): Labels => ({
  pool: pool.name,
  pool_id: pool.id,
});
const workspaceLabels = (row: { workspaceId: string; workspaceName: string }): Labels => ({
  workspace: row.workspaceName,
  workspace_id: row.workspaceId,
});

/** Every family, in a fixed order; a pool's series are present even when they are zero. */
export function buildFamilies(input: MetricsInput): MetricFamily[] {
  return [
    ...poolFamilies(input.pools, input.now),
    {
      type: "counter",
      name: "outpost_runs",
      help: "Runs that ended, by workspace and final status.",
      samples: input.outcomes.map((row) => ({
        labels: { ...workspaceLabels(row), outcome: row.outcome },
        value: row.count,
      })),
    },
    {
      type: "gauge",
      name: "outpost_workspace_drifted",
      help: "1 when the workspace's last assessment found drift, 0 when it found none.",
      samples: input.drift.map((row) => ({
        labels: workspaceLabels(row),
        value: row.drifted ? 1 : 0,
      })),
    },
    histogramFamily(
      "outpost_job_wait_seconds",
      "From a job's queueing to its start on an agent.",
      WAIT_BUCKETS_SECONDS,
      timingSeries(input.pools, input.timings, "wait", WAIT_BUCKETS_SECONDS),
    ),
    histogramFamily(
      "outpost_job_duration_seconds",
      "From a job's start on an agent to its end.",
      DURATION_BUCKETS_SECONDS,
      timingSeries(input.pools, input.timings, "duration", DURATION_BUCKETS_SECONDS),
    ),
  ];
}

function poolFamilies(pools: readonly PoolInput[], now: number): MetricFamily[] {
  const each = (f: (pool: PoolInput) => Sample[]) => pools.flatMap(f);
  return [
    {
      type: "gauge",
      name: "outpost_pool_jobs",
      help: "Jobs of the pool waiting for an agent (queued) and held by one (running).",
      samples: each((pool) =>
        PHASES.flatMap((phase) =>
          (["queued", "running"] as const).map((state) => ({
            labels: { ...poolLabels(pool), phase, state },
            value: pool.report.jobs[phase][state],
          })),
        ),
      ),
    },
    {
      type: "gauge",
      name: "outpost_pool_agents",
      help: "The pool's listed agents by status.",
      samples: each((pool) =>
        AGENT_STATUSES.map((status) => ({
          labels: { ...poolLabels(pool), status },
          value: pool.report.agents[status],
        })),
      ),
    },
    {
      type: "gauge",
      name: "outpost_pool_oldest_queued_job_age_seconds",
      help: "How long the longest-waiting queued job of the pool has waited; 0 when none waits.",
      unit: "seconds",
      samples: each((pool) => [
        { labels: poolLabels(pool), value: queuedAgeSeconds(pool.report, now) },
      ]),
    },
    {
      type: "gauge",
      name: "outpost_pool_desired_agents",
      help: "The agents the pool should have: desiredAgents of its autoscaling signal.",
      samples: each((pool) => [
        {
          labels: poolLabels(pool),
          value: autoscalingSignal(pool.settings, pool.report).desiredAgents,
        },
      ]),
    },
  ];
}

function queuedAgeSeconds(report: PoolReport, now: number): number {
  return report.oldestQueuedAt === null ? 0 : Math.max(0, now - report.oldestQueuedAt) / 1000;
}

function histogramFamily(
  name: string,
  help: string,
  bounds: readonly number[],
  series: HistogramSeries[],
): MetricFamily {
  return { type: "histogram", name, help, unit: "seconds", bounds, series };
}

/**
 * One series per pool and phase, zero-filled. A stored row is filed under the first bound at or
 * above its own, so rows of other bounds still land in a bucket that holds them.
 */
export function timingSeries(
  pools: readonly { id: string; name: string }[],
  rows: readonly TimingRow[],
  metric: TimingRow["metric"],
  bounds: readonly number[],
): HistogramSeries[] {
  return pools.flatMap((pool) =>
    PHASES.map((phase) => {
      const perBucket = bounds.map(() => 0);
      let count = 0;
      let sum = 0;
      for (const row of rows) {
        if (row.poolId !== pool.id || row.phase !== phase || row.metric !== metric) {
          continue;
        }
        const le = row.le === "+Inf" ? Number.POSITIVE_INFINITY : Number(row.le);
        const index = bounds.findIndex((bound) => le <= bound);
        if (index >= 0) {
          perBucket[index] = (perBucket[index] ?? 0) + row.count;
        }
        count += row.count;
        sum += row.sumSeconds;
      }
      let cumulative = 0;
      const buckets = perBucket.map((n) => {
        cumulative += n;
        return cumulative;
      });
      return { labels: { ...poolLabels(pool), phase }, buckets, count, sum };
    }),
  );
}
