/**
 * What the bench measures, one function per figure. Every loop is bounded in count, and every
 * wait for the coordinator is bounded in time (`within`).
 */
import { createHash } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import type { JobAssignment } from "@outpost/protocol";
import { startFleet } from "./agents.ts";
import { call, expectOk, ProtocolAgent, StateClient, stateOf, type UserApi } from "./client.ts";
import { type BenchCoordinator, type Counters, delta } from "./setup.ts";
import { type Figure, figure, median, now, percentile, pool, round } from "./stats.ts";

/** Resolves `check()` once it is true, polling every 5 ms; throws after `ms`. */
export async function within(ms: number, what: string, check: () => boolean): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    }
    await sleep(5);
  }
}

export type Baseline = {
  /** `GET /healthz`: the Worker and Hono, nothing else. */
  workerMs: number;
  /** An empty agent heartbeat: token check in D1 and one AgentPool RPC. */
  durableObjectMs: number;
};

/** Same-run baselines, taken right before the figure they sit beside (medians of `n`). */
export async function baseline(url: string, agent: ProtocolAgent, n = 30): Promise<Baseline> {
  const worker: number[] = [];
  const rpc: number[] = [];
  for (let i = 0; i < n; i++) {
    let t = now();
    await call(`${url}/healthz`);
    worker.push(now() - t);
    t = now();
    expectOk(await agent.heartbeat(), 200, "heartbeat");
    rpc.push(now() - t);
  }
  return { workerMs: round(median(worker)), durableObjectMs: round(median(rpc)) };
}

/** A pool with a workspace that can run, and the agent token. */
async function runnablePool(api: UserApi, name: string, autoApply = false) {
  const { poolId, agentToken } = await api.pool(name);
  const workspaceId = await api.workspace(name, poolId, autoApply);
  return { poolId, agentToken, workspaceId };
}

export type DispatchResult = {
  agents: number;
  dispatchesPerRound: number;
  p50Ms: Figure;
  p99Ms: Figure;
  maxMs: Figure;
  /** How long the queueing POST itself took (D1 writes and the enqueue RPC), for context. */
  queueRequestMs: Figure;
  /**
   * The one dispatch right after the fleet connected, kept out of the rounds: it waits behind
   * the fleet's first polls still queued at the Worker and the pool, as after a mass reconnect.
   */
  firstDispatchMs: number;
  /** Requests the fleet sent, by kind, with failed or cut polls (`nextFailed:*`). */
  fleetRequests: Record<string, number>;
};

/**
 * Run queued (the POST leaves the client) → an agent holds the job (its long-poll answered),
 * with `agents` agents long-polling one pool. One dispatch at a time, every agent polling again.
 */
export async function dispatchLatency(
  api: UserApi,
  agents: number,
  rounds: number,
  perRound: number,
): Promise<DispatchResult> {
  const { agentToken, workspaceId } = await runnablePool(api, `dispatch-${agents}`);
  const held = new Map<string, number>();
  const fleet = await startFleet({
    url: api.url,
    token: agentToken,
    size: agents,
    waitSeconds: 50,
    onJob: (job, at) => held.set(job.runId, at),
  });
  // With many agents some are always between two polls (a 204 answered, the next not yet
  // sent); 1% may be, so a large fleet is never waited on forever.
  const allPolling = () => fleet.polling() >= agents - Math.floor(agents / 100);
  const dispatchOne = async (): Promise<{ latency: number; post: number }> => {
    await within(30_000, "every agent polling", allPolling);
    // The poll is counted when sent; give it a moment to be held by the pool.
    await sleep(20);
    const t0 = now();
    const runId = await api.queueRun(workspaceId);
    const post = now() - t0;
    await within(30_000, `run ${runId} held`, () => held.has(runId));
    return { latency: (held.get(runId) ?? Number.NaN) - t0, post };
  };
  try {
    const firstDispatchMs = round((await dispatchOne()).latency);
    const p50: number[] = [];
    const p99: number[] = [];
    const max: number[] = [];
    const queueMs: number[] = [];
    for (let r = 0; r < rounds; r++) {
      const samples: number[] = [];
      const posts: number[] = [];
      for (let i = 0; i < perRound; i++) {
        const { latency, post } = await dispatchOne();
        samples.push(latency);
        posts.push(post);
      }
      p50.push(percentile(samples, 50));
      p99.push(percentile(samples, 99));
      max.push(Math.max(...samples));
      queueMs.push(median(posts));
    }
    return {
      agents,
      fleetRequests: { ...fleet.sent },
      queueRequestMs: figure(queueMs),
      firstDispatchMs,
      dispatchesPerRound: perRound,
      p50Ms: figure(p50),
      p99Ms: figure(p99),
      maxMs: figure(max),
    };
  } finally {
    await fleet.stop();
  }
}

