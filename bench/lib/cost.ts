/**
 * Counted usage turned into a monthly bill with Cloudflare's published Workers Paid prices
 * (read 2026-11; sources in docs/performance.md): 100 agents in one pool and 10,000 runs a day,
 * against the same fleet polling every 30 s.
 */
import { round } from "./stats.ts";

type Counts = Record<string, number>;

/** USD per million beyond what the $5 Workers Paid plan includes each month. */
export const PRICES = {
  basePlanUSD: 5,
  workerRequests: { includedPerMonth: 10e6, usdPerMillion: 0.3 },
  doRequests: { includedPerMonth: 1e6, usdPerMillion: 0.15 },
  doDurationGBs: { includedPerMonth: 400_000, usdPerMillion: 12.5 },
  // SQLite-backed Durable Object storage: the same rates as D1, its own allowance; each
  // `setAlarm` is billed as a row written.
  doSqlRowsRead: { includedPerMonth: 25e9, usdPerMillion: 0.001 },
  doSqlRowsWritten: { includedPerMonth: 50e6, usdPerMillion: 1 },
  d1RowsRead: { includedPerMonth: 25e9, usdPerMillion: 0.001 },
  d1RowsWritten: { includedPerMonth: 50e6, usdPerMillion: 1 },
  r2ClassA: { includedPerMonth: 1e6, usdPerMillion: 4.5 },
  r2ClassB: { includedPerMonth: 10e6, usdPerMillion: 0.36 },
} as const;

export const SCENARIO = { agents: 100, pools: 1, runsPerDay: 10_000, days: 30, pollSeconds: 30 };

const HOURS = SCENARIO.days * 24;
/** A Durable Object holding long-polls is never idle, so it bills wall time at 128 MB. */
const POOL_ACTIVE_GBS = SCENARIO.pools * HOURS * 3600 * (128 / 1024);

function line(units: number, price: { includedPerMonth: number; usdPerMillion: number }) {
  const billable = Math.max(0, units - price.includedPerMonth);
  return { units: Math.round(units), usd: round((billable / 1e6) * price.usdPerMillion, 2) };
}

function bill(perMonth: Counts, doDurationGBs: number) {
  const lines = {
    workerRequests: line(perMonth["worker.requests"] ?? 0, PRICES.workerRequests),
    doRequests: line(perMonth["do.requests"] ?? 0, PRICES.doRequests),
    doDurationGBs: line(doDurationGBs, PRICES.doDurationGBs),
    doSqlRowsRead: line(perMonth["do.sqlRowsRead"] ?? 0, PRICES.doSqlRowsRead),
    doSqlRowsWritten: line(perMonth["do.sqlRowsWritten"] ?? 0, PRICES.doSqlRowsWritten),
    d1RowsRead: line(perMonth["d1.rowsReadLowerBound"] ?? 0, PRICES.d1RowsRead),
    d1RowsWritten: line(perMonth["d1.rowsWritten"] ?? 0, PRICES.d1RowsWritten),
    r2ClassA: line(perMonth["r2.A"] ?? 0, PRICES.r2ClassA),
    r2ClassB: line(perMonth["r2.B"] ?? 0, PRICES.r2ClassB),
  };
  const usage = Object.values(lines).reduce((sum, l) => sum + l.usd, 0);
  return { lines, totalUSD: round(PRICES.basePlanUSD + usage, 2) };
}

function scaled(...parts: [Counts, number][]): Counts {
  const out: Counts = {};
  for (const [counts, times] of parts) {
    for (const [key, value] of Object.entries(counts)) {
      out[key] = (out[key] ?? 0) + value * times;
    }
  }
  return out;
}

/**
 * The month for {@link SCENARIO}: every run costs what the bench counted for one, every agent
 * hour costs what an idle agent cost (an upper bound: busy hours poll less), and the cron adds
 * one invocation a minute. The polling design pays one empty poll per agent every 30 s instead.
 */
export function monthlyCost(counted: {
  perRun: Counts;
  idle: Counts;
  perPoll: Counts;
  perCron: Counts;
}) {
  const runs = SCENARIO.runsPerDay * SCENARIO.days;
  const agentHours = SCENARIO.agents * HOURS;
  const crons = HOURS * 60;
  const pollsPerAgentHour = 3600 / SCENARIO.pollSeconds;
  const outpost = scaled(
    [counted.perRun, runs],
    [counted.idle, agentHours],
    [counted.perCron, crons],
  );
  const polling = scaled(
    [counted.perRun, runs],
    [counted.perPoll, agentHours * pollsPerAgentHour],
    [counted.perCron, crons],
  );
  return {
    scenario: { ...SCENARIO, runsPerMonth: runs, agentHoursPerMonth: agentHours },
    prices: PRICES,
    outpost: { usage: roundAll(outpost), ...bill(outpost, POOL_ACTIVE_GBS) },
    polling30s: { usage: roundAll(polling), ...bill(polling, 0) },
  };
}

function roundAll(counts: Counts): Counts {
  return Object.fromEntries(
    Object.entries(counts)
      .filter(([key]) => !key.includes("ByTable") && !key.includes(".op."))
      .map(([k, v]) => [k, Math.round(v)]),
  );
}
