import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";
import { UPDATE_STATES, type UpdateState } from "../update/updater.ts";
import type { AgentHealth } from "./health.ts";
import type { Operation } from "./operations.ts";

/** How a job ended on this agent: the finish outcomes, or `errored` when the runner broke. */
export type JobEnding = "succeeded" | "failed" | "canceled" | "errored";

/** Where an engine binary came from: the cache, the host's PATH, or a download. */
export type EngineSource = "cache" | "path" | "download";

export type AgentMetricsOptions = {
  version: string;
  /** Jobs this agent runs at once. */
  capacity: number;
  health: AgentHealth;
  /** The updater's state; absent when the agent has none. */
  updateState?: () => UpdateState;
};

const LINT_FAILING_DEFAULTS = [
  "nodejs_active_handles_total",
  "nodejs_active_requests_total",
  "nodejs_active_resources_total",
];

/** Seconds: a job takes from a second (a refused job) to the 24 h apply limit. */
const JOB_BUCKETS = [
  1, 5, 10, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200, 14_400, 43_200, 86_400,
];
/** A long-poll is held up to 50 s; short ones answered at once with a job. */
const POLL_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 40, 50, 60, 75];
const REQUEST_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
/** From a cache hit (milliseconds) to a slow mirror download (minutes). */
const INSTALL_BUCKETS = [0.01, 0.05, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];

/**
 * The agent's Prometheus metrics (`outpost_agent_*` and prom-client's process and Node.js
 * defaults) in one registry of its own. Label values come from fixed sets (phase, outcome,
 * operation, status code, engine, source, update state), never from ids or user input, so the
 * number of series stays bounded whatever the agent runs.
 */
export class AgentMetrics {
  readonly registry = new Registry();
  private readonly running: Gauge<"phase">;
  private readonly finished: Counter<"phase" | "outcome">;
  private readonly jobDuration: Histogram<"phase" | "outcome">;
  private readonly pollDuration: Histogram<"code">;
  private readonly requestDuration: Histogram<"operation" | "code">;
  private readonly engineInstall: Histogram<"engine" | "source">;

  constructor(options: AgentMetricsOptions) {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry });
    // Gauges named like counters: `promtool check metrics` refuses them, and `nodejs_active_*`
    // (by type) carry the same numbers.
    for (const name of LINT_FAILING_DEFAULTS) {
      this.registry.removeSingleMetric(name);
    }
    new Gauge({
      name: "outpost_agent_info",
      help: "The agent's version; always 1.",
      labelNames: ["version"],
      registers,
    }).set({ version: options.version }, 1);
    new Gauge({
      name: "outpost_agent_capacity",
      help: "Jobs this agent runs at once.",
      registers,
    }).set(options.capacity);
    this.running = new Gauge({
      name: "outpost_agent_jobs_running",
      help: "Jobs running on this agent, by phase.",
      labelNames: ["phase"],
      registers,
    });
    for (const phase of ["plan", "apply"]) {
      this.running.set({ phase }, 0);
    }
    this.finished = new Counter({
      name: "outpost_agent_jobs_finished_total",
      help: "Jobs that ended on this agent, by phase and outcome.",
      labelNames: ["phase", "outcome"],
      registers,
    });
    this.jobDuration = new Histogram({
      name: "outpost_agent_job_duration_seconds",
      help: "From a job's start to its end on this agent, by phase and outcome.",
      labelNames: ["phase", "outcome"],
      buckets: JOB_BUCKETS,
      registers,
    });
    this.pollDuration = new Histogram({
      name: "outpost_agent_poll_duration_seconds",
      help: "Long-polls for work (jobs/next), until the answer's headers, by HTTP status (error: no answer).",
      labelNames: ["code"],
      buckets: POLL_BUCKETS,
      registers,
    });
    this.requestDuration = new Histogram({
      name: "outpost_agent_request_duration_seconds",
      help: "Other requests to the coordinator, until the answer's headers, by operation and HTTP status (error: no answer).",
      labelNames: ["operation", "code"],
      buckets: REQUEST_BUCKETS,
      registers,
    });
    this.engineInstall = new Histogram({
      name: "outpost_agent_engine_install_duration_seconds",
      help: "Getting a job's engine binary ready, by engine and where it came from.",
      labelNames: ["engine", "source"],
      buckets: INSTALL_BUCKETS,
      registers,
    });
    this.healthGauges(options.health, registers);
    if (options.updateState) {
      this.updateGauge(options.updateState, registers);
    }
  }

  /** The Prometheus text exposition of every metric. */
  async text(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }

  jobStarted(phase: string): void {
    this.running.inc({ phase });
  }

  jobEnded(phase: string, outcome: JobEnding, seconds: number): void {
    this.running.dec({ phase });
    this.finished.inc({ phase, outcome });
    this.jobDuration.observe({ phase, outcome }, seconds);
  }

  /** One finished request; `code` is the HTTP status, or `error` when no answer came. */
  requestDone(operation: Operation, code: string, seconds: number): void {
    if (operation === "jobs_next") {
      this.pollDuration.observe({ code }, seconds);
    } else {
      this.requestDuration.observe({ operation, code }, seconds);
    }
  }

  engineInstalled(engine: string, source: EngineSource, seconds: number): void {
    this.engineInstall.observe({ engine, source }, seconds);
  }

  private healthGauges(health: AgentHealth, registers: Registry[]): void {
    new Gauge({
      name: "outpost_agent_ready",
      help: "1 while the agent is registered and in contact within the pool's unknown threshold (/readyz).",
      registers,
      collect() {
        this.set(health.readiness().isReady ? 1 : 0);
      },
    });
    new Gauge({
      name: "outpost_agent_last_contact_timestamp_seconds",
      help: "When the coordinator last answered this agent (a held long-poll counts until now); 0 before any answer.",
      registers,
      collect() {
        this.set((health.lastContact() ?? 0) / 1000);
      },
    });
  }

  private updateGauge(state: () => UpdateState, registers: Registry[]): void {
    new Gauge({
      name: "outpost_agent_update_state",
      help: "1 for the agent's update state: current, available (auto-update off), pending (updates once idle), failing (retried later).",
      labelNames: ["state"],
      registers,
      collect() {
        const now = state();
        for (const s of UPDATE_STATES) {
          this.set({ state: s }, s === now ? 1 : 0);
        }
      },
    });
  }
}