export type ThroughputResult = {
  pools: number;
  agents: number;
  runs: number;
  runsPerSecond: Figure;
  /** Server-side counts per run over all rounds (when the bench's counters were given). */
  countsPerRun?: Counters;
};

/**
 * Full cycles per second: `runs` speculative plans queued at once across `pools` pools (the
 * agents split evenly), each leased, started and finished, until every run is
 * `planned_and_finished` in D1.
 */
export async function throughput(
  api: UserApi,
  pools: number,
  agents: number,
  runs: number,
  rounds: number,
  tag: string,
  bench?: BenchCoordinator,
): Promise<ThroughputResult> {
  const setups = await pool(
    Array.from({ length: pools }, (_, i) => i),
    4,
    (i) => runnablePool(api, `tp-${tag}-${pools}-${i}`),
  );
  const finished = { n: 0 };
  const fleets = await Promise.all(
    setups.map((s) =>
      startFleet({
        url: api.url,
        token: s.agentToken,
        size: Math.max(1, Math.floor(agents / pools)),
        waitSeconds: 50,
        work: async (agent, job) => {
          expectOk(await agent.start(job), 200, "start");
          expectOk(await agent.finish(job), 200, "finish");
          finished.n++;
        },
      }),
    ),
  );
  try {
    const perSecond: number[] = [];
    const countedBefore = await bench?.counters();
    for (let r = 0; r < rounds; r++) {
      const before = finished.n;
      const t0 = now();
      const ids = await pool(
        Array.from({ length: runs }, (_, i) => i),
        16,
        (i) => api.queueRun(setups[i % pools]?.workspaceId ?? ""),
      );
      await within(120_000, `${runs} runs finished`, () => finished.n - before >= runs);
      // Every finish was answered; the runs must now read planned_and_finished.
      const statuses = await pool(ids, 16, async (id) => String((await api.run(id)).status));
      const elapsed = now() - t0;
      const wrong = statuses.filter((s) => s !== "planned_and_finished");
      if (wrong.length > 0) {
        throw new Error(`throughput: ${wrong.length} runs not planned_and_finished: ${wrong[0]}`);
      }
      perSecond.push(runs / (elapsed / 1000));
    }
    const countedAfter = await bench?.counters();
    const countsPerRun: Counters = {};
    for (const [key, value] of Object.entries(
      countedBefore && countedAfter ? delta(countedBefore, countedAfter) : {},
    )) {
      countsPerRun[key] = round(value / (runs * rounds), 2);
    }
    return {
      pools,
      agents,
      runs,
      runsPerSecond: figure(perSecond),
      ...(bench ? { countsPerRun } : {}),
    };
  } finally {
    await Promise.all(fleets.map((f) => f.stop()));
  }
}

export type IdleResult = {
  agents: number;
  windowSeconds: number;
  /** From the poll cycle the agents measured: 3600 / mean seconds between two polls. */
  requestsPerAgentHourFromCycle: number;
  meanPollCycleSeconds: number;
  /** Server-side counts in the window, scaled to one agent-hour of the real 50 s cadence. */
  perAgentHour: Counters;
  pollSeconds: number;
};

/**
 * `agents` idle agents long-polling an empty pool for `cycles` whole poll cycles: what the
 * coordinator saw. The window runs from when every first poll is held to when every agent has
 * sent its `cycles`-th next poll, so it holds exactly `cycles` polls per agent.
 */
export async function idleAgents(
  bench: BenchCoordinator,
  api: UserApi,
  agents: number,
  cycles: number,
  pollSeconds: number,
): Promise<IdleResult> {
  const { agentToken } = await runnablePool(api, "idle");
  const fleet = await startFleet({
    url: api.url,
    token: agentToken,
    size: agents,
    waitSeconds: pollSeconds,
  });
  try {
    await within(30_000, "every idle agent polling", () => fleet.polling() === agents);
    await sleep(500);
    const sentBefore = fleet.sent.next ?? 0;
    const before = await bench.counters();
    const t0 = now();
    await within((cycles * pollSeconds + 60) * 1000, `${cycles} idle poll cycles`, () => {
      return (fleet.sent.next ?? 0) >= sentBefore + cycles * agents;
    });
    // The last wave of polls has been sent; let it reach the Worker.
    await sleep(300);
    const after = await bench.counters();
    const windowSeconds = (now() - t0) / 1000;
    // Shorter polls than the real 50 s are scaled to the real cadence.
    const scale = (3600 / (agents * windowSeconds)) * (pollSeconds / 50);
    const perAgentHour: Counters = {};
    for (const [key, value] of Object.entries(delta(before, after))) {
      perAgentHour[key] = round(value * scale, 2);
    }
    const intervals: number[] = [];
    for (const starts of fleet.pollStarts) {
      for (let i = 1; i < starts.length; i++) {
        intervals.push(((starts[i] ?? 0) - (starts[i - 1] ?? 0)) / 1000);
      }
    }
    const mean = intervals.reduce((a, b) => a + b, 0) / Math.max(1, intervals.length);
    return {
      agents,
      windowSeconds: round(windowSeconds, 1),
      pollSeconds,
      requestsPerAgentHourFromCycle: intervals.length
        ? round((3600 / mean) * (pollSeconds / 50), 1)
        : Number.NaN,
      meanPollCycleSeconds: round(mean, 2),
      perAgentHour,
    };
  } finally {
    await fleet.stop();
  }
}

