/**
 * The coordinator's exposition writer and metric families, pure, checked by the real promtool:
 * both formats, escaping of any pool or workspace name, counter and histogram naming per format,
 * and histograms built from stored buckets.
 */
import { describe, expect, it } from "vitest";
import type { PoolReport } from "../../durable/pool-types.ts";
import { formatExposition, type MetricFamily } from "../../src/metrics/exposition.ts";
import {
  buildFamilies,
  type MetricsInput,
  type TimingRow,
  timingSeries,
  WAIT_BUCKETS_SECONDS,
} from "../../src/metrics/model.ts";
import { promtool } from "./helpers/promtool.ts";

const NOW = Date.parse("2026-11-25T12:00:00Z");

const report: PoolReport = {
  agents: { idle: 1, busy: 2, unknown: 1, errored: 0, exited: 3 },
  agentsHoldingJobs: 3,
  jobs: { plan: { queued: 4, running: 2 }, apply: { queued: 1, running: 1 } },
  oldestQueuedAt: NOW - 42_500,
};

/** Every family with samples, names chosen to need escaping. */
const input: MetricsInput = {
  pools: [
    {
      id: "pool_aaaaaaaaaaaaaaaaaaaaaaaaaa",
      name: 'rack "7" \\ east\nwing',
      settings: { minAgents: 0, maxAgents: 4, jobsPerAgent: 2 },
      report,
    },
  ],
  outcomes: [
    { workspaceId: "ws_a", workspaceName: "prod", outcome: "applied", count: 12 },
    { workspaceId: "ws_a", workspaceName: "prod", outcome: "errored", count: 1 },
  ],
  timings: [
    {
      poolId: "pool_aaaaaaaaaaaaaaaaaaaaaaaaaa",
      phase: "plan",
      metric: "wait",
      le: "0.25",
      count: 3,
      sumSeconds: 0.4,
    },
    {
      poolId: "pool_aaaaaaaaaaaaaaaaaaaaaaaaaa",
      phase: "plan",
      metric: "wait",
      le: "+Inf",
      count: 1,
      sumSeconds: 7200,
    },
    {
      poolId: "pool_aaaaaaaaaaaaaaaaaaaaaaaaaa",
      phase: "apply",
      metric: "duration",
      le: "60",
      count: 2,
      sumSeconds: 75.5,
    },
  ],
  drift: [{ workspaceId: "ws_a", workspaceName: "prod", drifted: true }],
  now: NOW,
};

function lines(text: string, prefix: string): string[] {
  return text.split("\n").filter((l) => l.startsWith(prefix));
}

describe("buildFamilies", () => {
  it("writes each pool's gauges, zero-filled, with the autoscaling signal", () => {
    const text = formatExposition(buildFamilies(input), "text");
    const pool = 'pool="rack \\"7\\" \\\\ east\\nwing",pool_id="pool_aaaaaaaaaaaaaaaaaaaaaaaaaa"';
    expect(lines(text, "outpost_pool_jobs")).toEqual([
      `outpost_pool_jobs{${pool},phase="plan",state="queued"} 4`,
      `outpost_pool_jobs{${pool},phase="plan",state="running"} 2`,
      `outpost_pool_jobs{${pool},phase="apply",state="queued"} 1`,
      `outpost_pool_jobs{${pool},phase="apply",state="running"} 1`,
    ]);
    expect(lines(text, "outpost_pool_agents")).toEqual(
      ["idle 1", "busy 2", "unknown 1", "errored 0", "exited 3"].map((s) => {
        const [status, n] = s.split(" ");
        return `outpost_pool_agents{${pool},status="${status}"} ${n}`;
      }),
    );
    expect(lines(text, "outpost_pool_oldest")).toEqual([
      `outpost_pool_oldest_queued_job_age_seconds{${pool}} 42.5`,
    ]);
    // ceil((5 queued + 3 running) / 2 jobs per agent) = 4, within [0, 4].
    expect(lines(text, "outpost_pool_desired_agents")).toEqual([
      `outpost_pool_desired_agents{${pool}} 4`,
    ]);
    expect(lines(text, "outpost_runs_total")).toEqual([
      'outpost_runs_total{workspace="prod",workspace_id="ws_a",outcome="applied"} 12',
      'outpost_runs_total{workspace="prod",workspace_id="ws_a",outcome="errored"} 1',
    ]);
    expect(lines(text, "outpost_workspace_drifted")).toEqual([
      'outpost_workspace_drifted{workspace="prod",workspace_id="ws_a"} 1',
    ]);
  });

  it("builds cumulative histograms from stored buckets, one series per pool and phase", () => {
    const text = formatExposition(buildFamilies(input), "text");
    const plan = 'pool_id="pool_aaaaaaaaaaaaaaaaaaaaaaaaaa",phase="plan"';
    const wait = lines(text, "outpost_job_wait_seconds").filter((l) => l.includes(plan));
    expect(wait).toContain(
      `outpost_job_wait_seconds_bucket{pool="rack \\"7\\" \\\\ east\\nwing",${plan},le="0.1"} 0`,
    );
    expect(wait).toContain(
      `outpost_job_wait_seconds_bucket{pool="rack \\"7\\" \\\\ east\\nwing",${plan},le="0.25"} 3`,
    );
    expect(wait).toContain(
      `outpost_job_wait_seconds_bucket{pool="rack \\"7\\" \\\\ east\\nwing",${plan},le="3600"} 3`,
    );
    expect(wait).toContain(
      `outpost_job_wait_seconds_bucket{pool="rack \\"7\\" \\\\ east\\nwing",${plan},le="+Inf"} 4`,
    );
    expect(wait).toContain(
      `outpost_job_wait_seconds_count{pool="rack \\"7\\" \\\\ east\\nwing",${plan}} 4`,
    );
    expect(wait).toContain(
      `outpost_job_wait_seconds_sum{pool="rack \\"7\\" \\\\ east\\nwing",${plan}} 7200.4`,
    );
    // Two histograms × two phases, each with its bounds, +Inf, sum and count.
    expect(lines(text, "outpost_job_wait_seconds")).toHaveLength(
      2 * (WAIT_BUCKETS_SECONDS.length + 3),
    );
  });

  it("files a stored bucket of another bound under the first bound that holds it", () => {
    const pool = { id: "pool_x", name: "x" };
    const rows: TimingRow[] = [
      { poolId: "pool_x", phase: "plan", metric: "wait", le: "2", count: 5, sumSeconds: 9 },
      { poolId: "pool_x", phase: "plan", metric: "wait", le: "9999", count: 1, sumSeconds: 9999 },
      { poolId: "pool_y", phase: "plan", metric: "wait", le: "1", count: 7, sumSeconds: 7 },
    ];
    const [plan] = timingSeries([pool], rows, "wait", [1, 2.5, 5]);
    expect(plan).toEqual({
      labels: { pool: "x", pool_id: "pool_x", phase: "plan" },
      buckets: [0, 5, 5],
      count: 6,
      sum: 10008,
    });
  });
});

