/**
 * Force-cancel waits 10 s after a cancel only while a live agent holds the job (its engine may
 * still stop cleanly); with none it is immediate. The run's reason says what state it saved, and
 * the closing line says who held the job instead of claiming a process was killed.
 */
import { runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { poolStub } from "../../src/pools/service.ts";
import { canForceCancel } from "../../src/runs/model.ts";
import { request } from "./helpers/api.ts";
import { useTestClock } from "./helpers/clock.ts";
import { seedOrg, type TestOrg } from "./helpers/fixtures.ts";
import { advancePoolClock } from "./helpers/pools.ts";
import { getRun, queueRun, runAction, runnableWorkspace, TestAgent } from "./helpers/runs.ts";
import { BackendClient, lockInfo, stateJson } from "./helpers/state-fixtures.ts";

const LINEAGE = "7c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f";

/** A run whose apply `agent` started, the engine having saved state serial 4 with its token. */
async function applyingWithState(org: TestOrg) {
  const { workspace, agentToken, poolId } = await runnableWorkspace(org);
  const queued = await queueRun(org, workspace.id);
  const agent = await TestAgent.register(agentToken, { name: "rack-3" });
  await agent.plan(true);
  expect((await runAction(org, queued.body.id, "confirm")).status).toBe(200);
  const job = await agent.lease();
  await agent.start(job);
  const engine = new BackendClient(workspace.id, job.runToken ?? "");
  expect((await engine.lock(lockInfo("OperationTypeApply", "engine@host"))).status).toBe(200);
  expect((await engine.put(stateJson({ serial: 4, lineage: LINEAGE }))).status).toBe(200);
  return { poolId, runId: String(queued.body.id), agent, job };
}

async function applyLog(org: TestOrg, runId: string): Promise<string> {
  const res = await request(`/api/v1/runs/${runId}/logs?phase=apply&offset=0`, {
    token: org.tokens.reader,
  });
  return res.text();
}

describe("force-cancel", () => {
  const clock = useTestClock();

  it("is immediate, without a cancel first, when the job's agent stopped heartbeating", async () => {
    const org = await seedOrg();
    const { poolId, runId, agent } = await applyingWithState(org);
    // No contact for 31 s: the pool marks the agent unknown (its default threshold is 30 s).
    await advancePoolClock(poolId, 31_000);
    await runDurableObjectAlarm(poolStub(env, poolId));

    const forced = await runAction(org, runId, "force-cancel");
    expect(forced.status, JSON.stringify(forced.body)).toBe(200);
    expect(forced.body.status).toBe("force_canceled");
    const run = await getRun(org, runId);
    expect(run.statusReason).toMatch(/^force-canceled by .+; state saved at serial 4$/);
    expect(await applyLog(org, runId)).toContain(
      `Outpost: the apply was force-canceled; no live agent held it (agent ${agent.agentId} is unknown: missed heartbeats); the job ended at once.`,
    );
  });

  it("still waits 10 s after a cancel while a live agent holds the job, and then says the agent kills it", async () => {
    const org = await seedOrg();
    const { runId } = await applyingWithState(org);
    expect((await runAction(org, runId, "cancel")).status).toBe(200);
    const tooSoon = await runAction(org, runId, "force-cancel");
    expect(tooSoon.status).toBe(409);
    expect(tooSoon.body.error.message).toMatch(/10 s/);
    expect((await getRun(org, runId)).status).toBe("applying");
    clock.advance(11_000);
    const forced = await runAction(org, runId, "force-cancel");
    expect(forced.status, JSON.stringify(forced.body)).toBe(200);
    expect(await applyLog(org, runId)).toContain(
      "Outpost: the apply was force-canceled; its agent was told to kill its process and the job ended at once.",
    );
  });

  it("is decided by the model: no live holder, no wait", () => {
    expect(canForceCancel("applying", null, 0, false)).toEqual({ ok: true, value: true });
    expect(canForceCancel("applying", null, 0, true)).toEqual({
      ok: false,
      reason: "not_canceling",
    });
    expect(canForceCancel("applied", null, 0, false)).toEqual({ ok: false, reason: "terminal" });
  });
});

describe("a run that wrote state says so whatever ended it", () => {
  it("a graceful cancel the agent reports", async () => {
    const org = await seedOrg();
    const { runId, agent, job } = await applyingWithState(org);
    expect((await runAction(org, runId, "cancel")).status).toBe(200);
    const done = await agent.finish(job, { outcome: "canceled", exitCode: 130 });
    expect(done.status, JSON.stringify(done.body)).toBe(200);
    const run = await getRun(org, runId);
    expect(run.status).toBe("canceled");
    expect(run.statusReason).toMatch(/; state saved at serial 4$/);
  });

  it("a failed apply", async () => {
    const org = await seedOrg();
    const { runId, agent, job } = await applyingWithState(org);
    const done = await agent.finish(job, { outcome: "failed", exitCode: 1 });
    expect(done.status, JSON.stringify(done.body)).toBe(200);
    const run = await getRun(org, runId);
    expect(run.status).toBe("errored");
    expect(run.statusReason).toBe("apply failed with exit code 1; state saved at serial 4");
  });
});