/** Server-side cost of one empty `jobs/next?wait=0`: what a 30 s polling design pays per poll. */
export async function emptyPollCost(
  bench: BenchCoordinator,
  api: UserApi,
  polls: number,
): Promise<Counters> {
  const { agentToken } = await runnablePool(api, "polling");
  const agent = new ProtocolAgent(api.url, agentToken);
  await agent.register("poller");
  const before = await bench.counters();
  for (let i = 0; i < polls; i++) {
    if ((await agent.next(0)) !== null) {
      throw new Error("an empty pool handed out a job");
    }
  }
  const after = await bench.counters();
  await agent.goodbye();
  const out: Counters = {};
  for (const [key, value] of Object.entries(delta(before, after))) {
    out[key] = round(value / polls, 3);
  }
  return out;
}

/** Leases the next job of the agent's pool, failing when none comes within 10 s. */
async function lease(agent: ProtocolAgent): Promise<JobAssignment> {
  const job = await agent.next(10);
  if (!job || job === "exit") {
    throw new Error(`no job for ${agent.agentId}`);
  }
  expectOk(await agent.start(job), 200, "start");
  return job;
}

export type LogResult = {
  ingestMBps: Figure;
  chunkBytes: number;
  bytesPerRound: number;
  endToEndMs: { p50: Figure; p99: Figure; max: Figure; chunksPerRound: number };
};

/** Log bytes through `PUT …/logs` and how soon a reader of `GET /runs/:id/logs` sees them. */
export async function logs(
  api: UserApi,
  rounds: number,
  totalBytes: number,
  chunkBytes: number,
  latencyChunks: number,
): Promise<LogResult> {
  const { agentToken, workspaceId } = await runnablePool(api, "logs");
  const agent = new ProtocolAgent(api.url, agentToken);
  await agent.register("logger");
  const chunk = new Uint8Array(chunkBytes).fill(0x61);
  const rates: number[] = [];
  const p50: number[] = [];
  const p99: number[] = [];
  const max: number[] = [];
  for (let r = 0; r < rounds; r++) {
    await api.queueRun(workspaceId);
    const job = await lease(agent);
    let offset = 0;
    const t0 = now();
    while (offset < totalBytes) {
      expectOk(await agent.log(job, offset, chunk), 200, "log chunk");
      offset += chunk.length;
    }
    rates.push(offset / (1024 * 1024) / ((now() - t0) / 1000));
    expectOk(await agent.finish(job), 200, "finish");

    // End to end: a reader polls the run's log while the agent sends one small line at a time.
    await api.queueRun(workspaceId);
    const live = await lease(agent);
    const samples: number[] = [];
    let sent = 0;
    for (let i = 0; i < latencyChunks; i++) {
      const line = new TextEncoder().encode(`line ${i} ${"-".repeat(120)}\n`);
      const t = now();
      const write = agent.log(live, sent, line);
      sent += line.length;
      let seen = 0;
      for (let tries = 0; seen < sent && tries < 2000; tries++) {
        const res = await call(
          `${api.url}/api/v1/runs/${live.runId}/logs?phase=plan&offset=${seen}`,
          { token: api.token },
        );
        seen += new TextEncoder().encode(res.text).length;
      }
      samples.push(now() - t);
      expectOk(await write, 200, "log line");
      if (seen < sent) {
        throw new Error("the log reader never saw the line");
      }
    }
    expectOk(await agent.finish(live), 200, "finish");
    p50.push(percentile(samples, 50));
    p99.push(percentile(samples, 99));
    max.push(Math.max(...samples));
  }
  await agent.goodbye();
  return {
    ingestMBps: figure(rates),
    chunkBytes,
    bytesPerRound: totalBytes,
    endToEndMs: {
      p50: figure(p50),
      p99: figure(p99),
      max: figure(max),
      chunksPerRound: latencyChunks,
    },
  };
}

export type StateResult = { bytes: number; writeMs: Figure; readMs: Figure };

