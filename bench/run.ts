/**
 * `npm run bench [-- --quick] [-- --out results.json] [-- --only throughput,state]`: starts the
 * real coordinator on loopback
 * with fresh state (through the counting entry), drives it with HTTP clients speaking the agent
 * protocol, and prints a short table on stderr and the JSON results on stdout. Every figure is
 * the median over rounds with the lowest and highest round, beside same-run baselines.
 */
import { writeFile } from "node:fs/promises";
import os from "node:os";
import { parseArgs } from "node:util";
import { ProtocolAgent, UserApi } from "./lib/client.ts";
import { monthlyCost } from "./lib/cost.ts";
import {
  type Baseline,
  baseline,
  costPerRun,
  cronCost,
  dispatchLatency,
  emptyPollCost,
  idleAgents,
  logs,
  stateTimes,
  throughput,
} from "./lib/scenarios.ts";
import { startBenchCoordinator } from "./lib/setup.ts";
import { round } from "./lib/stats.ts";

const { values } = parseArgs({
  options: {
    quick: { type: "boolean", default: false },
    agents: { type: "string" },
    "idle-cycles": { type: "string" },
    out: { type: "string" },
    /** Comma-separated scenarios to run (dispatch, throughput, logs, state, cost, idle); all by default. */
    only: { type: "string" },
  },
});
const SCENARIOS = ["dispatch", "throughput", "logs", "state", "cost", "idle"] as const;
const only = values.only?.split(",").map((s) => s.trim());
for (const name of only ?? []) {
  if (!(SCENARIOS as readonly string[]).includes(name)) {
    throw new Error(`--only: unknown scenario ${name}; choose from ${SCENARIOS.join(", ")}`);
  }
}
const wants = (name: (typeof SCENARIOS)[number]) => only === undefined || only.includes(name);
const quick = values.quick ?? false;
const MB = 1024 * 1024;
const sizes = {
  dispatchAgents: (values.agents ?? (quick ? "1,50" : "1,100,1000")).split(",").map(Number),
  dispatchRounds: 3,
  dispatchPerRound: quick ? 6 : 15,
  throughputRuns: quick ? 16 : 48,
  throughputRounds: quick ? 2 : 3,
  throughputAgents: 16,
  idleAgents: quick ? 20 : 100,
  // Default: the agents' real 50 s long-poll over two whole cycles. Quick: 10 s polls over two
  // cycles, scaled to the real cadence (time-driven writes, such as a token's last use once a
  // minute, only show in the default run).
  idlePollSeconds: quick ? 10 : 50,
  idleCycles: Number(values["idle-cycles"] ?? 2),
  emptyPolls: quick ? 20 : 100,
  logRounds: quick ? 2 : 3,
  logBytes: (quick ? 4 : 16) * MB,
  logChunk: 1 * MB,
  logLatencyChunks: quick ? 10 : 20,
  stateSizes: [1 * MB, 10 * MB],
  stateRounds: quick ? 2 : 3,
  costRuns: quick ? 3 : 10,
};

const started = Date.now();
const log = (msg: string) =>
  process.stderr.write(`[bench ${((Date.now() - started) / 1000).toFixed(1)}s] ${msg}\n`);

const bench = await startBenchCoordinator({ MAX_QUEUED_RUNS_PER_ORG: "100000" });
// An interrupted bench still stops the runtime it started and removes its state.
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    void bench.close().finally(() => process.exit(130));
  });
}
try {
  const owner = await bench.coordinator.bootstrap("bench");
  const api = new UserApi(bench.coordinator.url, owner);
  const base = await api.pool("baseline");
  const probe = new ProtocolAgent(api.url, base.agentToken);
  await probe.register("baseline");
  const withBaseline = async <T>(what: string, task: () => Promise<T>) => {
    log(what);
    const before = await baseline(api.url, probe);
    const result = await task();
    return { result, baseline: before, ratios: ratiosOf(result, before) };
  };

  const dispatch = [];
  for (const n of wants("dispatch") ? sizes.dispatchAgents : []) {
    dispatch.push(
      await withBaseline(`dispatch latency, ${n} agents`, () =>
        dispatchLatency(api, n, sizes.dispatchRounds, sizes.dispatchPerRound),
      ),
    );
  }
  const cycles = [];
  for (const pools of wants("throughput") ? [1, 8] : []) {
    cycles.push(
      await withBaseline(`full-cycle throughput, ${pools} pool(s)`, () =>
        throughput(
          api,
          pools,
          sizes.throughputAgents,
          sizes.throughputRuns,
          sizes.throughputRounds,
          "t",
          bench,
        ),
      ),
    );
  }
  const logResult = wants("logs")
    ? await withBaseline("log ingestion and end-to-end latency", () =>
        logs(api, sizes.logRounds, sizes.logBytes, sizes.logChunk, sizes.logLatencyChunks),
      )
    : undefined;
  const state = wants("state")
    ? await withBaseline("state writes and reads", () =>
        stateTimes(api, sizes.stateSizes, sizes.stateRounds),
      )
    : undefined;
  let costs: Parameters<typeof monthlyCost>[0] | undefined;
  if (wants("cost")) {
    log("cost per run");
    const perRun = await costPerRun(bench, api, sizes.costRuns);
    log("cost per empty poll (a polling design)");
    const perPoll = await emptyPollCost(bench, api, sizes.emptyPolls);
    log("cost per cron invocation");
    const perCron = await cronCost(bench, 5);
    costs = { perRun, perPoll, perCron, idle: {} };
  }
  let idle: Awaited<ReturnType<typeof idleAgents>> | undefined;
  if (wants("idle")) {
    log(
      `idle agents: ${sizes.idleAgents}, ${sizes.idleCycles} cycles of ${sizes.idlePollSeconds} s`,
    );
    idle = await idleAgents(bench, api, sizes.idleAgents, sizes.idleCycles, sizes.idlePollSeconds);
  }

  const results = {
    command: `npm run bench${quick || values.only ? " --" : ""}${quick ? " --quick" : ""}${values.only ? ` --only ${values.only}` : ""}`,
    date: new Date().toISOString(),
    durationSeconds: round((Date.now() - started) / 1000, 1),
    machine: {
      cpu: os.cpus()[0]?.model ?? "unknown",
      cores: os.cpus().length,
      memoryGB: round(os.totalmem() / 1024 ** 3, 1),
      os: `${os.type()} ${os.release()} ${os.arch()}`,
      node: process.version,
    },
    sizes,
    dispatch,
    throughput: cycles,
    logs: logResult,
    state,
    idle,
    costPerRun: costs?.perRun,
    costPerEmptyPoll: costs?.perPoll,
    costPerCron: costs?.perCron,
    monthly: costs && idle ? monthlyCost({ ...costs, idle: idle.perAgentHour }) : undefined,
  };
  printTable(results);
  const json = JSON.stringify(results, null, 2);
  if (values.out) {
    await writeFile(values.out, `${json}\n`);
  }
  process.stdout.write(`${json}\n`);
} finally {
  await bench.close();
}

