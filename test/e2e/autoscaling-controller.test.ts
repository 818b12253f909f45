/**
 * The autoscaling signal driving a real fleet: a small controller in the test process reads
 * `GET /api/v1/pools/{poolId}/autoscaling` every second, as KEDA's metrics-api scaler would, and
 * starts real agent processes up to `desiredAgents` and stops the surplus with SIGTERM (which
 * drains). Twelve runs with `minAgents` 0 and `maxAgents` 4 all apply without an error, the fleet
 * never exceeds 4 agents and returns to 0; with a workspace lock holding 6 of the runs, the
 * signal never counts those 6, and the fleet returns to 0 while they wait.
 */
import path from "node:path";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { expectStatus, type Json, queueRun, uploadConfiguration } from "./helpers/e2e.ts";
import type { AgentProcess } from "./helpers/processes.ts";
import { useWorld, type World } from "./helpers/world.ts";

type Signal = {
  desiredAgents: number;
  queuedJobs: number;
  runningJobs: number;
  idleAgents: number;
  busyAgents: number;
  minAgents: number;
  maxAgents: number;
};

type Tick = Signal & { atMs: number; fleet: number };

const MAX_AGENTS = 4;
const TICK_MS = 1_000;

/** One agent process the controller started, and what became of it. */
type Member = {
  process: AgentProcess;
  terminating: boolean;
  exit: { code: number | null; signal: NodeJS.Signals | null } | null;
};

/**
 * Scales a pool's agents to its signal: starts `desiredAgents − live` agents, and sends SIGTERM
 * to the newest agents beyond `desiredAgents` (a draining agent still counts until it exits, as
 * a terminating pod holds its place, so the fleet never exceeds what the signal asked for).
 */
class Controller {
  readonly members: Member[] = [];
  readonly ticks: Tick[] = [];
  peak = 0;
  private readonly started = Date.now();
  private readonly world: World;
  private readonly poolId: string;
  private readonly agentToken: string;
  private readonly readerToken: string;

  constructor(world: World, poolId: string, agentToken: string, readerToken: string) {
    this.world = world;
    this.poolId = poolId;
    this.agentToken = agentToken;
    this.readerToken = readerToken;
  }

  live(): Member[] {
    return this.members.filter((m) => m.exit === null);
  }

  async tick(): Promise<Tick> {
    const res = await fetch(
      `${this.world.coordinator.url}/api/v1/pools/${this.poolId}/autoscaling`,
      { headers: { authorization: `Bearer ${this.readerToken}` } },
    );
    expect(res.status).toBe(200);
    const signal = (await res.json()) as Signal;
    const live = this.live();
    for (let i = live.length; i < signal.desiredAgents; i += 1) {
      this.start();
    }
    const serving = this.live().filter((m) => !m.terminating);
    for (const member of serving.slice(signal.desiredAgents).reverse()) {
      member.terminating = true;
      member.process.kill("SIGTERM");
    }
    const tick = { ...signal, atMs: Date.now() - this.started, fleet: this.live().length };
    this.ticks.push(tick);
    return tick;
  }

  /** Ticks every second until `done` says so; bounded by `timeoutMs`. */
  runUntil(done: (tick: Tick) => Promise<boolean>, timeoutMs: number): Promise<Tick> {
    return vi.waitFor(
      async () => {
        const tick = await this.tick();
        if (!(await done(tick))) {
          throw new Error(`not done; last ticks: ${JSON.stringify(this.ticks.slice(-5))}`);
        }
        return tick;
      },
      { timeout: timeoutMs, interval: TICK_MS },
    );
  }

  /** Stops whatever still runs (after a failure) and waits for it. */
  async stopAll(): Promise<void> {
    for (const member of this.live()) {
      member.process.kill("SIGKILL");
    }
    await Promise.all(this.members.map((m) => m.process.exited));
  }

  private start(): void {
    const n = this.members.length;
    const process = this.world.startAgent({
      token: this.agentToken,
      dataDir: path.join(this.world.dir, `${this.poolId}-agent-${n}`),
      args: ["--name", `scaled-${n}`],
    });
    const member: Member = { process, terminating: false, exit: null };
    this.members.push(member);
    void process.exited.then((exit) => {
      member.exit = exit;
    });
    this.peak = Math.max(this.peak, this.live().length);
  }
}

