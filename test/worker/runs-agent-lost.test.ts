/**
 * An apply whose agent dies: the engine, interrupted by the agent's watchdog, saves state with the
 * run token while the pool still counts the job as running; that state is stored as a version of
 * the run, and when the pool declares the agent lost the run errors saying what was saved.
 */
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import type { AgentPool } from "../../durable/agent-pool.ts";
import { poolStub } from "../../src/pools/service.ts";
import { erroredReason } from "../../src/runs/model.ts";
import { requestJson } from "./helpers/api.ts";
import { seedOrg, type TestOrg } from "./helpers/fixtures.ts";
import { advancePoolClock } from "./helpers/pools.ts";
import { getRun, queueRun, runAction, runnableWorkspace, TestAgent } from "./helpers/runs.ts";
import { BackendClient, lockInfo, stateJson } from "./helpers/state-fixtures.ts";

const LINEAGE = "3f6c2b9e-6c2a-4f7e-9a51-0b1d4c3e2a10";

/** A run confirmed, its apply leased and started by `agent`: the run is `applying`. */
async function applying(org: TestOrg) {
  const { workspace, agentToken, poolId } = await runnableWorkspace(org);
  const queued = await queueRun(org, workspace.id);
  expect(queued.status, JSON.stringify(queued.body)).toBe(201);
  const agent = await TestAgent.register(agentToken, { name: "rack-7" });
  await agent.plan(true);
  expect((await runAction(org, queued.body.id, "confirm")).status).toBe(200);
  const job = await agent.lease();
  expect(job.phase).toBe("apply");
  await agent.start(job);
  expect((await getRun(org, queued.body.id)).status).toBe("applying");
  return { workspaceId: workspace.id, poolId, runId: queued.body.id, job };
}

/** The run once the pool's ending reached it through the JOB_EVENTS queue (bounded wait). */
async function endedRun(org: TestOrg, runId: string) {
  return vi.waitFor(
    async () => {
      const run = await getRun(org, runId);
      expect(run.status).toBe("errored");
      return run;
    },
    { timeout: 2_000, interval: 20 },
  );
}

/** No contact from the agent: unknown after 30 s, errored 5 min later, as the pool defaults say. */
async function loseAgent(poolId: string): Promise<void> {
  await advancePoolClock(poolId, 31_000);
  await runDurableObjectAlarm(poolStub(env, poolId));
  await advancePoolClock(poolId, 5 * 60_000 + 1_000);
  await runDurableObjectAlarm(poolStub(env, poolId));
}

describe("an apply whose agent is lost", () => {
  it("stores what the interrupted engine saved as the run's state, and errors saying at which serial", async () => {
    const org = await seedOrg();
    const { workspaceId, poolId, runId, job } = await applying(org);

    // The agent is dead; its engine got SIGINT and persists what it applied, as terraform does.
    const engine = new BackendClient(workspaceId, job.runToken ?? "");
    expect((await engine.lock(lockInfo("OperationTypeApply", "engine@agent-host"))).status).toBe(
      200,
    );
    for (const serial of [1, 2]) {
      const put = await engine.put(stateJson({ serial, lineage: LINEAGE }));
      expect(put.status, await put.clone().text()).toBe(200);
    }
    expect((await engine.unlock()).status).toBe(200);

    await loseAgent(poolId);
    const run = await endedRun(org, runId);
    expect(run.status).toBe("errored");
    expect(run.statusReason).toBe("agent lost during apply; state saved at serial 2");

    const versions = await requestJson<{ stateVersions: { serial: number; runId: string }[] }>(
      `/api/v1/workspaces/${workspaceId}/state-versions`,
      { token: org.tokens.reader },
    );
    expect(versions.body.stateVersions.map((v) => [v.serial, v.runId])).toEqual([
      [2, runId],
      [1, runId],
    ]);
    // The job ended: its token writes nothing more.
    const late = await engine.put(stateJson({ serial: 3, lineage: LINEAGE }));
    expect(late.status).toBe(401);
  });

  it("says so when the engine saved nothing", async () => {
    const org = await seedOrg();
    const { poolId, runId } = await applying(org);
    await loseAgent(poolId);
    const run = await endedRun(org, runId);
    expect(run.status).toBe("errored");
    expect(run.statusReason).toBe("agent lost during apply; no state saved");
  });

  it("a plan whose agent is lost keeps the pool's words: a plan saves no state", async () => {
    const org = await seedOrg();
    const { workspace, agentToken, poolId } = await runnableWorkspace(org);
    const queued = await queueRun(org, workspace.id);
    const agent = await TestAgent.register(agentToken, { name: "rack-8" });
    const job = await agent.lease();
    await agent.start(job);
    await loseAgent(poolId);
    const run = await endedRun(org, queued.body.id);
    expect(run.status).toBe("errored");
    expect(run.statusReason).toMatch(/^agent rack-8 \(agt_\w+\) stopped responding; last contact/);
  });
});

describe("erroredReason", () => {
  const base = {
    phase: "apply" as const,
    outcome: "errored" as const,
    forced: false,
    reason: null,
    exitCode: null,
    planSummary: null,
    agentLost: false,
  };
  it.each<[string, Parameters<typeof erroredReason>[0], number | null, string]>([
    [
      "agent lost, state saved",
      { ...base, agentLost: true },
      4,
      "agent lost during apply; state saved at serial 4",
    ],
    [
      "agent lost, nothing saved",
      { ...base, agentLost: true },
      null,
      "agent lost during apply; no state saved",
    ],
    [
      "agent lost during a plan",
      { ...base, phase: "plan", agentLost: true, reason: "agent x stopped responding" },
      null,
      "agent x stopped responding",
    ],
    [
      "timed out, not lost, with state saved",
      { ...base, reason: "apply ran longer than its 1440 minute limit" },
      4,
      "apply ran longer than its 1440 minute limit; state saved at serial 4",
    ],
    ["failed with an exit code", { ...base, exitCode: 1 }, null, "apply failed with exit code 1"],
    ["failed without one", base, null, "apply failed"],
  ])("%s", (_what, job, serial, expected) => {
    expect(erroredReason(job, serial)).toBe(expected);
  });
});

describe("an apply that times out", () => {
  it("is not an agent loss: the run gives the timeout, and the state it saved", async () => {
    const org = await seedOrg();
    const { workspaceId, poolId, runId, job } = await applying(org);
    const engine = new BackendClient(workspaceId, job.runToken ?? "");
    expect((await engine.put(stateJson({ serial: 1, lineage: LINEAGE }))).status).toBe(200);
    const stub = poolStub(env, poolId);
    // A deployment whose APPLY_TIMEOUT_MS is a minute, for this job.
    await runInDurableObject(stub, (_instance: AgentPool, state) => {
      state.storage.sql.exec(
        "UPDATE jobs SET timeout_ms = 60000, due_at = started_at + 60000 WHERE state = 'started'",
      );
    });
    // Past the phase limit; the silent agent is only unknown yet (errored after 5 more minutes).
    await advancePoolClock(poolId, 61_000);
    await runDurableObjectAlarm(stub);
    const run = await endedRun(org, runId);
    expect(run.status).toBe("errored");
    expect(run.statusReason).toBe(
      "apply ran longer than its 1 minute limit; state saved at serial 1",
    );
  });
});
