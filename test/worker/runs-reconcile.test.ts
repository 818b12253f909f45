import {
  createExecutionContext,
  createScheduledController,
  runInDurableObject,
  waitOnExecutionContext,
} from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import worker from "../../src/index.ts";
import { poolStub } from "../../src/pools/service.ts";
import { request } from "./helpers/api.ts";
import { seedOrg } from "./helpers/fixtures.ts";
import { getRun, queueRun, runnableWorkspace, TestAgent } from "./helpers/runs.ts";

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

  it("errors a run planning past its timeout, with the reason", async () => {
    const org = await seedOrg();
    const { workspace, agentToken } = await runnableWorkspace(org);
    const agent = await TestAgent.register(agentToken);
    const run = await queueRun(org, workspace.id);
    const job = await agent.lease();
    await agent.start(job);
    await env.DB.prepare(
      "UPDATE runs SET status_timestamps = json_set(status_timestamps, '$.planning', ?) WHERE id = ?",
    )
      .bind(Date.now() - 2 * 60 * 60 * 1000 - 1000, run.body.id)
      .run();
    await cron();
    const errored = await getRun(org, run.body.id);
    expect(errored.status).toBe("errored");
    expect(errored.statusReason).toBe("plan ran longer than its 2 h timeout");
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

async function deleteJobInPool(poolId: string, jobId: string) {
  await runInDurableObject(poolStub(env, poolId), (_instance, state) => {
    state.storage.sql.exec("DELETE FROM jobs WHERE job_id = ?", jobId);
  });
}
