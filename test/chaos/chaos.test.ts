/**
 * Chaos against the real coordinator (wrangler's local runtime on loopback, persisted state)
 * and the real agent process: agents racing for jobs, a proxy that drops, delays and duplicates
 * traffic, coordinator restarts mid-plan and mid-apply, and SIGKILLed agents. One world for the
 * file, cases in sequence; each ends by checking the invariants in helpers/invariants.ts.
 * docs/queue.md ("Failure behaviour") describes what each case shows.
 */
import { describe, expect, it, vi } from "vitest";
import { ProtocolAgent, UserApi } from "../../bench/lib/client.ts";
import {
  createWorkspace,
  queueRun,
  uploadConfiguration,
  waitForLog,
  waitForRun,
} from "../e2e/helpers/e2e.ts";
import type { AgentOptions, AgentProcess } from "../e2e/helpers/processes.ts";
import { useWorld } from "../e2e/helpers/world.ts";
import { applyStarts, expectNoJobOnDeadAgents, expectStateHistory } from "./helpers/invariants.ts";
import { ChaosProxy } from "./helpers/proxy.ts";

// The shortest liveness windows a pool allows: unknown after 10 s, errored 30 s later.
const world = useWorld({ pool: { unknownAfterSeconds: 10, erroredAfterSeconds: 30 } });

const resource = (value: string) => `resource "null_resource" "a" { value = "${value}" }\n`;

function agentFor(options: AgentOptions = {}): AgentProcess {
  return world.startAgent({ dataDir: world.freshDir("agent"), ...options });
}

const stopAgent = (agent: AgentProcess) => agent.stop(15_000);

describe("two agents racing for the same jobs", () => {
  it("hands every job to exactly one agent, and a lease only to its holder", async () => {
    const api = new UserApi(world.coordinator.url, world.ownerToken);
    const { poolId, agentToken } = await api.pool("racing");
    const ws = await api.workspace("racing", poolId);
    const [a, b] = [new ProtocolAgent(api.url, agentToken), new ProtocolAgent(api.url, agentToken)];
    await Promise.all([a.register("racer-a"), b.register("racer-b")]);

    // A lease belongs to the agent that received it: the other cannot start or finish it.
    await api.queueRun(ws);
    const job = await a.next(5);
    if (!job || job === "exit") {
      throw new Error("no job for racer a");
    }
    expect([404, 409]).toContain((await b.start(job)).status);
    expect([404, 409]).toContain((await b.finish(job)).status);
    expect((await a.start(job)).status).toBe(200);
    expect((await a.finish(job)).status).toBe(200);
    // A repeated finish changes nothing.
    expect((await a.finish(job)).status).toBeLessThan(500);

    // Both poll in tight loops while 12 runs are queued at once.
    const runs = await Promise.all(Array.from({ length: 12 }, () => api.queueRun(ws)));
    const leased = { a: [] as string[], b: [] as string[] };
    // The answers to the leaseholder's start and finish, checked once the race is over.
    const answers: number[] = [];
    const race = (agent: ProtocolAgent, name: "a" | "b") =>
      vi.waitFor(
        async () => {
          const next = await agent.next(1);
          if (next && next !== "exit") {
            leased[name].push(next.jobId);
            answers.push((await agent.start(next)).status, (await agent.finish(next)).status);
          }
          expect(leased.a.length + leased.b.length, "jobs leased").toBe(runs.length);
        },
        { timeout: 30_000, interval: 10 },
      );
    await Promise.all([race(a, "a"), race(b, "b")]);
    expect(answers).toEqual(answers.map(() => 200));
    const all = [...leased.a, ...leased.b];
    expect(new Set(all).size).toBe(all.length);
    expect(all.sort()).toEqual(runs.map((id) => `${id}:plan`).sort());
    for (const id of runs) {
      expect((await api.run(id)).status).toBe("planned_and_finished");
    }
    await Promise.all([a.goodbye(), b.goodbye()]);
  }, 60_000);
});

