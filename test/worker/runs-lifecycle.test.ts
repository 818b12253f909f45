import { runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { poolStub } from "../../src/pools/service.ts";
import { reconcile } from "../../src/runs/reconcile.ts";
import { request, requestJson } from "./helpers/api.ts";
import { useTestClock } from "./helpers/clock.ts";
import { deps, seedOrg, type TestOrg } from "./helpers/fixtures.ts";
import { advancePoolClock, seedPool } from "./helpers/pools.ts";
import { getRun, queueRun, runAction, runnableWorkspace, TestAgent } from "./helpers/runs.ts";

describe("a run from queue to applied", () => {
  it("plans on an agent, waits for confirmation, applies, and frees the workspace", async () => {
    const org = await seedOrg();
    const { workspace, agentToken, poolId } = await runnableWorkspace(org);
    await requestJson(`/api/v1/workspaces/${workspace.id}/vars/TF_LOG`, {
      method: "PUT",
      token: org.tokens.admin,
      body: { value: "info", category: "env" },
    });
    await requestJson(`/api/v1/workspaces/${workspace.id}/vars/db_password`, {
      method: "PUT",
      token: org.tokens.admin,
      body: { value: "hunter2", category: "terraform", sensitive: true },
    });

    const queued = await queueRun(org, workspace.id, { message: "first" });
    expect(queued.status, JSON.stringify(queued.body)).toBe(201);
    expect(queued.body.status).toBe("plan_queued");
    expect(queued.body.waitingReason).toMatch(/no agent is registered in pool/);

    const agent = await TestAgent.register(agentToken);
    expect((await getRun(org, queued.body.id)).waitingReason).toMatch(/position 1 of 1/);

    const job = await agent.lease();
    expect(job.jobId).toBe(`${queued.body.id}:plan`);
    expect(job.runToken).toMatch(/^op_run_/);
    expect(job.spec).toMatchObject({
      operation: "apply",
      phase: "plan",
      workspaceName: workspace.name,
      engine: "terraform",
      configuration: { source: "upload" },
    });
    expect(job.variables).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ key: "TF_LOG", value: "info", category: "env" }),
        expect.objectContaining({ key: "db_password", value: "hunter2", isSensitive: true }),
      ]),
    );
    // Nothing is withheld from a job that is not a fork's.
    expect(job.withheldVariables).toBeUndefined();
    await agent.start(job);
    expect((await getRun(org, queued.body.id)).status).toBe("planning");

    const summary = { adds: 2, changes: 1, destroys: 0, imports: 0, hasChanges: true };
    await agent.finish(job, { outcome: "succeeded", planSummary: summary });
    const planned = await getRun(org, queued.body.id);
    expect(planned.status).toBe("planned");
    expect(planned.planSummary).toEqual(summary);

    const confirmed = await runAction(org, queued.body.id, "confirm");
    expect(confirmed.status, JSON.stringify(confirmed.body)).toBe(200);
    expect(confirmed.body.status).toBe("apply_queued");
    await agent.apply();
    const applied = await getRun(org, queued.body.id);
    expect(applied.status).toBe("applied");
    expect(Object.keys(applied.statusTimestamps)).toEqual(
      expect.arrayContaining([
        "pending",
        "plan_queued",
        "planning",
        "planned",
        "confirmed",
        "apply_queued",
        "applying",
        "applied",
      ]),
    );

    // The run token died with the run; the workspace is free again.
    const state = await request(`/state/v1/${workspace.id}`, { token: job.runToken ?? "" });
    expect(state.status).toBe(401);
    const ws = await requestJson<{ currentRunId: string | null }>(
      `/api/v1/workspaces/${workspace.id}`,
      {
        token: org.tokens.reader,
      },
    );
    expect(ws.body.currentRunId ?? null).toBeNull();
    expect(await poolStub(env, poolId).getJob(`${queued.body.id}:apply`)).toMatchObject({
      state: "ended",
    });

    const audit = await env.DB.prepare(
      "SELECT action FROM audit_events WHERE target_id = ? ORDER BY created_at, rowid",
    )
      .bind(queued.body.id)
      .all<{ action: string }>();
    expect(audit.results.map((r) => r.action)).toEqual(["run.create", "run.confirm"]);
  });

  it("auto-applies, ends a no-changes plan as planned_and_finished, and never applies a speculative plan", async () => {
    const org = await seedOrg();
    const auto = await runnableWorkspace(org, { autoApply: true });
    const agent = await TestAgent.register(auto.agentToken);
    const run = await queueRun(org, auto.workspace.id);
    await agent.plan(true);
    expect((await getRun(org, run.body.id)).status).toBe("apply_queued");
    await agent.apply();
    expect((await getRun(org, run.body.id)).status).toBe("applied");

    const noChanges = await queueRun(org, auto.workspace.id);
    await agent.plan(false);
    expect((await getRun(org, noChanges.body.id)).status).toBe("planned_and_finished");

    const speculative = await queueRun(org, auto.workspace.id, { isSpeculative: true });
    expect(speculative.body.status).toBe("plan_queued");
    const job = await agent.plan(true);
    expect(job.spec).toMatchObject({ isSpeculative: true });
    expect((await getRun(org, speculative.body.id)).status).toBe("planned_and_finished");
    expect((await runAction(org, speculative.body.id, "confirm")).status).toBe(409);
  });

  it("keeps later runs pending behind the current one and promotes them in order", async () => {
    const org = await seedOrg();
    const { workspace, agentToken } = await runnableWorkspace(org);
    const first = await queueRun(org, workspace.id);
    const second = await queueRun(org, workspace.id);
    const third = await queueRun(org, workspace.id);
    expect(second.body.status).toBe("pending");
    expect(second.body.waitingReason).toBe(
      `waiting for run ${first.body.id} (plan queued) to finish`,
    );
    // A speculative plan never waits for the workspace.
    const speculative = await queueRun(org, workspace.id, { isSpeculative: true });
    expect(speculative.body.status).toBe("plan_queued");

    const agent = await TestAgent.register(agentToken, { capacity: 4 });
    await agent.plan(true);
    await agent.plan(false);
    await runAction(org, first.body.id, "discard");
    expect((await getRun(org, first.body.id)).status).toBe("discarded");
    expect((await getRun(org, second.body.id)).status).toBe("plan_queued");
    expect((await getRun(org, third.body.id)).status).toBe("pending");
    expect((await getRun(org, third.body.id)).waitingReason).toMatch(
      `waiting for run ${second.body.id}`,
    );
  });

  it("holds new runs while a user locks the workspace and says so", async () => {
    const org = await seedOrg();
    const { workspace } = await runnableWorkspace(org);
    const lock = await requestJson(`/api/v1/workspaces/${workspace.id}/lock`, {
      method: "POST",
      token: org.tokens.member,
      body: { reason: "maintenance window" },
    });
    expect(lock.status, JSON.stringify(lock.body)).toBe(200);
    const run = await queueRun(org, workspace.id);
    expect(run.body.status).toBe("pending");
    expect(run.body.waitingReason).toMatch(/locked by token "member token": maintenance window/);
    await requestJson(`/api/v1/workspaces/${workspace.id}/unlock`, {
      method: "POST",
      token: org.tokens.member,
    });
    // Unlocking does not wait for the cron: the next reconcile pass at the latest promotes it.
    await reconcile(deps);
    expect((await getRun(org, run.body.id)).status).toBe("plan_queued");
  });

  it("errors a run whose job failed or whose agent was lost, with the reason", async () => {
    const org = await seedOrg();
    const { workspace, agentToken } = await runnableWorkspace(org);
    const agent = await TestAgent.register(agentToken);
    const run = await queueRun(org, workspace.id);
    const job = await agent.lease();
    await agent.start(job);
    await agent.finish(job, { outcome: "failed", exitCode: 1, message: "Error: invalid provider" });
    const failed = await getRun(org, run.body.id);
    expect(failed.status).toBe("errored");
    expect(failed.statusReason).toMatch(/invalid provider|exit code 1/);
  });
});

