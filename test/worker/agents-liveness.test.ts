import { runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import type { HeartbeatResponse, JobsNextResponse, RegisterResponse } from "@outpost/protocol";
import { describe, expect, it, vi } from "vitest";
import { poolStub } from "../../src/pools/service.ts";
import { type ErrorBody, requestJson } from "./helpers/api.ts";
import { seedOrg } from "./helpers/fixtures.ts";
import {
  advancePoolClock,
  enqueue,
  jobPath,
  makeJob,
  registerAgent,
  seedPool,
} from "./helpers/pools.ts";

const headers = (agentId: string) => ({ "outpost-agent-id": agentId });

async function poll(token: string, agentId: string) {
  return requestJson<JobsNextResponse>("/agent/v1/jobs/next", {
    method: "POST",
    token,
    headers: headers(agentId),
  });
}

async function lease(token: string, agentId: string) {
  const res = await poll(token, agentId);
  if (res.body?.action !== "run") {
    throw new Error(`expected a job: ${res.status} ${JSON.stringify(res.body)}`);
  }
  return res.body.job;
}

async function start(token: string, agentId: string, jobId: string, leaseId: string) {
  return requestJson(jobPath(jobId, leaseId, "start"), {
    method: "POST",
    token,
    headers: headers(agentId),
  });
}

async function beat(token: string, agentId: string, running: { jobId: string; leaseId: string }[]) {
  return requestJson<HeartbeatResponse>("/agent/v1/heartbeat", {
    method: "POST",
    token,
    headers: headers(agentId),
    body: { running },
  });
}

async function statusOf(poolId: string, agentId: string) {
  return (await poolStub(env, poolId).listAgents()).find((a) => a.id === agentId)?.status;
}

async function tick(poolId: string, ms: number) {
  await advancePoolClock(poolId, ms);
  await runDurableObjectAlarm(poolStub(env, poolId));
}

describe("agent statuses driven by the alarm", () => {
  it("idle → busy → unknown → errored: started jobs fail naming the agent, unstarted ones requeue", async () => {
    const org = await seedOrg();
    const pool = await seedPool(org);
    const stub = poolStub(env, pool.poolId);
    // A long start window, so the unstarted lease is still held when the agent errors.
    await stub.configure({ leaseStartTimeoutMs: 3_600_000 });
    const agentId = await registerAgent(pool.token, { capacity: 2, name: "rack-7" });
    expect(await statusOf(pool.poolId, agentId)).toBe("idle");

    const running = makeJob("ws_1", { orgId: org.orgId });
    const waiting = makeJob("ws_2", { orgId: org.orgId });
    await enqueue(pool.poolId, running);
    await enqueue(pool.poolId, waiting);
    const l1 = await lease(pool.token, agentId);
    await lease(pool.token, agentId);
    await start(pool.token, agentId, l1.jobId, l1.leaseId);
    expect(await statusOf(pool.poolId, agentId)).toBe("busy");
    const lastContact = (await stub.listAgents())[0]?.lastContactAt ?? 0;

    await tick(pool.poolId, 29_000);
    expect(await statusOf(pool.poolId, agentId)).toBe("busy");
    await tick(pool.poolId, 2_000);
    expect(await statusOf(pool.poolId, agentId)).toBe("unknown");
    expect(await stub.whyWaiting(makeJob("ws_none").jobId)).toEqual({
      ok: false,
      reason: "not_found",
    });

    await tick(pool.poolId, 299_000);
    expect(await statusOf(pool.poolId, agentId)).toBe("errored");
    const failed = await stub.getJob(running.jobId);
    expect(failed).toMatchObject({ state: "ended", outcome: "errored" });
    expect(failed?.reason).toContain(agentId);
    expect(failed?.reason).toContain("rack-7");
    expect(failed?.reason).toContain(new Date(lastContact).toISOString());
    expect(await stub.getJob(waiting.jobId)).toMatchObject({ state: "queued", agentId: null });

    // The ending the alarm created reaches the Worker through the JOB_EVENTS queue.
    await vi.waitFor(
      async () => {
        const audit = await env.DB.prepare(
          "SELECT action, actor FROM audit_events WHERE target_id = ?",
        )
          .bind(running.jobId)
          .all();
        expect(audit.results).toEqual([{ action: "job.errored", actor: "system" }]);
      },
      { timeout: 1_000, interval: 20 },
    );

    // Coming back: told to exit, never handed work.
    const back = await poll(pool.token, agentId);
    expect(back.status).toBe(200);
    expect(back.body).toMatchObject({
      action: "exit",
      exit: { reason: expect.stringContaining("errored") },
    });
    const hb = await beat(pool.token, agentId, [{ jobId: l1.jobId, leaseId: l1.leaseId }]);
    expect(hb.body.exit?.reason).toContain("errored");
    expect(hb.body.cancel).toMatchObject([{ jobId: l1.jobId, mode: "force" }]);
    expect(await statusOf(pool.poolId, agentId)).toBe("errored");

    // Dropped from the listing 2 h after it went offline; then it is unknown to the pool.
    await tick(pool.poolId, 2 * 3_600_000);
    expect(await statusOf(pool.poolId, agentId)).toBeUndefined();
    const gone = await poll(pool.token, agentId);
    expect(gone.status).toBe(404);
  });

  it("an unknown agent that makes contact is online again", async () => {
    const org = await seedOrg();
    const pool = await seedPool(org);
    const agentId = await registerAgent(pool.token);
    await tick(pool.poolId, 31_000);
    expect(await statusOf(pool.poolId, agentId)).toBe("unknown");
    expect((await beat(pool.token, agentId, [])).body.exit).toBeNull();
    expect(await statusOf(pool.poolId, agentId)).toBe("idle");
  });

  it("tells a registering agent the pool's unknown threshold (its readiness window)", async () => {
    const org = await seedOrg();
    const pool = await seedPool(org);
    const register = () =>
      requestJson<RegisterResponse>("/agent/v1/register", {
        method: "POST",
        token: pool.token,
        body: { version: "0.1.0", os: "linux", arch: "amd64" },
      });
    const first = await register();
    expect(first.status).toBe(201);
    expect(first.body.unknownAfterSeconds).toBe(30);
    const patched = await requestJson(`/api/v1/pools/${pool.poolId}`, {
      method: "PATCH",
      token: org.ownerToken,
      body: { unknownAfterSeconds: 45 },
    });
    expect(patched.status).toBe(200);
    expect((await register()).body.unknownAfterSeconds).toBe(45);
  });

  it("uses the pool's own liveness settings (PATCH)", async () => {
    const org = await seedOrg();
    const pool = await seedPool(org);
    const patched = await requestJson(`/api/v1/pools/${pool.poolId}`, {
      method: "PATCH",
      token: org.ownerToken,
      body: { unknownAfterSeconds: 120, erroredAfterSeconds: 60, retentionSeconds: 600 },
    });
    expect(patched.status).toBe(200);
    const agentId = await registerAgent(pool.token);
    await tick(pool.poolId, 100_000);
    expect(await statusOf(pool.poolId, agentId)).toBe("idle");
    await tick(pool.poolId, 21_000);
    expect(await statusOf(pool.poolId, agentId)).toBe("unknown");
    await tick(pool.poolId, 61_000);
    expect(await statusOf(pool.poolId, agentId)).toBe("errored");
    await tick(pool.poolId, 600_000);
    expect(await statusOf(pool.poolId, agentId)).toBeUndefined();
  });

  it("fails a started job its agent stopped reporting, after the grace period", async () => {
    const org = await seedOrg();
    const pool = await seedPool(org);
    const agentId = await registerAgent(pool.token);
    const job = makeJob("ws_r", { orgId: org.orgId });
    await enqueue(pool.poolId, job);
    const l = await lease(pool.token, agentId);
    await start(pool.token, agentId, l.jobId, l.leaseId);
    await advancePoolClock(pool.poolId, 20_000);
    expect((await beat(pool.token, agentId, [])).status).toBe(200);
    expect((await poolStub(env, pool.poolId).getJob(job.jobId))?.state).toBe("started");
    await advancePoolClock(pool.poolId, 15_000);
    await beat(pool.token, agentId, []);
    const view = await poolStub(env, pool.poolId).getJob(job.jobId);
    expect(view).toMatchObject({ state: "ended", outcome: "errored" });
    expect(view?.reason).toContain("stopped reporting");
  });

  it("fails a plan that runs past its 2 h limit and tells the agent to stop it", async () => {
    const org = await seedOrg();
    const pool = await seedPool(org);
    const agentId = await registerAgent(pool.token);
    const job = makeJob("ws_t", { orgId: org.orgId });
    await enqueue(pool.poolId, job);
    const l = await lease(pool.token, agentId);
    await start(pool.token, agentId, l.jobId, l.leaseId);
    for (let i = 0; i < 13; i++) {
      await advancePoolClock(pool.poolId, 10 * 60_000);
      await beat(pool.token, agentId, [{ jobId: l.jobId, leaseId: l.leaseId }]);
      await runDurableObjectAlarm(poolStub(env, pool.poolId));
    }
    const view = await poolStub(env, pool.poolId).getJob(job.jobId);
    expect(view).toMatchObject({ state: "ended", outcome: "errored" });
    expect(view?.reason).toContain("2 hours limit");
    const hb = await beat(pool.token, agentId, [{ jobId: l.jobId, leaseId: l.leaseId }]);
    expect(hb.body.cancel).toMatchObject([{ jobId: l.jobId, mode: "force" }]);
  });
});

describe("goodbye", () => {
  it("exits the agent: unstarted leases requeue, running jobs fail, a return is told to exit", async () => {
    const org = await seedOrg();
    const pool = await seedPool(org);
    const agentId = await registerAgent(pool.token, { capacity: 2 });
    const a = makeJob("ws_g1", { orgId: org.orgId });
    const b = makeJob("ws_g2", { orgId: org.orgId });
    await enqueue(pool.poolId, a);
    await enqueue(pool.poolId, b);
    const la = await lease(pool.token, agentId);
    await lease(pool.token, agentId);
    await start(pool.token, agentId, la.jobId, la.leaseId);
    const bye = await requestJson("/agent/v1/goodbye", {
      method: "POST",
      token: pool.token,
      headers: headers(agentId),
      body: { reason: "SIGTERM" },
    });
    expect(bye.status).toBe(200);
    expect(bye.body).toEqual({ agentId, status: "exited" });
    const stub = poolStub(env, pool.poolId);
    expect(await stub.getJob(a.jobId)).toMatchObject({ state: "ended", outcome: "errored" });
    expect(await stub.getJob(b.jobId)).toMatchObject({ state: "queued" });
    expect((await stub.listAgents())[0]).toMatchObject({
      status: "exited",
      statusReason: "SIGTERM",
    });
    expect((await poll(pool.token, agentId)).body).toMatchObject({ action: "exit" });
    const again = await requestJson("/agent/v1/goodbye", {
      method: "POST",
      token: pool.token,
      headers: headers(agentId),
      body: {},
    });
    expect(again.status).toBe(200);
  });
});

describe("capacity and accepted phases", () => {
  it("never gives an agent more jobs than its capacity or a phase it does not accept", async () => {
    const org = await seedOrg();
    const pool = await seedPool(org);
    const planner = await registerAgent(pool.token, { capacity: 2, acceptedPhases: ["plan"] });
    const applier = await registerAgent(pool.token, { capacity: 1, acceptedPhases: ["apply"] });
    const apply = makeJob("ws_p", { phase: "apply" });
    const plans = [makeJob("ws_p"), makeJob("ws_q"), makeJob("ws_r")];
    await enqueue(pool.poolId, apply);
    for (const p of plans) {
      await enqueue(pool.poolId, p);
    }
    const got = [
      (await lease(pool.token, planner)).jobId,
      (await lease(pool.token, planner)).jobId,
    ];
    expect(got).toEqual([plans[0]?.jobId, plans[1]?.jobId]);
    expect((await poll(pool.token, planner)).status).toBe(204);
    expect((await lease(pool.token, applier)).jobId).toBe(apply.jobId);
    expect((await poll(pool.token, applier)).status).toBe(204);

    const stub = poolStub(env, pool.poolId);
    const why = await stub.whyWaiting(plans[2]?.jobId ?? "");
    expect(why).toEqual({
      ok: true,
      value: {
        state: "queued",
        position: 1,
        queueLength: 1,
        reason: { kind: "all_agents_busy", agents: 1, runningJobs: 2 },
      },
    });
  });
});

describe("bad input", () => {
  it("refuses a missing or malformed agent id, job id, lease id, wait and bodies with 400", async () => {
    const org = await seedOrg();
    const pool = await seedPool(org);
    const agentId = await registerAgent(pool.token);
    const job = makeJob("ws_b");
    const lease = `lease_${"a".repeat(26)}`;
    const cases: {
      path: string;
      headers?: Record<string, string>;
      body?: unknown;
      field: string;
    }[] = [
      { path: "/agent/v1/jobs/next", field: "header.outpost-agent-id" },
      { path: "/agent/v1/jobs/next", headers: { "outpost-agent-id": "agt_x" }, field: "header" },
      { path: "/agent/v1/jobs/next?wait=-1", headers: headers(agentId), field: "query.wait" },
      { path: "/agent/v1/jobs/next?wait=abc", headers: headers(agentId), field: "query.wait" },
      { path: "/agent/v1/jobs/next?wait=99999", headers: headers(agentId), field: "query.wait" },
      {
        path: `/agent/v1/jobs/run_x%3Aplan/leases/${lease}/start`,
        headers: headers(agentId),
        field: "param.jobId",
      },
      {
        path: `/agent/v1/jobs/${job.runId}%3Adestroy/leases/${lease}/start`,
        headers: headers(agentId),
        field: "param.jobId",
      },
      {
        path: jobPath(job.jobId, "lease_nope", "start"),
        headers: headers(agentId),
        field: "param.leaseId",
      },
      {
        path: "/agent/v1/heartbeat",
        headers: headers(agentId),
        body: { running: "x" },
        field: "json.running",
      },
      {
        path: "/agent/v1/heartbeat",
        headers: headers(agentId),
        body: { running: [{ jobId: job.jobId }] },
        field: "json.running",
      },
      {
        path: "/agent/v1/heartbeat",
        headers: headers(agentId),
        body: { running: [], extra: 1 },
        field: "json",
      },
      {
        path: jobPath(job.jobId, lease, "finish"),
        headers: headers(agentId),
        body: { outcome: "great", exitCode: 0 },
        field: "json.outcome",
      },
      {
        path: jobPath(job.jobId, lease, "finish"),
        headers: headers(agentId),
        body: { outcome: "failed", exitCode: 999 },
        field: "json.exitCode",
      },
      {
        path: jobPath(job.jobId, lease, "finish"),
        headers: headers(agentId),
        body: { outcome: "failed", exitCode: 1, planSummary: { adds: -1 } },
        field: "json.planSummary",
      },
      {
        path: "/agent/v1/register",
        body: { version: "1", os: "linux", arch: "x", capacity: 0 },
        field: "json.capacity",
      },
      {
        path: "/agent/v1/register",
        body: { version: "1", os: "linux", arch: "x", acceptedPhases: ["destroy"] },
        field: "json.acceptedPhases",
      },
      {
        path: "/agent/v1/register",
        body: { version: "1", os: "linux", arch: "x", acceptedPhases: [] },
        field: "json.acceptedPhases",
      },
      { path: "/agent/v1/register", body: { os: "linux", arch: "x" }, field: "json.version" },
      {
        path: "/agent/v1/goodbye",
        headers: headers(agentId),
        body: { reason: 5 },
        field: "json.reason",
      },
    ];
    for (const c of cases) {
      const res = await requestJson<ErrorBody>(c.path, {
        method: "POST",
        token: pool.token,
        headers: c.headers,
        body: c.body,
      });
      expect(res.status, `${c.path} ${JSON.stringify(c.body)} ${JSON.stringify(res.body)}`).toBe(
        400,
      );
      expect(res.body.error.code).toBe("BAD_REQUEST");
      expect(
        res.body.error.issues?.some((i) => i.path.startsWith(c.field)),
        `${c.field}: ${JSON.stringify(res.body.error.issues)}`,
      ).toBe(true);
    }
    const malformed = await requestJson<ErrorBody>("/agent/v1/heartbeat", {
      method: "POST",
      token: pool.token,
      headers: { ...headers(agentId), "content-type": "application/json" },
      body: "{nope",
    });
    expect(malformed.status).toBe(400);
    // Nothing was registered or queued by any of it.
    expect(await poolStub(env, pool.poolId).listAgents()).toHaveLength(1);
  });

  it("answers 404 for an agent id the pool does not know, or one registered with another token", async () => {
    const org = await seedOrg();
    const pool = await seedPool(org);
    const other = await seedPool(org);
    const agentId = await registerAgent(pool.token);
    const unknown = await poll(pool.token, `agt_${"c".repeat(26)}`);
    expect(unknown.status).toBe(404);
    const crossed = await poll(other.token, agentId);
    expect(crossed.status).toBe(404);
  });
});
