/**
 * Randomized, seeded and bounded: interleaved enqueue / lease / start / heartbeat / finish /
 * cancel / expire / evict sequences against the real AgentPool, compared after every step with
 * the naive reference model in helpers/queue-model.ts. A failure names its seed and step.
 */
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { JobRow } from "../../durable/pool-store.ts";
import { poolStub } from "../../src/pools/service.ts";
import { seedOrg } from "./helpers/fixtures.ts";
import { advancePoolClock, evictPool, makeJob, registerAgent, seedPool } from "./helpers/pools.ts";
import { type Phase, QueueModel, seededRandom } from "./helpers/queue-model.ts";

// Deadlines sit 30 s away from every multiple of the 60 s step, so the few real milliseconds
// that pass while the test runs can never move an event across a deadline.
const SETTINGS = {
  leaseStartMs: 90_000,
  unknownAfterMs: 150_000,
  erroredAfterMs: 300_000,
  retentionMs: 4 * 3_600_000 + 30_000,
};
const STEP_MS = 60_000;
const WORKSPACES = ["ws_a", "ws_b", "ws_c", "ws_d"];

type Tally = Record<
  "leased" | "started" | "finished" | "leaseLost" | "exit" | "requeued" | "errored",
  number
>;

async function runSequence(seed: number, steps: number): Promise<Tally> {
  const tally: Tally = {
    leased: 0,
    started: 0,
    finished: 0,
    leaseLost: 0,
    exit: 0,
    requeued: 0,
    errored: 0,
  };
  const random = seededRandom(seed);
  const pick = <T>(items: readonly T[]): T | undefined =>
    items[Math.floor(random() * items.length)];
  const org = await seedOrg();
  const pool = await seedPool(org);
  const stub = poolStub(env, pool.poolId);
  await stub.configure({
    leaseStartTimeoutMs: SETTINGS.leaseStartMs,
    unknownAfterMs: SETTINGS.unknownAfterMs,
    erroredAfterMs: SETTINGS.erroredAfterMs,
    retentionMs: SETTINGS.retentionMs,
  });
  const model = new QueueModel(SETTINGS);
  const shapes: { capacity: number; phases: Phase[] }[] = [
    { capacity: 2, phases: ["plan", "apply"] },
    { capacity: 1, phases: ["plan"] },
    { capacity: 1, phases: ["apply"] },
  ];
  for (const shape of shapes) {
    const id = await registerAgent(pool.token, {
      capacity: shape.capacity,
      acceptedPhases: shape.phases,
    });
    model.addAgent(id, shape.capacity, shape.phases);
  }
  const ref = (agentId: string) => ({ agentId, tokenId: pool.tokenId });
  const lostLeases: { agentId: string; jobId: string; leaseId: string }[] = [];

  // An agent goes silent now and then (a crash, a network split) so liveness rules get exercised.
  const silentUntil = new Map<string, number>();
  for (let step = 0; step < steps; step++) {
    const where = `seed ${seed} step ${step}`;
    const roll = random();
    if (random() < 0.04) {
      const quiet = pick(model.agents);
      if (quiet) {
        silentUntil.set(quiet.id, step + 30 + Math.floor(random() * 30));
      }
    }
    const agent = pick(
      model.agents.filter((a) => !a.dropped && (silentUntil.get(a.id) ?? -1) < step),
    );
    if (roll < 0.2 || !agent) {
      const phase: Phase = random() < 0.3 ? "apply" : "plan";
      const cls = phase === "apply" ? 0 : random() < 0.3 ? 2 : 1;
      // Phase timeouts far beyond the sequence, so only the liveness rules end jobs here.
      const job = makeJob(pick(WORKSPACES) ?? "ws_a", {
        phase,
        speculative: cls === 2,
        timeoutMs: 1_000 * 3_600_000,
      });
      model.enqueue(job.jobId, job.workspaceId, phase, cls);
      expect((await stub.enqueue(job)).ok, where).toBe(true);
    } else if (roll < 0.4) {
      const expected = model.poll(agent.id);
      const got = await stub.pollJob(ref(agent.id), 0);
      if (!got.ok) {
        throw new Error(`${where}: poll refused ${got.reason}`);
      }
      if (expected === "exit" || expected === null) {
        expect(got.value.kind, where).toBe(expected === "exit" ? "exit" : "none");
        if (expected === "exit") {
          tally.exit++;
        }
      } else {
        expect(got.value.kind === "job" ? got.value.job.jobId : got.value.kind, where).toBe(
          expected.jobId,
        );
        if (got.value.kind === "job") {
          expected.leaseId = got.value.job.leaseId;
        }
        tally.leased++;
      }
    } else if (roll < 0.52) {
      const mine = model.held(agent.id).filter((j) => j.state === "leased");
      const foreign = model.jobs.filter((j) => j.state === "leased" && j.agentId !== agent.id);
      const stale =
        random() < 0.2
          ? pick(lostLeases.filter((l) => l.agentId === agent.id))
          : random() < 0.1
            ? (() => {
                const j = pick(foreign);
                return j?.leaseId
                  ? { agentId: agent.id, jobId: j.jobId, leaseId: j.leaseId }
                  : undefined;
              })()
            : undefined;
      const target =
        stale ??
        (() => {
          const job = pick(mine);
          return job?.leaseId
            ? { agentId: agent.id, jobId: job.jobId, leaseId: job.leaseId }
            : undefined;
        })();
      if (target) {
        const expected = model.start(agent.id, target.jobId, target.leaseId);
        const got = await stub.startJob(ref(agent.id), target.jobId, target.leaseId);
        expect(got.ok ? "ok" : got.reason, where).toBe(expected);
        tally[expected === "ok" ? "started" : "leaseLost"]++;
      }
    } else if (roll < 0.6) {
      const started = model.held(agent.id).filter((j) => j.state === "started");
      const running = started.map((j) => ({ jobId: j.jobId, leaseId: j.leaseId ?? "" }));
      const offline = agent.state === "errored" || agent.state === "exited";
      model.contact(agent);
      const got = await stub.heartbeat(ref(agent.id), running);
      if (!got.ok) {
        throw new Error(`${where}: heartbeat refused ${got.reason}`);
      }
      expect(got.value.exit !== null, where).toBe(offline);
      const graceful = offline ? [] : started.filter((j) => j.cancelRequested).map((j) => j.jobId);
      expect(
        got.value.cancel.filter((c) => c.mode === "graceful").map((c) => c.jobId),
        where,
      ).toEqual(graceful);
    } else if (roll < 0.7) {
      const job = pick(model.held(agent.id).filter((j) => j.state === "started"));
      if (job?.leaseId) {
        const expected = model.finish(agent.id, job.jobId, job.leaseId);
        const got = await stub.finishJob(ref(agent.id), job.jobId, job.leaseId, {
          outcome: "succeeded",
          exitCode: 0,
          planSummary: null,
          message: null,
        });
        expect(got.ok ? "ok" : got.reason, where).toBe(expected);
        tally.finished++;
      }
    } else if (roll < 0.74) {
      const job = pick(model.jobs.filter((j) => j.state !== "ended"));
      if (job) {
        const force = random() < 0.5;
        model.cancel(job.jobId, force);
        expect((await stub.cancelJob(job.jobId, { force })).ok, where).toBe(true);
      }
    } else if (roll < 0.98) {
      const before = new Map(model.jobs.map((j) => [j.jobId, { ...j }]));
      model.advance(STEP_MS);
      for (const j of model.jobs) {
        const was = before.get(j.jobId);
        if (was?.leaseId && was.leaseId !== j.leaseId && was.agentId) {
          lostLeases.push({ agentId: was.agentId, jobId: j.jobId, leaseId: was.leaseId });
          tally.requeued++;
        }
        if (was?.state === "started" && j.state === "ended") {
          tally.errored++;
        }
      }
      await advancePoolClock(pool.poolId, STEP_MS);
      await runDurableObjectAlarm(stub);
    } else {
      await evictPool(pool.poolId);
    }
    await compare(stub, model, where);
  }
  return tally;
}