describe("cancel, force-cancel and discard", () => {
  const clock = useTestClock();

  it("cancels a queued run at once and removes its job from the pool", async () => {
    const org = await seedOrg();
    const { workspace, poolId } = await runnableWorkspace(org);
    const run = await queueRun(org, workspace.id);
    const canceled = await runAction(org, run.body.id, "cancel");
    expect(canceled.body.status).toBe("canceled");
    expect(await poolStub(env, poolId).getJob(`${run.body.id}:plan`)).toMatchObject({
      state: "ended",
    });
    expect((await runAction(org, run.body.id, "cancel")).status).toBe(409);
  });

  it("asks the agent to interrupt a running plan, and allows force-cancel only 10 s later", async () => {
    const org = await seedOrg();
    const { workspace, agentToken } = await runnableWorkspace(org);
    const agent = await TestAgent.register(agentToken);
    const run = await queueRun(org, workspace.id);
    const job = await agent.lease();
    await agent.start(job);
    const canceling = await runAction(org, run.body.id, "cancel");
    expect(canceling.body.status).toBe("planning");
    expect(canceling.body.cancelRequestedAt).toEqual(expect.any(String));
    const beat = await agent.heartbeat([job]);
    expect(beat.body.cancel).toEqual([
      expect.objectContaining({ jobId: job.jobId, mode: "graceful" }),
    ]);
    const tooSoon = await runAction(org, run.body.id, "force-cancel");
    expect(tooSoon.status).toBe(409);
    expect(tooSoon.body.error.message).toMatch(/10 s/);
    await agent.finish(job, { outcome: "canceled", exitCode: 130 });
    expect((await getRun(org, run.body.id)).status).toBe("canceled");
  });

  it("force-cancels a run whose graceful cancel is 10 s old", async () => {
    const org = await seedOrg();
    const { workspace, agentToken } = await runnableWorkspace(org);
    const agent = await TestAgent.register(agentToken);
    const run = await queueRun(org, workspace.id);
    const job = await agent.lease();
    await agent.start(job);
    await runAction(org, run.body.id, "cancel");
    clock.advance(11_000);
    const forced = await runAction(org, run.body.id, "force-cancel");
    expect(forced.status, JSON.stringify(forced.body)).toBe(200);
    expect(forced.body.status).toBe("force_canceled");
    const beat = await agent.heartbeat([job]);
    expect(beat.body.cancel).toEqual([
      expect.objectContaining({ jobId: job.jobId, mode: "force" }),
    ]);
  });

  it("errors at confirm when the workspace changed its pool since the plan", async () => {
    const org = await seedOrg();
    const { workspace, agentToken } = await runnableWorkspace(org);
    const agent = await TestAgent.register(agentToken);
    const run = await queueRun(org, workspace.id);
    await agent.plan(true);
    const other = await seedPool(org);
    const patched = await requestJson(`/api/v1/workspaces/${workspace.id}`, {
      method: "PATCH",
      token: org.tokens.admin,
      body: { poolId: other.poolId },
    });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    const confirm = await runAction(org, run.body.id, "confirm");
    expect(confirm.status).toBe(409);
    const errored = await getRun(org, run.body.id);
    expect(errored.status).toBe("errored");
    expect(errored.statusReason).toMatch(
      /agent pool changed from pool_\w+ to pool_\w+ after this run was planned/,
    );
  });
});

