import { evictDurableObject, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import type { AgentPool } from "../../durable/agent-pool.ts";
import { type EventSink, sendDue } from "../../durable/outbox.ts";
import { PoolStore } from "../../durable/pool-store.ts";
import { type JobEndedEvent, MAX_AGENTS_PER_TOKEN } from "../../durable/pool-types.ts";
import {
  agentDueAt,
  agentStatus,
  agentTransition,
  assignRound,
  canMoveJob,
  classesForPhases,
  DEFAULT_POOL_SETTINGS,
  type JobState,
  jobDueAt,
  mergeSettings,
  outboxRetryDelayMs,
  phaseTimeoutReason,
  servedRound,
} from "../../durable/queue.ts";
import { poolStub } from "../../src/pools/service.ts";
import { handleJobEnded } from "../../src/runs/events.ts";
import { deps, seedOrg } from "./helpers/fixtures.ts";
import {
  advancePoolClock,
  enqueue,
  evictPool,
  makeJob,
  registerAgent,
  seedPool,
} from "./helpers/pools.ts";

const S = DEFAULT_POOL_SETTINGS;

describe("queue.ts (pure)", () => {
  it.each([
    [
      ["plan", "apply"],
      [0, 1, 2],
    ],
    [["apply"], [0]],
    [["plan"], [1, 2]],
    [
      ["apply", "plan"],
      [0, 1, 2],
    ],
  ] as const)("classesForPhases(%j) = %j", (phases, classes) => {
    expect(classesForPhases(phases)).toEqual(classes);
  });

  it.each([
    // workspace next round, current round → assigned round
    [null, 0, 0],
    [null, 4, 4],
    [3, 1, 3],
    [2, 5, 5],
  ])("assignRound(%s, %s) = %s", (next, current, round) => {
    expect(assignRound(next, current)).toBe(round);
  });

  it("servedRound never goes back", () => {
    expect(servedRound(3, 1)).toBe(3);
    expect(servedRound(3, 5)).toBe(5);
  });

  it.each([
    // state, lastContact, pollHeldUntil, stateChangedAt → due
    ["online", 1_000, null, 0, 1_000 + S.unknownAfterMs],
    ["online", 1_000, 40_000, 0, 40_000 + S.unknownAfterMs],
    ["online", 50_000, 40_000, 0, 50_000 + S.unknownAfterMs],
    ["unknown", 1_000, null, 31_000, 31_000 + S.erroredAfterMs],
    ["errored", 1_000, null, 331_000, 1_000 + S.retentionMs],
    ["exited", 7_000, null, 7_000, 7_000 + S.retentionMs],
  ] as const)(
    "agentDueAt(%s, contact %s, held %s, changed %s) = %s",
    (state, contact, held, changed, due) => {
      expect(
        agentDueAt(
          { state, lastContactAt: contact, pollHeldUntil: held, stateChangedAt: changed },
          S,
        ),
      ).toBe(due);
    },
  );

  it.each([
    ["online", "unknown"],
    ["unknown", "errored"],
    ["errored", "drop"],
    ["exited", "drop"],
  ] as const)("agentTransition(%s) = %s", (state, next) => {
    expect(agentTransition(state)).toBe(next);
  });

  // The job state machine, one row per (from, to): queued → leased → started → ended, a lease
  // not started goes back, anything not ended can end, and nothing leaves ended.
  it.each([
    ["queued", "queued", false],
    ["queued", "leased", true],
    ["queued", "started", false],
    ["queued", "ended", true],
    ["leased", "queued", true],
    ["leased", "leased", false],
    ["leased", "started", true],
    ["leased", "ended", true],
    ["started", "queued", false],
    ["started", "leased", false],
    ["started", "started", false],
    ["started", "ended", true],
    ["ended", "queued", false],
    ["ended", "leased", false],
    ["ended", "started", false],
    ["ended", "ended", false],
  ] as [JobState, JobState, boolean][])("job %s → %s allowed: %s", (from, to, allowed) => {
    expect(canMoveJob(from, to)).toBe(allowed);
  });

  it.each([
    ["online", 0, "idle"],
    ["online", 2, "busy"],
    ["unknown", 1, "unknown"],
    ["errored", 0, "errored"],
    ["exited", 0, "exited"],
  ] as const)("agentStatus(%s, %s jobs) = %s", (state, jobs, status) => {
    expect(agentStatus(state, jobs)).toBe(status);
  });

  it.each([
    ["queued", null],
    ["leased", 100 + S.leaseStartTimeoutMs],
    ["started", 200 + 5_000],
    ["ended", 300 + 7 * 24 * 3_600_000],
  ] as const)("jobDueAt(%s) = %s (the job's own timeout: 5 s)", (state, due) => {
    expect(
      jobDueAt({ state, leasedAt: 100, startedAt: 200, endedAt: 300, timeoutMs: 5_000 }, S),
    ).toBe(due);
  });

  it.each([
    ["plan", 7_200_000, "plan ran longer than its 2 hours limit"],
    ["apply", 86_400_000, "apply ran longer than its 24 hours limit"],
    ["plan", 3_600_000, "plan ran longer than its 1 hour limit"],
    ["plan", 90_000, "plan ran longer than its 90 seconds limit"],
    ["apply", 120_000, "apply ran longer than its 2 minutes limit"],
  ] as const)("phaseTimeoutReason(%s, %s) = %s", (phase, ms, words) => {
    expect(phaseTimeoutReason(phase, ms)).toBe(words);
  });

  it("backs off resending exponentially up to ten minutes", () => {
    expect([1, 2, 3].map(outboxRetryDelayMs)).toEqual([2_000, 4_000, 8_000]);
    expect(outboxRetryDelayMs(40)).toBe(600_000);
  });

  it("merges overrides over the defaults, ignoring null and nonsense", () => {
    expect(mergeSettings({ unknownAfterMs: 5_000, erroredAfterMs: null, retentionMs: -1 })).toEqual(
      {
        ...S,
        unknownAfterMs: 5_000,
      },
    );
  });
});

describe("queue order", () => {
  it("serves apply before plan before speculative, and shares fairly across workspaces", async () => {
    const org = await seedOrg();
    const pool = await seedPool(org);
    const stub = poolStub(env, pool.poolId);
    const a1 = makeJob("ws_a");
    const a2 = makeJob("ws_a");
    const a3 = makeJob("ws_a");
    const b1 = makeJob("ws_b");
    const spec = makeJob("ws_c", { speculative: true });
    const apply = makeJob("ws_a", { phase: "apply" });
    for (const job of [spec, a1, a2, a3, b1, apply]) {
      await enqueue(pool.poolId, job);
    }
    const agentId = await registerAgent(pool.token, { capacity: 10 });
    const ref = { agentId, tokenId: pool.tokenId };
    const order: string[] = [];
    const take = async () => {
      const r = await stub.pollJob(ref, 0);
      if (r.ok && r.value.kind === "job") {
        order.push(r.value.job.jobId);
      }
    };
    await take();
    await take();
    await take();
    // A workspace arriving now joins the current round: it goes before a's second job.
    const c1 = makeJob("ws_c");
    await enqueue(pool.poolId, c1);
    for (let i = 0; i < 4; i++) {
      await take();
    }
    expect(order).toEqual([apply, a1, b1, c1, a2, a3, spec].map((j) => j.jobId));
  });

  it("is idempotent by job id, refuses malformed jobs, and removes a canceled queued job", async () => {
    const org = await seedOrg();
    const pool = await seedPool(org);
    const stub = poolStub(env, pool.poolId);
    const job = makeJob("ws_i");
    expect((await stub.enqueue(job)).ok && true).toBe(true);
    const again = await stub.enqueue({ ...job, spec: { ...job.spec, workspaceName: "other" } });
    expect(again).toMatchObject({ ok: true, value: { created: false, job: { state: "queued" } } });
    for (const bad of [
      { ...job, jobId: `${job.runId}:apply` },
      { ...job, priorityClass: 0 },
      { ...job, phase: "destroy" },
      { ...job, spec: "nope" },
      { ...job, spec: { ...job.spec, engine: "cobol" } },
      { ...job, timeoutMs: 0 },
      { ...job, extra: 1 },
    ]) {
      expect(await stub.enqueue(bad as never)).toEqual({ ok: false, reason: "invalid_job" });
    }
    expect(await stub.cancelJob(job.jobId)).toMatchObject({
      ok: true,
      value: {
        job: { state: "ended", outcome: "canceled" },
        ending: { jobId: job.jobId, action: "job.canceled", actor: "system" },
      },
    });
    const agentId = await registerAgent(pool.token);
    expect(await stub.pollJob({ agentId, tokenId: pool.tokenId }, 0)).toEqual({
      ok: true,
      value: { kind: "none" },
    });
    // Ended is final: the same job id is never queued again.
    expect(await stub.enqueue(job)).toMatchObject({
      ok: true,
      value: { created: false, job: { state: "ended" } },
    });
    expect(await stub.cancelJob(makeJob("ws_i").jobId)).toEqual({ ok: false, reason: "not_found" });
  });
});

describe("whyWaiting", () => {
  it("names the reason a job waits", async () => {
    const org = await seedOrg();
    const pool = await seedPool(org);
    const stub = poolStub(env, pool.poolId);
    const apply = makeJob("ws_w", { phase: "apply" });
    const plan = makeJob("ws_w");
    await enqueue(pool.poolId, plan);
    await enqueue(pool.poolId, apply);
    const reason = async (jobId: string) => {
      const r = await stub.whyWaiting(jobId);
      return r.ok && r.value.state === "queued" ? r.value : r;
    };
    expect(await reason(plan.jobId)).toEqual({
      state: "queued",
      position: 2,
      queueLength: 2,
      reason: { kind: "no_agents_registered" },
    });
    const planner = await registerAgent(pool.token, { acceptedPhases: ["plan"] });
    expect((await reason(apply.jobId)) as unknown).toMatchObject({
      position: 1,
      reason: { kind: "no_agent_accepts_phase", phase: "apply", online: 1 },
    });
    expect((await reason(plan.jobId)) as unknown).toMatchObject({
      reason: { kind: "behind_other_jobs", ahead: 1 },
    });
    await advancePoolClock(pool.poolId, 31_000);
    await runDurableObjectAlarm(stub);
    expect((await reason(plan.jobId)) as unknown).toMatchObject({
      reason: { kind: "no_agents_online", registered: 1, lastContactAt: expect.any(Number) },
    });
    const leased = await stub.pollJob({ agentId: planner, tokenId: pool.tokenId }, 0);
    expect(leased).toMatchObject({ ok: true, value: { kind: "job", job: { jobId: plan.jobId } } });
    expect(await stub.whyWaiting(plan.jobId)).toMatchObject({
      ok: true,
      value: { state: "leased", agentId: planner, startBy: expect.any(Number) },
    });
  });
});

describe("scale: picking the next job is O(log n)", () => {
  it("reads a handful of rows to pick from 10,000 queued jobs", async () => {
    const org = await seedOrg();
    const pool = await seedPool(org);
    const stub = poolStub(env, pool.poolId);
    const expected = await runInDurableObject(stub, (_instance, state) => {
      const sql = state.storage.sql;
      const store = new PoolStore(sql);
      for (let i = 0; i < 10_000; i++) {
        store.jobs.insert(makeJob(`ws_${i % 97}`, { speculative: i % 3 === 0 }), Date.now());
      }
      const count = sql
        .exec<{ n: number }>("SELECT COUNT(*) AS n FROM jobs WHERE state = 'queued'")
        .one().n;
      const head = sql
        .exec<{ job_id: string }>(
          "SELECT job_id FROM jobs WHERE state = 'queued' ORDER BY priority_class, round, seq LIMIT 1",
        )
        .one().job_id;
      const all = store.jobs.pickNext([0, 1, 2]);
      // An apply-only agent against 10,000 plan jobs: the case a filtered scan would make O(n).
      const applyOnly = store.jobs.pickNext([0]);
      // The yardstick: the same question without the index reads every queued row.
      const scan = sql.exec(
        "SELECT job_id FROM jobs WHERE state = 'queued' ORDER BY spec, seq LIMIT 1",
      );
      scan.toArray();
      return { count, head, all, applyOnly, scanRowsRead: scan.rowsRead };
    });
    expect(expected.count).toBe(10_000);
    expect(expected.scanRowsRead).toBeGreaterThanOrEqual(10_000);
    expect(expected.all.job?.job_id).toBe(expected.head);
    expect(expected.all.rowsRead).toBeLessThanOrEqual(5);
    expect(expected.applyOnly.job).toBeNull();
    expect(expected.applyOnly.rowsRead).toBeLessThanOrEqual(2);

    // Through the object: the lease takes the head, and the next pick is still cheap.
    const agentId = await registerAgent(pool.token, { capacity: 2 });
    const leased = await stub.pollJob({ agentId, tokenId: pool.tokenId }, 0);
    expect(leased).toMatchObject({
      ok: true,
      value: { kind: "job", job: { jobId: expected.head } },
    });
    const after = await runInDurableObject(stub, (_i, state) =>
      new PoolStore(state.storage.sql).jobs.pickNext([1, 2]),
    );
    expect(after.rowsRead).toBeLessThanOrEqual(5);

    // A plan-only agent behind thousands of apply jobs: the other class a scan would walk.
    const planOnly = await runInDurableObject(stub, (_i, state) => {
      const store = new PoolStore(state.storage.sql);
      for (let i = 0; i < 3_000; i++) {
        store.jobs.insert(makeJob(`ws_${i % 97}`, { phase: "apply" }), Date.now());
      }
      return store.jobs.pickNext([1, 2]);
    });
    expect(planOnly.job?.priority_class).not.toBe(0);
    expect(planOnly.rowsRead).toBeLessThanOrEqual(5);
  }, 60_000);
});

describe("durability", () => {
  it("keeps queue, leases and agents across eviction, and the alarm still fires", async () => {
    const org = await seedOrg();
    const pool = await seedPool(org);
    const stub = poolStub(env, pool.poolId);
    const agentId = await registerAgent(pool.token);
    const leasedJob = makeJob("ws_e");
    const queuedJob = makeJob("ws_e");
    await enqueue(pool.poolId, leasedJob);
    await enqueue(pool.poolId, queuedJob);
    const lease = await stub.pollJob({ agentId, tokenId: pool.tokenId }, 0);
    expect(lease).toMatchObject({ ok: true, value: { kind: "job" } });

    await evictDurableObject(stub);

    expect(await stub.getJob(leasedJob.jobId)).toMatchObject({ state: "leased", agentId });
    expect(await stub.getJob(queuedJob.jobId)).toMatchObject({ state: "queued" });
    expect((await stub.listAgents()).map((a) => [a.id, a.status])).toEqual([[agentId, "busy"]]);
    const alarm = await runInDurableObject(stub, (_i, state) => state.storage.getAlarm());
    expect(alarm).toEqual(expect.any(Number));

    await advancePoolClock(pool.poolId, 31_000);
    await evictPool(pool.poolId);
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    expect(await stub.getJob(leasedJob.jobId)).toMatchObject({ state: "queued" });
  });

  it("runs the alarm idempotently and treats overdue rows as due; no alarm when nothing is due", async () => {
    const org = await seedOrg();
    const pool = await seedPool(org);
    const stub = poolStub(env, pool.poolId);
    expect(await runInDurableObject(stub, (_i, state) => state.storage.getAlarm())).toBeNull();
    const agentId = await registerAgent(pool.token);
    await advancePoolClock(pool.poolId, 10 * 60_000);
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    // Ten minutes overdue: online → unknown → errored in one run.
    expect((await stub.listAgents())[0]).toMatchObject({ id: agentId, status: "errored" });
    const next = await runInDurableObject(stub, (_i, state) => state.storage.getAlarm());
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    expect((await stub.listAgents())[0]?.status).toBe("errored");
    expect(await runInDurableObject(stub, (_i, state) => state.storage.getAlarm())).toBe(next);
    await advancePoolClock(pool.poolId, 3 * 3_600_000);
    await runDurableObjectAlarm(stub);
    expect(await stub.listAgents()).toEqual([]);
    expect(await runInDurableObject(stub, (_i, state) => state.storage.getAlarm())).toBeNull();
  });
});

describe("job endings the pool creates on its own", () => {
  it("are sent to the queue at least once: a failed send stays in the outbox with backoff", async () => {
    const org = await seedOrg();
    const pool = await seedPool(org);
    const job = makeJob("ws_o", { orgId: org.orgId });
    await enqueue(pool.poolId, job);
    const result = await runInDurableObject(poolStub(env, pool.poolId), async (_i, state) => {
      const store = new PoolStore(state.storage.sql);
      const now = Date.now();
      const row = store.jobs.get(job.jobId);
      if (!row) {
        throw new Error("job not queued");
      }
      const { ending } = store.jobs.end(
        row,
        {
          outcome: "errored",
          actor: "system",
          reason: "test",
          exitCode: null,
          planSummary: null,
          forced: false,
        },
        now,
        true,
      );
      const failingSink: EventSink = { sendBatch: () => Promise.reject(new Error("queue down")) };
      const failing = await sendDue(store, failingSink, () => now);
      const waiting = state.storage.sql
        .exec<{ attempts: number; next_attempt_at: number }>(
          "SELECT attempts, next_attempt_at FROM outbox",
        )
        .one();
      const sent: unknown[] = [];
      const sink: EventSink = {
        sendBatch: async (messages) => {
          sent.push(...messages.map((m) => m.body));
        },
      };
      const notYet = await sendDue(store, sink, () => now);
      // The alarm, due at the retry time, looks again.
      store.outbox.mayBeDue = true;
      const later = await sendDue(store, sink, () => waiting.next_attempt_at);
      const left = state.storage.sql
        .exec<{ n: number }>("SELECT COUNT(*) AS n FROM outbox")
        .one().n;
      return { ending, failing, waiting, now, notYet, later, sent, left };
    });
    expect(result.failing).toEqual({ sent: 0, failed: 1 });
    expect(result.waiting.attempts).toBe(1);
    expect(result.waiting.next_attempt_at).toBe(result.now + outboxRetryDelayMs(1));
    expect(result.notYet).toEqual({ sent: 0, failed: 0 });
    expect(result.later).toEqual({ sent: 1, failed: 0 });
    expect(result.sent).toEqual([result.ending]);
    expect(result.left).toBe(0);
  });

  it("handleJobEnded records one audit event however often the same ending arrives", async () => {
    const org = await seedOrg();
    const job = makeJob("ws_h", { orgId: org.orgId });
    const event: JobEndedEvent = {
      jobId: job.jobId,
      runId: job.runId,
      workspaceId: job.workspaceId,
      orgId: org.orgId,
      phase: "plan",
      outcome: "errored",
      action: "job.errored",
      actor: "system",
      agentId: null,
      reason: "agent x stopped responding",
      exitCode: null,
      planSummary: null,
      forced: false,
      endedAt: Date.now(),
      operation: "plan",
      isSpeculative: true,
    };
    await handleJobEnded(deps, event);
    await handleJobEnded(deps, event);
    const rows = await env.DB.prepare(
      "SELECT action, actor, data FROM audit_events WHERE target_id = ?",
    )
      .bind(job.jobId)
      .all<{ action: string; actor: string; data: string }>();
    expect(rows.results).toHaveLength(1);
    expect(rows.results[0]).toMatchObject({ action: "job.errored", actor: "system" });
    expect(JSON.parse(rows.results[0]?.data ?? "{}")).toMatchObject({
      reason: "agent x stopped responding",
    });
  });
});

describe("scale: a change costs the same with 2 or 300 held polls", () => {
  type Pool = Awaited<ReturnType<typeof seedPool>>;
  type Internals = { store: { sql: SqlStorage }; polls: { size: number } };

  /** Registers `n` agents straight on the object and holds one 50 s poll for each. */
  /** The token of the pool's `i`th agent: one token registers at most MAX_AGENTS_PER_TOKEN. */
  function tokenFor(pool: Pool, i: number): string {
    const batch = Math.floor(i / MAX_AGENTS_PER_TOKEN);
    return batch === 0 ? pool.tokenId : `${pool.tokenId}-${batch}`;
  }

  async function holdPolls(pool: Pool, n: number) {
    const stub = poolStub(env, pool.poolId);
    const agents: string[] = [];
    for (let i = 0; i < n; i++) {
      const registered = await stub.register({
        tokenId: tokenFor(pool, i),
        name: `held-${i}`,
        version: "0.1.0",
        os: "linux",
        arch: "amd64",
        capacity: 1,
        acceptedPhases: ["plan", "apply"],
      });
      if (!registered.ok) {
        throw new Error(registered.reason);
      }
      agents.push(registered.value.agentId);
    }
    const polls = agents.map((agentId, i) =>
      stub.pollJob({ agentId, tokenId: tokenFor(pool, i) }, 50_000),
    );
    // Calls to one object arrive in order, but wait for the last poll to be held anyway.
    await vi.waitFor(
      async () => {
        const held = await runInDurableObject(
          stub,
          (instance) => (instance as unknown as Internals).polls.size,
        );
        expect(held).toBe(n);
      },
      { timeout: 10_000, interval: 20 },
    );
    return { stub, agents, polls };
  }

  /** Runs `change` inside the object; counts the SQL statements it executes and rows they read. */
  async function costOf(
    pool: Pool,
    change: (instance: AgentPool) => Promise<unknown>,
  ): Promise<{ statements: number; rowsRead: number }> {
    return runInDurableObject(poolStub(env, pool.poolId), async (instance) => {
      const internals = instance as unknown as Internals;
      const real = internals.store.sql;
      const cursors: SqlStorageCursor<Record<string, SqlStorageValue>>[] = [];
      internals.store.sql = new Proxy(real, {
        get(target, key) {
          if (key === "exec") {
            return (...args: Parameters<SqlStorage["exec"]>) => {
              const cursor = target.exec(...args);
              cursors.push(cursor);
              return cursor;
            };
          }
          const value = Reflect.get(target, key, target);
          return typeof value === "function" ? value.bind(target) : value;
        },
      });
      try {
        await change(instance);
      } finally {
        internals.store.sql = real;
      }
      return {
        statements: cursors.length,
        rowsRead: cursors.reduce((sum, cursor) => sum + cursor.rowsRead, 0),
      };
    });
  }

  it("a heartbeat and an enqueue do not look at every held poll", async () => {
    const org = await seedOrg();
    const small = await seedPool(org);
    const large = await seedPool(org);
    // Two, not one: the answered poll's own follow-up then also finds others still held.
    const few = await holdPolls(small, 2);
    const many = await holdPolls(large, 300);

    const heartbeat = (pool: Pool, agentId: string) => (instance: AgentPool) =>
      instance.heartbeat({ agentId, tokenId: pool.tokenId }, []);
    const heartbeatSmall = await costOf(small, heartbeat(small, few.agents[0] ?? ""));
    const heartbeatLarge = await costOf(large, heartbeat(large, many.agents[0] ?? ""));
    expect(heartbeatSmall.statements).toBeGreaterThan(0);
    expect(heartbeatLarge).toEqual(heartbeatSmall);

    const job = (pool: Pool) => (instance: AgentPool) =>
      instance.enqueue(makeJob(`ws_${pool.poolId}`, { orgId: org.orgId }));
    const enqueueSmall = await costOf(small, job(small));
    const enqueueLarge = await costOf(large, job(large));
    expect(enqueueLarge).toEqual(enqueueSmall);

    // The oldest held poll got the job; the other 299 still wait.
    const first = await many.polls[0];
    expect(first).toMatchObject({ ok: true, value: { kind: "job" } });
    expect(
      await runInDurableObject(
        many.stub,
        (instance) => (instance as unknown as Internals).polls.size,
      ),
    ).toBe(299);

    // An agent that says goodbye gets its exit at once, also among 299 held polls.
    const leaving = many.agents[150] ?? "";
    const leavingToken = tokenFor(large, 150);
    expect(await many.stub.goodbye({ agentId: leaving, tokenId: leavingToken }, "test")).toEqual({
      ok: true,
      value: { agentId: leaving },
    });
    expect(await many.polls[150]).toMatchObject({ ok: true, value: { kind: "exit" } });

    // Every other poll ends: each agent leaves, and its poll is answered with an exit.
    for (const [i, agentId] of many.agents.entries()) {
      if (i !== 0 && i !== 150) {
        await many.stub.goodbye({ agentId, tokenId: tokenFor(large, i) }, "test done");
      }
    }
    await few.stub.goodbye({ agentId: few.agents[1] ?? "", tokenId: small.tokenId }, "done");
    const answers = await Promise.all([...many.polls, ...few.polls]);
    expect(answers.every((a) => a.ok)).toBe(true);
  }, 60_000);
});