async function compare(
  stub: ReturnType<typeof poolStub>,
  model: QueueModel,
  where: string,
): Promise<void> {
  const rows = await runInDurableObject(stub, (_i, state) =>
    state.storage.sql
      .exec<JobRow>("SELECT * FROM jobs ORDER BY seq")
      .toArray()
      .map((r) => ({ jobId: r.job_id, state: r.state, agentId: r.agent_id, leaseId: r.lease_id })),
  );
  const expectedJobs = [...model.jobs]
    .sort((a, b) => a.seq - b.seq)
    .map((j) => ({
      jobId: j.jobId,
      state: j.state,
      agentId: j.agentId,
      leaseId: j.state === "queued" ? null : j.leaseId,
    }));
  expect(rows, `${where}: jobs`).toEqual(expectedJobs);
  const byId = (a: string[], b: string[]) => (a[0] ?? "").localeCompare(b[0] ?? "");
  const agents = (await stub.listAgents()).map((a) => [a.id, a.status]).sort(byId);
  const expectedAgents = model.agents
    .filter((a) => !a.dropped)
    .map((a) => [a.id, model.status(a)])
    .sort(byId);
  expect(agents, `${where}: agents`).toEqual(expectedAgents);
}

describe("randomized sequences against a reference model", () => {
  const total: Tally = {
    leased: 0,
    started: 0,
    finished: 0,
    leaseLost: 0,
    exit: 0,
    requeued: 0,
    errored: 0,
  };
  for (const seed of [1, 7, 2026, 4242]) {
    it(`seed ${seed}: order, leases and statuses match the model`, async () => {
      const tally = await runSequence(seed, 250);
      for (const key of Object.keys(total) as (keyof Tally)[]) {
        total[key] += tally[key];
      }
    }, 120_000);
  }

  it("exercised every rule across the seeds (else matching the model proves little)", () => {
    for (const [what, count] of Object.entries(total)) {
      expect(count, `${what} happened ${count} times`).toBeGreaterThan(0);
    }
  });
});
