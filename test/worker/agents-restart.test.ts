/**
 * An agent restarted with the same data directory names its predecessor at registration: the
 * pool ends the predecessor's jobs at once through the agent-lost path (the run says what state
 * the engine saved). Only a live agent of the same pool registered with the same agent token may
 * be named; naming any other agent changes nothing.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { poolStub } from "../../src/pools/service.ts";
import { request, requestJson } from "./helpers/api.ts";
import { seedOrg, type TestOrg } from "./helpers/fixtures.ts";
import { addAgentToken, registerAgent, seedPool } from "./helpers/pools.ts";
import { getRun, queueRun, runAction, runnableWorkspace, TestAgent } from "./helpers/runs.ts";
import { BackendClient, lockInfo, stateJson } from "./helpers/state-fixtures.ts";

const LINEAGE = "5a0e6c1d-2b3f-4c5d-8e9f-0a1b2c3d4e5f";

/** A run whose apply `agent` has started: the run is `applying`. */
async function applying(org: TestOrg) {
  const { workspace, agentToken, poolId } = await runnableWorkspace(org);
  const queued = await queueRun(org, workspace.id);
  expect(queued.status, JSON.stringify(queued.body)).toBe(201);
  const agent = await TestAgent.register(agentToken, { name: "rack-1" });
  await agent.plan(true);
  expect((await runAction(org, queued.body.id, "confirm")).status).toBe(200);
  const job = await agent.lease();
  expect(job.phase).toBe("apply");
  await agent.start(job);
  expect((await getRun(org, queued.body.id)).status).toBe("applying");
  return { workspaceId: workspace.id, poolId, agentToken, runId: queued.body.id, agent, job };
}

describe("an agent restarted with the same data directory", () => {
  it("ends its predecessor's apply at once, saying what state the engine saved", async () => {
    const org = await seedOrg();
    const { workspaceId, poolId, agentToken, runId, agent, job } = await applying(org);
    // The killed agent's watchdog interrupted the engine, which saved what it applied.
    const engine = new BackendClient(workspaceId, job.runToken ?? "");
    expect((await engine.lock(lockInfo("OperationTypeApply", "engine@host"))).status).toBe(200);
    expect((await engine.put(stateJson({ serial: 4, lineage: LINEAGE }))).status).toBe(200);
    expect((await engine.unlock()).status).toBe(200);

    const successor = await registerAgent(agentToken, {
      name: "rack-1",
      predecessorAgentId: agent.agentId,
    });

    const pool = poolStub(env, poolId);
    expect((await pool.getJob(job.jobId))?.state).toBe("ended");
    const agents = await pool.listAgents();
    const before = agents.find((a) => a.id === agent.agentId);
    expect(before?.status).toBe("exited");
    expect(before?.statusReason).toBe(`restarted as ${successor}`);
    expect(agents.find((a) => a.id === successor)?.status).toBe("idle");
    const run = await vi.waitFor(
      async () => {
        const r = await getRun(org, runId);
        expect(r.status).toBe("errored");
        return r;
      },
      { timeout: 2_000, interval: 20 },
    );
    expect(run.statusReason).toBe("agent lost during apply; state saved at serial 4");
    const log = await request(`/api/v1/runs/${runId}/logs?phase=apply&offset=0`, {
      token: org.tokens.reader,
    });
    expect(await log.text()).toContain(
      `Outpost: the apply ended without its agent's report: agent ${agent.agentId} restarted (as ${successor}, same data directory) while running this job.`,
    );
  });

  it("refuses to end the jobs of an agent registered with another token, another pool or another organization", async () => {
    const org = await seedOrg();
    const { poolId, runId, agent, job } = await applying(org);
    const sameOrgOtherToken = (await addAgentToken(org, poolId)).token;
    const otherPool = (await seedPool(org)).token;
    const otherOrg = (await seedPool(await seedOrg())).token;
    for (const token of [sameOrgOtherToken, otherPool, otherOrg]) {
      await registerAgent(token, { predecessorAgentId: agent.agentId });
      const pool = poolStub(env, poolId);
      // Registration is one transaction in the pool: had it ended the job, it would show now.
      expect((await pool.getJob(job.jobId))?.state).toBe("started");
      const listed = (await pool.listAgents()).find((a) => a.id === agent.agentId);
      expect(listed?.status).toBe("busy");
    }
    // The real agent still holds its lease and finishes the apply.
    const finished = await agent.finish(job, { outcome: "succeeded" });
    expect(finished.status, JSON.stringify(finished.body)).toBe(200);
    expect(
      (
        await vi.waitFor(async () => {
          const r = await getRun(org, runId);
          expect(r.status).toBe("applied");
          return r;
        })
      ).status,
    ).toBe("applied");
  });

  it("is refused as a predecessor id that is not an agent id", async () => {
    const org = await seedOrg();
    const { agentToken } = await applying(org);
    const res = await requestJson("/agent/v1/register", {
      method: "POST",
      token: agentToken,
      body: { version: "0.1.0", os: "linux", arch: "amd64", predecessorAgentId: "rack-1" },
    });
    expect(res.status).toBe(400);
    expect(JSON.stringify(res.body)).toMatch(/predecessorAgentId.*must be an agt_ id/);
  });
});
