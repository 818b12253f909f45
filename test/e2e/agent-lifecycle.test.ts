/**
 * The agent process's life against the real coordinator: `--single`, SIGTERM with a running
 * job (finish within the grace period, cancel after it, force on a second signal), a revoked
 * token, a coordinator restart in the middle of a plan, and agents lost mid-apply (SIGKILL, and
 * a frozen one that comes back and is told to exit). Each test stops the agents it started.
 */
import { readdirSync, readFileSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { EXIT_CODES } from "../../agent/src/exit-codes.ts";
import {
  createWorkspace,
  expectStatus,
  queueRun,
  readRunLog,
  stateVersions,
  uploadConfiguration,
  waitForLog,
  waitForRun,
} from "./helpers/e2e.ts";
import { exitWithin } from "./helpers/processes.ts";
import { useWorld } from "./helpers/world.ts";

const world = useWorld();
afterEach(async () => {
  // Leave gracefully: a killed idle agent's held long-poll would still be handed the next job
  // (it returns to the queue only after the 30 s start window).
  await Promise.all(world.processes.map((agent) => agent.stop(10_000)));
});

function agentWith(args: string[], options: { token?: string; dataDir?: string } = {}) {
  return world.startAgent({ args, ...options });
}

const resource = (name: string, value: string) =>
  `resource "null_resource" "${name}" { value = "${value}" }\n`;

describe("the agent process", () => {
  it("--single takes one job, says goodbye and exits 0", async () => {
    const agent = agentWith(["--single"]);
    await agent.waitForOutput(/registered/);
    const ws = await createWorkspace(world, "single");
    await uploadConfiguration(world, ws, { "main.tf": resource("a", "1") });
    const first = await queueRun(world, ws, { operation: "plan" });
    expect(await exitWithin(agent, 20_000)).toEqual({ code: EXIT_CODES.ok, signal: null });
    expect((await waitForRun(world, first, ["planned_and_finished", "errored"])).status).toBe(
      "planned_and_finished",
    );
    expect(agent.output()).toContain("said goodbye");
    expect(agent.output().match(/job started/g)).toHaveLength(1);
    // The agent left the pool as exited, not lost.
    const pool = await expectStatus(world.api("GET", `/api/v1/pools/${world.poolId}`), 200);
    const agentsListed = pool.agents as Array<{ status: string }>;
    expect(agentsListed.map((a) => a.status)).toEqual(["exited"]);
  });

  it("on SIGTERM finishes the running job, takes no more, says goodbye and exits 0", async () => {
    const agent = agentWith([]);
    await agent.waitForOutput(/registered/);
    const ws = await createWorkspace(world, "sigterm", { env: { STANDIN_PLAN_SLEEP_MS: "3000" } });
    await uploadConfiguration(world, ws, { "main.tf": resource("a", "1") });
    const runId = await queueRun(world, ws, { operation: "plan" });
    await waitForRun(world, runId, ["planning"]);
    agent.kill("SIGTERM");
    const next = await queueRun(world, ws, { operation: "plan" });
    expect(await exitWithin(agent, 20_000)).toEqual({ code: EXIT_CODES.ok, signal: null });
    expect((await waitForRun(world, runId, ["planned_and_finished", "errored"])).status).toBe(
      "planned_and_finished",
    );
    expect(agent.output()).toContain("shutting down");
    expect(agent.output()).toContain("said goodbye");
    // The second run was queued after the signal: no job of it was taken.
    const waiting = await expectStatus(world.api("GET", `/api/v1/runs/${next}`), 200);
    expect(waiting.status).toBe("plan_queued");
    await expectStatus(world.api("POST", `/api/v1/runs/${next}/cancel`), 200);
  });

  it("cancels a job that outlives the shutdown grace period, and a second signal forces", async () => {
    const ws = await createWorkspace(world, "grace", { env: { STANDIN_PLAN_SLEEP_MS: "120000" } });
    await uploadConfiguration(world, ws, { "main.tf": resource("a", "1") });

    const graceful = agentWith(["--shutdown-grace", "1"]);
    await graceful.waitForOutput(/registered/);
    const first = await queueRun(world, ws, { operation: "plan" });
    await waitForRun(world, first, ["planning"]);
    await graceful.waitForOutput(/job started/);
    // The engine is planning (its interrupt handler set): the cancel finds it there.
    await waitForLog(world, first, "plan", "standin: planning");
    graceful.kill("SIGTERM");
    expect(await exitWithin(graceful, 20_000)).toEqual({ code: EXIT_CODES.ok, signal: null });
    expect(graceful.output()).toContain("grace period over: canceling jobs");
    expect((await waitForRun(world, first, ["canceled", "errored"])).status).toBe("canceled");
    expect(await readRunLog(world, first, "plan")).toContain("Interrupt received.");

    const forced = agentWith(["--shutdown-grace", "600"]);
    await forced.waitForOutput(/registered/);
    const second = await queueRun(world, ws, { operation: "plan" });
    await forced.waitForOutput(/job started/);
    await waitForRun(world, second, ["planning"]);
    forced.kill("SIGTERM");
    await forced.waitForOutput(/shutting down/);
    forced.kill("SIGINT");
    expect(await exitWithin(forced, 15_000)).toEqual({ code: EXIT_CODES.ok, signal: null });
    expect(forced.output()).toContain("forced shutdown");
    const run = await waitForRun(world, second, ["canceled", "errored"]);
    expect(run.status).toBe("canceled");
  });

  it("exits with the token-revoked code when its token is revoked", async () => {
    const created = await expectStatus(
      world.api("POST", `/api/v1/pools/${world.poolId}/tokens`, { description: "to revoke" }),
      201,
    );
    const agent = agentWith([], { token: String(created.token) });
    await agent.waitForOutput(/registered/);
    await expectStatus(
      world.api("DELETE", `/api/v1/pools/${world.poolId}/tokens/${String(created.id)}`),
      200,
    );
    const exit = await exitWithin(agent, 20_000);
    expect(exit).toEqual({ code: EXIT_CODES.tokenRevoked, signal: null });
    expect(agent.output()).toMatch(/revoked/);
  });

  it("a revoked token's running plan errors within a second (the pool's ending, through the queue)", async () => {
    const created = await expectStatus(
      world.api("POST", `/api/v1/pools/${world.poolId}/tokens`, {
        description: "revoked mid-plan",
      }),
      201,
    );
    const agent = agentWith([], { token: String(created.token) });
    await agent.waitForOutput(/registered/);
    const ws = await createWorkspace(world, "revoked-mid-plan", {
      env: { STANDIN_PLAN_SLEEP_MS: "20000" },
    });
    await uploadConfiguration(world, ws, { "main.tf": resource("a", "1") });
    const runId = await queueRun(world, ws, { operation: "plan" });
    await waitForRun(world, runId, ["planning"]);
    await expectStatus(
      world.api("DELETE", `/api/v1/pools/${world.poolId}/tokens/${String(created.id)}`),
      200,
    );
    // The pool ended the job on its own; the JOB_EVENTS queue carries it to the run.
    const run = await waitForRun(world, runId, ["errored"], 1_000);
    expect(String(run.statusReason)).toMatch(/was revoked while it ran this job/);
    expect((await exitWithin(agent, 20_000)).code).toBe(EXIT_CODES.tokenRevoked);
  });

  it("keeps its plan through a coordinator outage, logs the outage once, and the run completes", async () => {
    const agent = agentWith([]);
    await agent.waitForOutput(/registered/);
    const ws = await createWorkspace(world, "restart", { env: { STANDIN_PLAN_SLEEP_MS: "5000" } });
    await uploadConfiguration(world, ws, { "main.tf": resource("a", "1") });
    const runId = await queueRun(world, ws, { operation: "apply" });
    await waitForRun(world, runId, ["planning"]);
    await waitForLog(world, runId, "plan", "standin: planning");
    await world.coordinator.stop();
    // The plan goes on; its log and finish cannot reach the coordinator until it is back.
    await agent.waitForOutput(/WARN: lost contact with the coordinator; retrying with backoff: \S/);
    await world.coordinator.restart();
    await agent.waitForOutput(/INFO: contact with the coordinator restored/, 30_000);
    const run = await waitForRun(world, runId, ["planned", "errored"], 40_000);
    expect(run.status).toBe("planned");
    const log = await readRunLog(world, runId, "plan");
    expect(log).toContain("Plan: 1 to add");
    expect(log.match(/standin: planning/g)).toHaveLength(1);
    await expectStatus(world.api("POST", `/api/v1/runs/${runId}/confirm`), 200);
    expect((await waitForRun(world, runId, ["applied", "errored"])).status).toBe("applied");
    expect(agent.output().match(/job started/g)).toHaveLength(2);
    // The outage was logged once with its cause, and its end once.
    expect(agent.output().match(/lost contact with the coordinator/g)).toHaveLength(1);
    expect(agent.output().match(/contact with the coordinator restored/g)).toHaveLength(1);
  });

  // Two slow applies, 40 s of the pool's liveness windows and a fresh agent: past the 60 s default.
  it("a run whose agent is lost mid-apply errors after the pool's timeouts and is never applied again", async () => {
    await expectStatus(
      world.api("PATCH", `/api/v1/pools/${world.poolId}`, {
        unknownAfterSeconds: 10,
        erroredAfterSeconds: 30,
      }),
      200,
    );
    const slowApply = { STANDIN_APPLY_SLEEP_MS: "30000" };
    const files = { "main.tf": resource("a", "1") + resource("b", "2") };
    // Agent A: SIGKILLed with its engine, like a crashed host.
    const dirA = world.freshDir("agent-a");
    const a = agentWith([], { dataDir: dirA });
    await a.waitForOutput(/registered/);
    const wsA = await createWorkspace(world, "lost-a", { autoApply: true, env: slowApply });
    await uploadConfiguration(world, wsA, files);
    const runA = await queueRun(world, wsA, { operation: "apply" });
    await waitForRun(world, runA, ["applying"]);
    await waitForLog(world, runA, "apply", "null_resource.a: Creating...");
    // Agent B: frozen (SIGSTOP) mid-apply; it comes back after being declared errored.
    const dirB = world.freshDir("agent-b");
    const b = agentWith([], { dataDir: dirB });
    await b.waitForOutput(/registered/);
    const wsB = await createWorkspace(world, "lost-b", { autoApply: true, env: slowApply });
    await uploadConfiguration(world, wsB, files);
    const runB = await queueRun(world, wsB, { operation: "apply" });
    await waitForRun(world, runB, ["applying"]);
    await waitForLog(world, runB, "apply", "null_resource.a: Creating...");

    a.kill("SIGKILL");
    killEngines(dirA, "SIGKILL");
    b.kill("SIGSTOP");
    killEngines(dirB, "SIGKILL");
    const lostAt = Date.now();
    const erroredA = await waitForRun(world, runA, ["errored", "applied"], 70_000);
    const erroredB = await waitForRun(world, runB, ["errored", "applied"], 20_000);
    expect(erroredA.status).toBe("errored");
    expect(erroredB.status).toBe("errored");
    // Not before unknown (10 s) + errored (30 s).
    expect(Date.now() - lostAt).toBeGreaterThan(35_000);
    expect(String(erroredA.statusReason)).toMatch(/agent/);
    const versionsA = (await stateVersions(world, wsA)).length;

    // A fresh agent takes nothing: the lost apply is errored, never re-run.
    const fresh = agentWith([]);
    await fresh.waitForOutput(/registered/);
    b.kill("SIGCONT");
    // The frozen agent wakes up, is told it was given up on, and exits with its code.
    expect(await exitWithin(b, 25_000)).toEqual({ code: EXIT_CODES.toldToExit, signal: null });
    expect(b.output()).toMatch(/told this agent to exit/);
    // Whatever the fresh agent takes first is a probe queued now: had the lost apply gone back
    // to the queue, it would have been leased before it (apply jobs come first).
    const probeWs = await createWorkspace(world, "lost-probe");
    await uploadConfiguration(world, probeWs, { "main.tf": resource("p", "1") });
    const probe = await queueRun(world, probeWs, { operation: "plan", isSpeculative: true });
    await waitForRun(world, probe, ["planned_and_finished"]);
    expect(fresh.output().match(/job started.*/g)).toEqual([
      expect.stringContaining(`"jobId":"${probe}:plan"`),
    ]);
    expect((await waitForRun(world, runA, ["errored"])).status).toBe("errored");
    expect(await stateVersions(world, wsA)).toHaveLength(versionsA);
    expect((await readRunLog(world, runA, "apply")).match(/\$ terraform apply/g)).toHaveLength(1);
  }, 150_000);
});

/**
 * Signals the process groups of the engines an agent started (found by the agent's data dir in
 * their command line): engines run in their own group, so killing the agent alone leaves them.
 */
function killEngines(dataDir: string, signal: NodeJS.Signals): void {
  for (const pid of readdirSync("/proc").filter((name) => /^\d+$/.test(name))) {
    let cmdline: string;
    let stat: string;
    try {
      cmdline = readFileSync(`/proc/${pid}/cmdline`, "utf8");
      stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    } catch {
      continue;
    }
    if (!cmdline.includes(`${dataDir}/engines/`)) {
      continue;
    }
    // Fields after the parenthesised command: state, ppid, pgrp.
    const pgrp = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[2]);
    try {
      process.kill(-pgrp, signal);
    } catch {
      // Already gone.
    }
  }
}