/** Terraform http-backend writes and full reads of states of `bytes`. */
export async function stateTimes(
  api: UserApi,
  sizes: number[],
  rounds: number,
): Promise<StateResult[]> {
  const workspaceId = await api.workspace("state-bench");
  const client = new StateClient(api.url, workspaceId, api.token);
  const lineage = crypto.randomUUID();
  let serial = 0;
  const out: StateResult[] = [];
  for (const bytes of sizes) {
    const writes: number[] = [];
    const reads: number[] = [];
    for (let r = 0; r < rounds; r++) {
      const body = stateOf(++serial, lineage, bytes);
      let t = now();
      expectOk(await client.put(body), 200, "state write");
      writes.push(now() - t);
      t = now();
      const read = await client.get();
      reads.push(now() - t);
      if (read.status !== 200 || read.text.length !== body.length) {
        throw new Error(`state read: ${read.status}, ${read.text.length} of ${body.length} bytes`);
      }
    }
    out.push({ bytes, writeMs: figure(writes), readMs: figure(reads) });
  }
  return out;
}

/**
 * What one realistic run costs the coordinator: apply on an auto-apply workspace, the plan
 * downloading its configuration, logging and uploading a plan file, the apply downloading both,
 * locking, writing and unlocking the state with the run token, logging, finishing.
 */
export async function costPerRun(
  bench: BenchCoordinator,
  api: UserApi,
  runs: number,
): Promise<Counters> {
  const { agentToken, workspaceId } = await runnablePool(api, "cost", true);
  const agent = new ProtocolAgent(api.url, agentToken);
  await agent.register("cost");
  const lineage = crypto.randomUUID();
  const planFile = new Uint8Array(64 * 1024).fill(7);
  const logLine = new Uint8Array(4096).fill(0x62);
  const before = await bench.counters();
  const runIds: string[] = [];
  for (let i = 0; i < runs; i++) {
    runIds.push(await api.queueRun(workspaceId, "apply"));
    const plan = await lease(agent);
    const runToken = plan.runToken ?? "";
    const jobUrl = (job: JobAssignment) =>
      `${api.url}/agent/v1/jobs/${encodeURIComponent(job.jobId)}`;
    expectOk(await call(`${jobUrl(plan)}/configuration`, { token: runToken }), 200, "config");
    expectOk(await agent.log(plan, 0, logLine), 200, "plan log");
    expectOk(
      await call(`${jobUrl(plan)}/artifacts/plan.tfplan`, {
        method: "PUT",
        token: runToken,
        headers: {
          "content-type": "application/octet-stream",
          "outpost-sha256": createHash("sha256").update(planFile).digest("hex"),
        },
        bytes: planFile,
      }),
      200,
      "plan upload",
    );
    const summary = { adds: 1, changes: 0, destroys: 0, imports: 0, hasChanges: true };
    expectOk(await agent.finish(plan, { planSummary: summary }), 200, "plan finish");
    const apply = await lease(agent);
    const applyToken = apply.runToken ?? "";
    expectOk(await call(`${jobUrl(apply)}/configuration`, { token: applyToken }), 200, "config");
    expectOk(
      await call(`${jobUrl(apply)}/artifacts/plan.tfplan`, { token: applyToken }),
      200,
      "plan download",
    );
    const state = new StateClient(api.url, workspaceId, applyToken);
    const lockId = crypto.randomUUID();
    expectOk(await state.lock(lockId, "LOCK"), 200, "lock");
    expectOk(await state.put(stateOf(i + 1, lineage, 8 * 1024), lockId), 200, "state");
    expectOk(await state.lock(lockId, "UNLOCK"), 200, "unlock");
    expectOk(await agent.log(apply, 0, logLine), 200, "apply log");
    expectOk(await agent.finish(apply), 200, "apply finish");
  }
  const after = await bench.counters();
  for (const id of runIds) {
    const status = (await api.run(id)).status;
    if (status !== "applied") {
      throw new Error(`cost run ${id} ended ${String(status)}, not applied`);
    }
  }
  await agent.goodbye();
  const out: Counters = {};
  for (const [key, value] of Object.entries(delta(before, after))) {
    out[key] = round(value / runs, 2);
  }
  return out;
}

/** One cron invocation (the reconciler) with the bench's runs in D1; counted after it settles. */
export async function cronCost(bench: BenchCoordinator, times: number): Promise<Counters> {
  const before = await bench.counters();
  for (let i = 0; i < times; i++) {
    await bench.coordinator.cron();
  }
  // The reconciler runs in waitUntil, after the scheduled event answered.
  await sleep(1000);
  const after = await bench.counters();
  const out: Counters = {};
  for (const [key, value] of Object.entries(delta(before, after))) {
    out[key] = round(value / times, 2);
  }
  return out;
}