const world = useWorld();
let readerToken: string;
const controllers: Controller[] = [];

beforeAll(async () => {
  const reader = await expectStatus(
    world.api("POST", "/api/v1/tokens", { role: "reader", description: "autoscaler" }),
    201,
  );
  readerToken = String(reader.token);
});
afterEach(async (context) => {
  // The agents' output is in the world's failure log; the signal's readings are not.
  if (context.task.result?.state === "fail") {
    for (const c of controllers) {
      console.log(JSON.stringify(c.ticks));
    }
  }
  await Promise.all(controllers.map((c) => c.stopAll()));
});

/** A pool with its own agent token and the autoscaling settings of these tests. */
async function scaledPool(name: string): Promise<{ poolId: string; agentToken: string }> {
  const pool = await expectStatus(
    world.api("POST", "/api/v1/pools", {
      name,
      minAgents: 0,
      maxAgents: MAX_AGENTS,
      jobsPerAgent: 1,
    }),
    201,
  );
  const token = await expectStatus(
    world.api("POST", `/api/v1/pools/${String(pool.id)}/tokens`, { description: name }),
    201,
  );
  return { poolId: String(pool.id), agentToken: String(token.token) };
}

/** Auto-applying workspaces on the pool, each with a configuration of one resource. */
async function workspaces(poolId: string, prefix: string, count: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i += 1) {
    const answer = await expectStatus(
      world.api("POST", "/api/v1/workspaces", {
        name: `${prefix}-${i}`,
        engineVersion: "1.9.5",
        executionMode: "agent",
        poolId,
        autoApply: true,
      }),
      201,
    );
    const id = String(answer.id);
    await uploadConfiguration(world, id, { "main.tf": `resource "null_resource" "n${i}" {}\n` });
    ids.push(id);
  }
  return ids;
}

async function statuses(runIds: string[]): Promise<string[]> {
  return Promise.all(
    runIds.map(async (id) =>
      String(((await world.api("GET", `/api/v1/runs/${id}`)).body as Json).status),
    ),
  );
}

const TERMINAL = new Set([
  "applied",
  "errored",
  "canceled",
  "force_canceled",
  "discarded",
  "planned_and_finished",
]);

/**
 * How each agent left: `drained` (exit 0 after SIGTERM), or `stopped while starting` when the
 * SIGTERM came before the agent had registered (as a pod deleted while its container starts:
 * Node's default action ends it, and it never held a job). Anything else is a crash.
 */
function departures(controller: Controller): string[] {
  return controller.members.map((m) => {
    if (m.exit?.code === 0) {
      return "drained";
    }
    if (m.exit?.signal === "SIGTERM" && !/ INFO: registered /.test(m.process.output())) {
      return "stopped while starting";
    }
    return `crashed: ${JSON.stringify(m.exit)}\n${m.process.output()}`;
  });
}

/** Every agent drained on SIGTERM or was stopped before it registered; none crashed. */
function expectNoCrash(controller: Controller): void {
  const crashed = departures(controller).filter(
    (d) => d !== "drained" && d !== "stopped while starting",
  );
  expect(crashed).toEqual([]);
  // At least the agents that ran the jobs drained.
  expect(departures(controller).filter((d) => d === "drained").length).toBeGreaterThan(0);
}

