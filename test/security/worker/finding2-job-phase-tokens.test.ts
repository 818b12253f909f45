/**
 * Finding 2: speculative and fork pull-request jobs could write and lock their workspace's live
 * state, and the fork flag never reached the agent. Now each job's token allows exactly its
 * phase, lives only with its lease (from the start acknowledgement to the job's end, however it
 * ends), and a lock a job took is released when that job ends.
 */
import { runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import type { JobAssignment } from "@outpost/protocol";
import { describe, expect, it, vi } from "vitest";
import { poolStub } from "../../../src/pools/service.ts";
import { type ErrorBody, requestJson } from "../../worker/helpers/api.ts";
import { useTestClock } from "../../worker/helpers/clock.ts";
import { snapshotD1 } from "../../worker/helpers/d1-snapshot.ts";
import { seedOrg } from "../../worker/helpers/fixtures.ts";
import { advancePoolClock } from "../../worker/helpers/pools.ts";
import { getRun, queueRun, runAction } from "../../worker/helpers/runs.ts";
import { BackendClient, lockInfo, stateJson } from "../../worker/helpers/state-fixtures.ts";
import { finishPlan, jobUrl, runnableWithAgent, startedPlan, statusOf } from "./helpers.ts";

/** A state with a lineage nobody ever wrote: what finding 2's attacker posted. */
const madeUp = stateJson({ serial: 1, lineage: "made-up-by-the-attacker" });

async function lockRows(workspaceId: string) {
  const rows = await env.DB.prepare("SELECT job_id FROM state_locks WHERE workspace_id = ?")
    .bind(workspaceId)
    .all<{ job_id: string }>();
  return rows.results;
}

async function errorCode(path: string, token: string, method = "GET") {
  return (await requestJson<ErrorBody>(path, { method, token })).body.error?.code;
}

describe("finding 2: a job's token allows exactly its phase", () => {
  it("a plan job reads, locks and unlocks its state but never writes it", async () => {
    const org = await seedOrg();
    const target = await runnableWithAgent(org);
    const { job } = await startedPlan(org, target, { operation: "apply" });
    const tf = new BackendClient(target.workspace.id, job.runToken ?? "");
    expect((await tf.get()).status).toBe(204);
    expect((await tf.lock()).status).toBe(200);
    const before = await snapshotD1();
    const write = await tf.put(madeUp);
    expect(write.status).toBe(403);
    expect(await write.text()).toContain("never writes it; the apply job does");
    expect(await snapshotD1()).toEqual(before);
    expect((await tf.unlock()).status).toBe(200);
  });

  it("a speculative plan neither writes nor keeps a lock; LOCK is still allowed for it", async () => {
    const org = await seedOrg();
    const target = await runnableWithAgent(org);
    const { job } = await startedPlan(org, target, { operation: "plan" });
    expect(job.spec.isSpeculative).toBe(true);
    const tf = new BackendClient(target.workspace.id, job.runToken ?? "");
    expect((await tf.lock()).status).toBe(200);
    const write = await tf.put(madeUp);
    expect(write.status).toBe(403);
    expect(await write.text()).toContain("speculative plan never writes state");
  });

  it("only the apply job of a confirmed run writes, and only while it runs", async () => {
    const org = await seedOrg();
    const target = await runnableWithAgent(org);
    const { run, job } = await startedPlan(org, target, { operation: "apply" });
    await finishPlan(target.agent, job);
    expect((await runAction(org, run.id, "confirm")).status).toBe(200);
    const apply = await target.agent.lease();
    // Leased but not acknowledged: the token grants nothing yet.
    const early = new BackendClient(target.workspace.id, apply.runToken ?? "");
    expect((await early.put(madeUp)).status).toBe(401);
    await target.agent.start(apply);
    const tf = new BackendClient(target.workspace.id, apply.runToken ?? "");
    expect((await tf.put(madeUp)).status).toBe(200);
    await target.agent.finish(apply, { outcome: "succeeded" });
    const late = stateJson({ serial: 2, lineage: "made-up-by-the-attacker" });
    expect((await tf.put(late)).status).toBe(401);
  });

  it("the token dies the moment its job ends, not when the run ends", async () => {
    const org = await seedOrg();
    const target = await runnableWithAgent(org);
    const { run, job } = await startedPlan(org, target, { operation: "apply" });
    await finishPlan(target.agent, job);
    expect((await getRun(org, run.id)).status).toBe("planned");
    const token = job.runToken ?? "";
    expect(await errorCode(`/state/v1/${target.workspace.id}`, token)).toBe("TOKEN_REVOKED");
    expect(await errorCode(jobUrl(job, "/configuration"), token)).toBe("TOKEN_REVOKED");
    expect(await errorCode(jobUrl(job, "/artifacts/plan.tfplan"), token)).toBe("TOKEN_REVOKED");
  });

  it("a lease never started grants nothing, also after it expires and the job is leased again", async () => {
    const org = await seedOrg();
    const target = await runnableWithAgent(org);
    const run = await queueRun(org, target.workspace.id);
    const first = await target.agent.lease();
    const routes = (job: JobAssignment) => [
      `/state/v1/${target.workspace.id}`,
      jobUrl(job, "/configuration"),
      jobUrl(job, "/artifacts/plan.tfplan"),
    ];
    for (const path of routes(first)) {
      expect(await statusOf(path, first.runToken ?? ""), path).toBe(401);
    }
    // The start window passes: the pool takes the lease back and queues the job again.
    await advancePoolClock(target.poolId, 60_000);
    await runDurableObjectAlarm(poolStub(env, target.poolId));
    const again = await target.agent.lease();
    expect(again.jobId).toBe(first.jobId);
    expect(again.leaseId).not.toBe(first.leaseId);
    await target.agent.start(again);
    for (const path of routes(first)) {
      expect(await statusOf(path, first.runToken ?? ""), path).toBe(401);
    }
    expect(await statusOf(routes(again)[0] ?? "", again.runToken ?? "")).toBe(204);
    expect(run.body.id).toBe(again.runId);
  });
});

describe("finding 2: a lock taken by a job is released when that job ends, however it ends", () => {
  const clock = useTestClock();
  const endings: [string, (ctx: Ending) => Promise<void>][] = [
    ["finished", async ({ agent, job }) => void (await agent.finish(job, { outcome: "failed" }))],
    [
      "force-canceled",
      async ({ org, runId }) => {
        expect((await runAction(org, runId, "cancel")).status).toBe(200);
        clock.advance(60_000);
        expect((await runAction(org, runId, "force-cancel")).status).toBe(200);
      },
    ],
    [
      "its agent lost",
      async ({ poolId }) => {
        // Past unknown (30 s) and errored (5 min) without contact: the pool fails the job.
        for (const ms of [40_000, 6 * 60_000]) {
          await advancePoolClock(poolId, ms);
          await runDurableObjectAlarm(poolStub(env, poolId));
        }
      },
    ],
  ];
  type Ending = {
    org: Awaited<ReturnType<typeof seedOrg>>;
    agent: Awaited<ReturnType<typeof runnableWithAgent>>["agent"];
    job: JobAssignment;
    runId: string;
    poolId: string;
  };
  for (const [name, end] of endings) {
    it(`${name}: the lock goes with the job`, async () => {
      const org = await seedOrg();
      const target = await runnableWithAgent(org);
      const { run, job } = await startedPlan(org, target, { operation: "apply" });
      expect((await new BackendClient(target.workspace.id, job.runToken ?? "").lock()).status).toBe(
        200,
      );
      expect(await lockRows(target.workspace.id)).toEqual([{ job_id: job.jobId }]);
      await end({ org, agent: target.agent, job, runId: run.id, poolId: target.poolId });
      // An ending the pool makes on its own (the agent lost) reaches the Worker through the
      // JOB_EVENTS queue, within a second.
      await vi.waitFor(async () => expect(await lockRows(target.workspace.id)).toEqual([]), {
        timeout: 1_000,
        interval: 20,
      });
      const audit = await env.DB.prepare(
        "SELECT actor, json_extract(data, '$.jobId') AS job FROM audit_events WHERE action = 'state.lock.release' AND target_id = ?",
      )
        .bind(target.workspace.id)
        .all();
      expect(audit.results).toEqual([{ actor: "system", job: job.jobId }]);
      // Anyone may lock again at once (here: a member, after switching the workspace to local).
      await requestJson(`/api/v1/workspaces/${target.workspace.id}`, {
        method: "PATCH",
        token: org.tokens.admin,
        body: { executionMode: "local" },
      });
      expect(
        (await new BackendClient(target.workspace.id, org.tokens.member).lock(lockInfo())).status,
      ).toBe(200);
    });
  }
});