type Shown = { median: number; min: number; max: number };

/**
 * Every millisecond figure (a key ending in `Ms` holding a median, or under `endToEndMs`) divided
 * by both baselines, keyed by its path in the result.
 */
function ratiosOf(
  result: unknown,
  base: Baseline,
): Record<string, { toWorker: number; toDurableObject: number }> {
  const out: Record<string, { toWorker: number; toDurableObject: number }> = {};
  const walk = (value: unknown, path: string, inMs: boolean) => {
    if (!value || typeof value !== "object") {
      return;
    }
    const record = value as Record<string, unknown>;
    if (inMs && typeof record.median === "number") {
      out[path] = {
        toWorker: round(record.median / base.workerMs, 1),
        toDurableObject: round(record.median / base.durableObjectMs, 1),
      };
      return;
    }
    for (const [key, child] of Object.entries(record)) {
      const name = path ? `${path}.${key}` : key;
      walk(child, name, inMs || key.endsWith("Ms"));
    }
  };
  walk(result, "", false);
  return out;
}

function printTable(r: {
  dispatch: {
    result: { agents: number; p50Ms: Shown; p99Ms: Shown; maxMs: Shown; firstDispatchMs: number };
    baseline: Baseline;
  }[];
  throughput: { result: { pools: number; runsPerSecond: Shown }; baseline: Baseline }[];
  logs?: { result: { ingestMBps: Shown; endToEndMs: { p50: Shown } }; baseline: Baseline };
  state?: { result: { bytes: number; writeMs: Shown; readMs: Shown }[]; baseline: Baseline };
  idle?: { requestsPerAgentHourFromCycle: number; perAgentHour: Record<string, number> };
  monthly?: { outpost: { totalUSD: number }; polling30s: { totalUSD: number } };
}): void {
  const rows: string[][] = [["figure", "median", "spread (min–max)", "baseline", "ratio"]];
  const show = (name: string, f: Shown, base: number, unit: string) =>
    rows.push([
      name,
      `${f.median} ${unit}`,
      `${f.min}–${f.max}`,
      `${base} ms`,
      unit === "ms" ? `${round(f.median / base, 1)}×` : "",
    ]);
  for (const d of r.dispatch) {
    const b = d.baseline.durableObjectMs;
    show(`dispatch p50, ${d.result.agents} agents`, d.result.p50Ms, b, "ms");
    show(`dispatch p99, ${d.result.agents} agents`, d.result.p99Ms, b, "ms");
    show(`dispatch max, ${d.result.agents} agents`, d.result.maxMs, b, "ms");
  }
  for (const t of r.throughput) {
    show(
      `runs/s, ${t.result.pools} pool(s)`,
      t.result.runsPerSecond,
      t.baseline.workerMs,
      "runs/s",
    );
  }
  if (r.logs) {
    show("log ingestion", r.logs.result.ingestMBps, r.logs.baseline.workerMs, "MB/s");
    show("log end to end p50", r.logs.result.endToEndMs.p50, r.logs.baseline.workerMs, "ms");
  }
  for (const s of r.state?.result ?? []) {
    const mb = s.bytes / MB;
    show(`state write ${mb} MB`, s.writeMs, r.state?.baseline.workerMs ?? 0, "ms");
    show(`state read ${mb} MB`, s.readMs, r.state?.baseline.workerMs ?? 0, "ms");
  }
  const widths =
    rows[0]?.map((_, i) => Math.max(...rows.map((row) => (row[i] ?? "").length))) ?? [];
  for (const row of rows) {
    process.stderr.write(`${row.map((c, i) => c.padEnd(widths[i] ?? 0)).join("  ")}\n`);
  }
  if (r.dispatch.length > 0) {
    process.stderr.write(
      `first dispatch after the fleet connected: ${r.dispatch.map((d) => `${d.result.firstDispatchMs} ms (${d.result.agents} agents)`).join(", ")}\n`,
    );
  }
  if (r.idle) {
    process.stderr.write(
      `idle agent: ${r.idle.requestsPerAgentHourFromCycle} requests/h, ${r.idle.perAgentHour["d1.rowsWrittenTriggers"] ?? 0} D1 rows written/h\n`,
    );
  }
  if (r.monthly) {
    process.stderr.write(
      `monthly (100 agents, 10,000 runs/day): $${r.monthly.outpost.totalUSD} vs 30 s polling $${r.monthly.polling30s.totalUSD}\n`,
    );
  }
}