describe("a controller scaling real agents on the autoscaling signal", () => {
  it("applies 12 runs with at most 4 agents, then returns the fleet to 0", async () => {
    const { poolId, agentToken } = await scaledPool("scaled");
    const controller = new Controller(world, poolId, agentToken, readerToken);
    controllers.push(controller);
    const runIds: string[] = [];
    for (const ws of await workspaces(poolId, "scaled", 12)) {
      runIds.push(await queueRun(world, ws));
    }
    let appliedAtMs = 0;
    await controller.runUntil(async (tick) => {
      const done = (await statuses(runIds)).every((s) => TERMINAL.has(s));
      if (done && appliedAtMs === 0) {
        appliedAtMs = tick.atMs;
      }
      return done && tick.desiredAgents === 0 && tick.fleet === 0;
    }, 240_000);
    expect(await statuses(runIds)).toEqual(runIds.map(() => "applied"));
    expect(controller.peak).toBeLessThanOrEqual(MAX_AGENTS);
    expect(Math.max(...controller.ticks.map((t) => t.desiredAgents))).toBe(MAX_AGENTS);
    expect(controller.live()).toHaveLength(0);
    // Every agent left on SIGTERM after draining (or before it registered), none crashed.
    expectNoCrash(controller);
    console.log(
      `12 runs: peak ${controller.peak} agents (${controller.members.length} started, ${departures(controller).filter((d) => d === "stopped while starting").length} stopped while starting), all applied at ${(appliedAtMs / 1000).toFixed(1)} s, fleet at 0 at ${((controller.ticks.at(-1)?.atMs ?? 0) / 1000).toFixed(1)} s`,
    );
  }, 300_000);

  it("never scales for 6 runs held by workspace locks, and scales for them once unlocked", async () => {
    const { poolId, agentToken } = await scaledPool("locked");
    const controller = new Controller(world, poolId, agentToken, readerToken);
    controllers.push(controller);
    const [free, held] = [await workspaces(poolId, "free", 6), await workspaces(poolId, "held", 6)];
    for (const ws of held) {
      await expectStatus(
        world.api("POST", `/api/v1/workspaces/${ws}/lock`, { reason: "freeze" }),
        200,
      );
    }
    const freeRuns: string[] = [];
    const heldRuns: string[] = [];
    for (const ws of free) {
      freeRuns.push(await queueRun(world, ws));
    }
    for (const ws of held) {
      heldRuns.push(await queueRun(world, ws));
    }
    await controller.runUntil(async (tick) => {
      const done = (await statuses(freeRuns)).every((s) => TERMINAL.has(s));
      return done && tick.desiredAgents === 0 && tick.fleet === 0;
    }, 240_000);
    expect(await statuses(freeRuns)).toEqual(freeRuns.map(() => "applied"));
    // The held runs wait, and no reading of the signal ever counted them.
    expect(await statuses(heldRuns)).toEqual(heldRuns.map(() => "pending"));
    expect(
      Math.max(...controller.ticks.map((t) => t.queuedJobs + t.runningJobs)),
    ).toBeLessThanOrEqual(6);
    expect(controller.ticks.at(-1)).toMatchObject({ desiredAgents: 0, queuedJobs: 0, fleet: 0 });
    expect(controller.peak).toBeLessThanOrEqual(MAX_AGENTS);
    const freeTicks = controller.ticks.length;

    // Unlocked, and promoted by the reconciler as the minute's cron would: now they count.
    for (const ws of held) {
      await expectStatus(world.api("POST", `/api/v1/workspaces/${ws}/unlock`), 200);
    }
    await world.coordinator.cron();
    await controller.runUntil(async (tick) => {
      const done = (await statuses(heldRuns)).every((s) => TERMINAL.has(s));
      return done && tick.desiredAgents === 0 && tick.fleet === 0;
    }, 240_000);
    expect(await statuses(heldRuns)).toEqual(heldRuns.map(() => "applied"));
    expect(Math.max(...controller.ticks.slice(freeTicks).map((t) => t.desiredAgents))).toBe(
      MAX_AGENTS,
    );
    expect(controller.peak).toBeLessThanOrEqual(MAX_AGENTS);
    expectNoCrash(controller);
    console.log(
      `6 free + 6 locked: peak ${controller.peak} agents (${controller.members.length} started, ${departures(controller).filter((d) => d === "stopped while starting").length} stopped while starting), at most ${Math.max(...controller.ticks.slice(0, freeTicks).map((t) => t.queuedJobs + t.runningJobs))} jobs counted while locked, done at ${((controller.ticks.at(-1)?.atMs ?? 0) / 1000).toFixed(1)} s`,
    );
  }, 420_000);
});
