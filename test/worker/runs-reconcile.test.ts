import {
  createExecutionContext,
  createScheduledController,
  runDurableObjectAlarm,
  runInDurableObject,
  waitOnExecutionContext,
} from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import type { Deps } from "../../src/deps.ts";
import worker from "../../src/index.ts";
import { poolStub } from "../../src/pools/service.ts";
import { reconcile } from "../../src/runs/reconcile.ts";
import { createRun } from "../../src/runs/service.ts";
import { resolveWorkspace } from "../../src/workspaces/service.ts";
import { request } from "./helpers/api.ts";
import { db, deps, seedOrg, tokenActor } from "./helpers/fixtures.ts";
import { advancePoolClock } from "./helpers/pools.ts";
import { getRun, queueRun, runnableWorkspace, TestAgent } from "./helpers/runs.ts";

/** `base` with its clock stopped at `ms`: the reconciler's time, as a test sets it. */
function at(ms: number, base: Deps = deps): Deps {
  return { ...base, now: () => ms };
}

/** Fires the Worker's cron handler exactly as Cloudflare does every minute. */
async function cron(): Promise<void> {
  const ctx = createExecutionContext();
  await worker.scheduled(
    createScheduledController({ scheduledTime: Date.now(), cron: "* * * * *" }),
    env,
    ctx,
  );
  await waitOnExecutionContext(ctx);
}

describe("the cron reconciler", () => {
  it("re-enqueues a queued run whose job its pool lost, exactly once", async () => {
    const org = await seedOrg();
    const { workspace, poolId, agentToken } = await runnableWorkspace(org);
    const run = await queueRun(org, workspace.id);
    // The pool never got the job (as if the enqueue message was lost).
    await deleteJobInPool(poolId, `${run.body.id}:plan`);
    expect(await poolStub(env, poolId).getJob(`${run.body.id}:plan`)).toBeNull();
    expect((await getRun(org, run.body.id)).waitingReason).toMatch(/not in pool .* queue yet/);
    await cron();
    await cron();
    const agent = await TestAgent.register(agentToken, { capacity: 2 });
    const job = await agent.lease();
    expect(job.jobId).toBe(`${run.body.id}:plan`);
    const none = await request("/agent/v1/jobs/next?wait=0", {
      method: "POST",
      token: agentToken,
      headers: { "outpost-agent-id": agent.agentId },
    });
    expect(none.status).toBe(204);
  });

  it("moves a run whose job ending it missed, as the pool recorded it", async () => {
    const org = await seedOrg();
    const { workspace, poolId } = await runnableWorkspace(org);
    const run = await queueRun(org, workspace.id);
    await poolStub(env, poolId).cancelJob(`${run.body.id}:plan`);
    // Pretend the ending never reached D1.
    await env.DB.prepare("UPDATE runs SET status = 'plan_queued' WHERE id = ?")
      .bind(run.body.id)
      .run();
    await cron();
    expect((await getRun(org, run.body.id)).status).toBe("canceled");
  });

  it("errors a run planning past its timeout, with the pool's words, when the pool did not", async () => {
    const org = await seedOrg();
    const { workspace, agentToken } = await runnableWorkspace(org);
    const agent = await TestAgent.register(agentToken);
    const run = await queueRun(org, workspace.id);
    const job = await agent.lease();
    await agent.start(job);
    // Just inside the limit nothing happens; just past it the run errors.
    const inside = await reconcile(at(Date.now() + 2 * 3_600_000 - 60_000));
    expect(inside.timedOut).toEqual([]);
    const past = await reconcile(at(Date.now() + 2 * 3_600_000 + 1_000));
    expect(past.timedOut).toEqual([run.body.id]);
    const errored = await getRun(org, run.body.id);
    expect(errored.status).toBe("errored");
    expect(errored.statusReason).toBe("plan ran longer than its 2 hours limit");
    const beat = await agent.heartbeat([job]);
    expect(beat.body.cancel).toEqual([
      expect.objectContaining({ jobId: job.jobId, mode: "force" }),
    ]);
  });

  it("applies a job ending the run missed, and frees a workspace held by an ended run", async () => {
    const org = await seedOrg();
    const { workspace, agentToken } = await runnableWorkspace(org);
    const agent = await TestAgent.register(agentToken);
    const run = await queueRun(org, workspace.id);
    const next = await queueRun(org, workspace.id);
    await agent.plan(false);
    // Pretend the ending never reached D1.
    await env.DB.prepare("UPDATE runs SET status = 'planning' WHERE id = ?")
      .bind(run.body.id)
      .run();
    await env.DB.prepare("UPDATE workspaces SET current_run_id = ?, locked_by = ? WHERE id = ?")
      .bind(run.body.id, run.body.id, workspace.id)
      .run();
    await env.DB.prepare("UPDATE runs SET status = 'pending' WHERE id = ?")
      .bind(next.body.id)
      .run();
    await cron();
    expect((await getRun(org, run.body.id)).status).toBe("planned_and_finished");
    expect((await getRun(org, next.body.id)).status).toBe("plan_queued");
  });
});