describe("formatExposition", () => {
  const families: MetricFamily[] = [
    {
      type: "counter",
      name: "demo_events",
      help: 'Say "hi"\\ now',
      samples: [{ labels: {}, value: 3 }],
    },
    {
      type: "histogram",
      name: "demo_seconds",
      help: "A histogram.",
      unit: "seconds",
      bounds: [0.5, 1, 2],
      series: [{ labels: { a: "b" }, buckets: [1, 2, 2], count: 3, sum: Number.POSITIVE_INFINITY }],
    },
    {
      type: "gauge",
      name: "demo_ratio",
      help: "A gauge.",
      samples: [{ labels: {}, value: Number.NaN }],
    },
  ];

  it("writes the text format: counters named with _total, no units, no EOF", () => {
    expect(formatExposition(families, "text")).toBe(
      [
        '# HELP demo_events_total Say "hi"\\\\ now',
        "# TYPE demo_events_total counter",
        "demo_events_total 3",
        "# HELP demo_seconds A histogram.",
        "# TYPE demo_seconds histogram",
        'demo_seconds_bucket{a="b",le="0.5"} 1',
        'demo_seconds_bucket{a="b",le="1"} 2',
        'demo_seconds_bucket{a="b",le="2"} 2',
        'demo_seconds_bucket{a="b",le="+Inf"} 3',
        'demo_seconds_sum{a="b"} +Inf',
        'demo_seconds_count{a="b"} 3',
        "# HELP demo_ratio A gauge.",
        "# TYPE demo_ratio gauge",
        "demo_ratio NaN",
        "",
      ].join("\n"),
    );
  });

  it("writes OpenMetrics 1.0: counter families without _total, units, float bounds, EOF", () => {
    expect(formatExposition(families, "openmetrics")).toBe(
      [
        '# HELP demo_events Say \\"hi\\"\\\\ now',
        "# TYPE demo_events counter",
        "demo_events_total 3",
        "# HELP demo_seconds A histogram.",
        "# TYPE demo_seconds histogram",
        "# UNIT demo_seconds seconds",
        'demo_seconds_bucket{a="b",le="0.5"} 1',
        'demo_seconds_bucket{a="b",le="1.0"} 2',
        'demo_seconds_bucket{a="b",le="2.0"} 2',
        'demo_seconds_bucket{a="b",le="+Inf"} 3',
        'demo_seconds_sum{a="b"} +Inf',
        'demo_seconds_count{a="b"} 3',
        "# HELP demo_ratio A gauge.",
        "# TYPE demo_ratio gauge",
        "demo_ratio NaN",
        "# EOF",
        "",
      ].join("\n"),
    );
  });

  it("refuses a bad metric or label name and a histogram whose buckets miss bounds", () => {
    const gauge = (name: string, labels: Record<string, string> = {}): MetricFamily => ({
      type: "gauge",
      name,
      help: "x",
      samples: [{ labels, value: 1 }],
    });
    expect(() => formatExposition([gauge("1bad")], "text")).toThrow(/invalid metric name/);
    expect(() => formatExposition([gauge("ok", { "bad-label": "x" })], "text")).toThrow(
      /invalid label name/,
    );
    const histogram: MetricFamily = {
      type: "histogram",
      name: "h",
      help: "x",
      bounds: [1, 2],
      series: [{ labels: {}, buckets: [1], count: 1, sum: 1 }],
    };
    expect(() => formatExposition([histogram], "text")).toThrow(/1 buckets for 2 bounds/);
  });
});

describe("promtool check metrics", () => {
  it("accepts the text format with nothing to report", async () => {
    const checked = await promtool(["check", "metrics"], {
      stdin: formatExposition(buildFamilies(input), "text"),
    });
    expect(checked, checked.output).toEqual({ code: 0, output: "" });
  });

  it("reads OpenMetrics as the text format: only the counter family, named the OpenMetrics way, is unknown to it", async () => {
    // promtool parses the text format only (prometheus/prometheus#8932): everything else of the
    // OpenMetrics answer passes its lint; the e2e test has a real Prometheus ingest it as OpenMetrics.
    const checked = await promtool(["check", "metrics"], {
      stdin: formatExposition(buildFamilies(input), "openmetrics"),
    });
    expect(checked.output.trim().split("\n")).toEqual(["outpost_runs_total no help text"]);
    expect(checked.code).toBe(3);
  });
});