describe("a lease whose run is gone", () => {
  it("hands out the job without a token or variables, and mints no token", async () => {
    const org = await seedOrg();
    const { workspace, agentToken } = await runnableWorkspace(org);
    const run = await queueRun(org, workspace.id);
    // The run's row disappears (its workspace deleted under it) while its job is still queued.
    await env.DB.prepare("PRAGMA foreign_keys = OFF").run();
    await env.DB.prepare("DELETE FROM runs WHERE id = ?").bind(run.body.id).run();
    const agent = await TestAgent.register(agentToken);
    const job = await agent.lease();
    expect(job.runId).toBe(run.body.id);
    expect(job.runToken).toBeUndefined();
    expect(job.variables).toBeUndefined();
    const tokens = await env.DB.prepare("SELECT COUNT(*) AS n FROM run_tokens WHERE run_id = ?")
      .bind(run.body.id)
      .first<{ n: number }>();
    expect(tokens?.n).toBe(0);
  });
});

describe("job endings the pool creates on its own", () => {
  /** Waits (at most one second) for the run to show `status`, as a user polling it would. */
  async function showsWithinASecond(org: TestOrg, runId: string, status: string) {
    await vi.waitFor(
      async () => {
        expect((await getRun(org, runId)).status).toBe(status);
      },
      { timeout: 1_000, interval: 20 },
    );
    return getRun(org, runId);
  }

  async function runningPlan() {
    const org = await seedOrg();
    const runnable = await runnableWorkspace(org);
    const agent = await TestAgent.register(runnable.agentToken, { name: "rack-9" });
    const run = await queueRun(org, runnable.workspace.id);
    const job = await agent.lease();
    await agent.start(job);
    expect((await getRun(org, run.body.id)).status).toBe("planning");
    return { org, runnable, agent, runId: run.body.id };
  }

  it("a lost agent (the alarm) errors its run within a second", async () => {
    const { org, runnable, runId } = await runningPlan();
    await advancePoolClock(runnable.poolId, 31_000);
    await runDurableObjectAlarm(poolStub(env, runnable.poolId));
    await advancePoolClock(runnable.poolId, 5 * 60_000);
    await runDurableObjectAlarm(poolStub(env, runnable.poolId));
    const run = await showsWithinASecond(org, runId, "errored");
    expect(run.statusReason).toMatch(/agent rack-9 \(agt_\w+\) stopped responding/);
  });

  it("a revoked agent token errors its agent's run within a second", async () => {
    const { org, runnable, runId } = await runningPlan();
    const revoked = await request(
      `/api/v1/pools/${runnable.poolId}/tokens/${runnable.agentTokenId}`,
      { method: "DELETE", token: org.ownerToken },
    );
    expect(revoked.status).toBe(200);
    const run = await showsWithinASecond(org, runId, "errored");
    expect(run.statusReason).toMatch(/token of agent agt_\w+ was revoked/);
  });

  it("an agent that says goodbye mid-job errors its run within a second", async () => {
    const { org, agent, runId, runnable } = await runningPlan();
    const bye = await request("/agent/v1/goodbye", {
      method: "POST",
      token: runnable.agentToken,
      headers: { "outpost-agent-id": agent.agentId },
      body: { reason: "SIGTERM" },
    });
    expect(bye.status).toBe(200);
    const run = await showsWithinASecond(org, runId, "errored");
    expect(run.statusReason).toMatch(/exited while running this job/);
  });
});