describe("the reconciler pages through every active run", () => {
  it("reaches all of them with more than one page, re-enqueueing lost jobs and erroring lost running ones", async () => {
    const org = await seedOrg();
    const { workspace, poolId, agentToken } = await runnableWorkspace(org);
    const queued: string[] = [];
    for (let i = 0; i < 5; i++) {
      const run = await queueRun(org, workspace.id, { operation: "plan" });
      expect(run.status).toBe(201);
      queued.push(run.body.id);
    }
    const agent = await TestAgent.register(agentToken);
    const running = await agent.lease();
    await agent.start(running);
    // Every job lost by the pool: the queued ones come back, the running one is never re-run.
    for (const id of queued) {
      await deleteJobInPool(poolId, `${id}:plan`);
    }
    const report = await reconcile(deps, 2);
    const stillQueued = queued.filter((id) => id !== running.runId);
    expect(report.reenqueued.sort()).toEqual([...stillQueued].sort());
    expect(report.lostJobs).toEqual([running.runId]);
    const lost = await getRun(org, running.runId);
    expect(lost.status).toBe("errored");
    expect(lost.statusReason).toMatch(/no longer known to its agent pool; it is not run again/);
    for (const id of stillQueued) {
      expect(await poolStub(env, poolId).getJob(`${id}:plan`)).toMatchObject({ state: "queued" });
    }
    // A second pass over a converged state repairs nothing.
    const again = await reconcile(deps, 2);
    expect(Object.values(again).flat()).toEqual([]);
  });
});

describe("one phase timeout, configured in one place", () => {
  /** The deployment's configuration with another plan timeout (PLAN_TIMEOUT_MS). */
  const withPlanTimeout = (ms: number) => ({
    ...deps,
    env: { ...env, PLAN_TIMEOUT_MS: String(ms) },
  });

  it("changing PLAN_TIMEOUT_MS changes when the pool ends a plan, and the reconciler agrees", async () => {
    const org = await seedOrg();
    const { workspace, poolId, agentToken } = await runnableWorkspace(org);
    const row = await resolveWorkspace(db, org.orgId, workspace.id);
    if (!row) {
      throw new Error("workspace not found");
    }
    const agent = await TestAgent.register(agentToken, { capacity: 2 });
    // One run queued under a 60 s plan timeout, one under the default (2 h).
    const short = await createRun(withPlanTimeout(60_000), row, {
      operation: "plan",
      message: "short",
      source: "api",
      actor: tokenActor(org.ownerTokenId),
    });
    const long = await createRun(deps, row, {
      operation: "plan",
      message: "default",
      source: "api",
      actor: tokenActor(org.ownerTokenId),
    });
    if (!short.ok || !long.ok) {
      throw new Error("runs not created");
    }
    for (const job of [await agent.lease(), await agent.lease()]) {
      await agent.start(job);
    }
    const stub = poolStub(env, poolId);
    const shortJob = `${short.value.run.id}:plan`;
    const longJob = `${long.value.run.id}:plan`;
    expect(await stub.getJob(shortJob)).toMatchObject({ timeoutMs: 60_000 });
    expect(await stub.getJob(longJob)).toMatchObject({ timeoutMs: 7_200_000 });

    await advancePoolClock(poolId, 59_000);
    await runDurableObjectAlarm(stub);
    expect(await stub.getJob(shortJob)).toMatchObject({ state: "started" });
    await advancePoolClock(poolId, 2_000);
    await runDurableObjectAlarm(stub);
    expect(await stub.getJob(shortJob)).toMatchObject({
      state: "ended",
      outcome: "errored",
      reason: "plan ran longer than its 1 minute limit",
    });
    expect(await stub.getJob(longJob)).toMatchObject({ state: "started" });
    // The pool's ending reaches the run through the queue, within a second.
    await vi.waitFor(
      async () => {
        const run = await getRun(org, short.value.run.id);
        expect(run.status).toBe("errored");
        expect(run.statusReason).toBe("plan ran longer than its 1 minute limit");
      },
      { timeout: 1_000, interval: 20 },
    );

    // The reconciler reads the same setting: under 60 s the default run is past it, under the
    // default it is not.
    const later = Date.now() + 61_000;
    expect((await reconcile(at(later))).timedOut).toEqual([]);
    const report = await reconcile(at(later, withPlanTimeout(60_000)));
    expect(report.timedOut).toEqual([long.value.run.id]);
    expect((await getRun(org, long.value.run.id)).statusReason).toBe(
      "plan ran longer than its 1 minute limit",
    );
  });
});

async function deleteJobInPool(poolId: string, jobId: string) {
  await runInDurableObject(poolStub(env, poolId), (_instance, state) => {
    state.storage.sql.exec("DELETE FROM jobs WHERE job_id = ?", jobId);
  });
}