describe("a proxy that drops, delays and duplicates agent traffic", () => {
  it("still applies each run once, with the state history intact", async () => {
    const proxy = new ChaosProxy({
      target: world.coordinator.url,
      seed: 20261122,
      rates: { "drop-request": 0.08, "drop-response": 0.08, delay: 0.15, "duplicate-request": 0.1 },
      budget: 60,
      maxDelayMs: 400,
      // A lost jobs/next answer only parks the job until the 30 s start window ends; the racing
      // case covers leases, so the long-poll's answer is never dropped here to keep this short.
      eligible: (method, path) => !(path.endsWith("/jobs/next") && method === "POST"),
    });
    await proxy.start();
    const agent = agentFor({ env: { OUTPOST_ADDRESS: proxy.url } });
    try {
      await agent.waitForOutput(/registered/, 30_000);
      const ws = await createWorkspace(world, "through-proxy", { autoApply: true });
      const runIds: string[] = [];
      for (let i = 1; i <= 3; i++) {
        await uploadConfiguration(world, ws, { "main.tf": resource(`v${i}`) });
        const runId = await queueRun(world, ws, { operation: "apply" });
        runIds.push(runId);
        const run = await waitForRun(world, runId, ["applied", "errored", "canceled"], 60_000);
        expect(run.status, `${JSON.stringify(run)}\n${agent.output()}`).toBe("applied");
        expect(await applyStarts(world, runId)).toBe(1);
      }
      const versions = await expectStateHistory(world, ws, runIds);
      expect(versions.map((v) => v.runId)).toEqual(runIds);
      expect(proxy.faults.length).toBeGreaterThan(10);
      for (const fault of ["drop-request", "drop-response", "duplicate-request"] as const) {
        expect(proxy.count(fault), fault).toBeGreaterThan(0);
      }
    } finally {
      await stopAgent(agent);
      await proxy.stop();
    }
    await expectNoJobOnDeadAgents(world, world.poolId);
  }, 200_000);
});

describe("the coordinator restarts (state persisted)", () => {
  it("during plan and again during apply: the run applies once", async () => {
    const agent = agentFor();
    try {
      await agent.waitForOutput(/registered/, 30_000);
      const ws = await createWorkspace(world, "restarts", {
        autoApply: true,
        env: { STANDIN_PLAN_SLEEP_MS: "4000", STANDIN_APPLY_SLEEP_MS: "4000" },
      });
      await uploadConfiguration(world, ws, { "main.tf": resource("r") });
      const runId = await queueRun(world, ws, { operation: "apply" });
      await waitForRun(world, runId, ["planning"], 30_000);
      await world.coordinator.restart();
      await waitForRun(world, runId, ["applying"], 60_000);
      await world.coordinator.restart();
      const run = await waitForRun(world, runId, ["applied", "errored"], 60_000);
      expect(run.status, agent.output()).toBe("applied");
      expect(await applyStarts(world, runId)).toBe(1);
      await expectStateHistory(world, ws, [runId]);
    } finally {
      await stopAgent(agent);
    }
    await expectNoJobOnDeadAgents(world, world.poolId);
  }, 200_000);
});

describe("SIGKILL of the agent", () => {
  it("during plan and during apply: the runs error once the agent is lost, nothing re-runs", async () => {
    const planWs = await createWorkspace(world, "kill-plan", {
      env: { STANDIN_PLAN_SLEEP_MS: "15000" },
    });
    await uploadConfiguration(world, planWs, { "main.tf": resource("p") });
    const applyWs = await createWorkspace(world, "kill-apply", {
      autoApply: true,
      env: { STANDIN_APPLY_SLEEP_MS: "3000" },
    });
    await uploadConfiguration(world, applyWs, {
      "main.tf": `${resource("x")}resource "null_resource" "b" { value = "y" }\n`,
    });

    const planner = agentFor();
    await planner.waitForOutput(/registered/, 30_000);
    const planRun = await queueRun(world, planWs, { operation: "apply" });
    await waitForLog(world, planRun, "plan", /standin: planning/);
    planner.kill("SIGKILL");
    await planner.exited;

    const applier = agentFor();
    await applier.waitForOutput(/registered/, 30_000);
    const applyRun = await queueRun(world, applyWs, { operation: "apply" });
    await waitForLog(world, applyRun, "apply", /Creating\.\.\./, 40_000);
    applier.kill("SIGKILL");
    await applier.exited;

    // unknown after 10 s without contact, errored 30 s later: the started jobs fail with it.
    for (const runId of [planRun, applyRun]) {
      const run = await waitForRun(world, runId, ["errored", "planned", "applied"], 75_000);
      expect(run.status).toBe("errored");
      expect(String(run.statusReason)).toMatch(/agent/i);
    }
    expect(await applyStarts(world, applyRun)).toBe(1);
    expect(await applyStarts(world, planRun)).toBe(0);
    // The orphaned engine may have written snapshots before it died with its pipe: in order.
    await expectStateHistory(world, applyWs, [applyRun]);
    const pool = await expectNoJobOnDeadAgents(world, world.poolId);
    const killed = pool.filter((a) => a.status === "errored");
    expect(killed.length).toBeGreaterThanOrEqual(2);

    // A fresh agent gets new work, never the errored runs again.
    const fresh = agentFor();
    try {
      const next = await queueRun(world, applyWs, { operation: "plan" });
      const done = await waitForRun(world, next, ["planned_and_finished", "errored"], 60_000);
      expect(done.status).toBe("planned_and_finished");
      expect((await waitForRun(world, applyRun, ["errored"])).status).toBe("errored");
      expect(await applyStarts(world, applyRun)).toBe(1);
    } finally {
      await stopAgent(fresh);
    }
  }, 200_000);
});
