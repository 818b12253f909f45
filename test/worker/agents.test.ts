import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import type { HeartbeatResponse, JobsNextResponse } from "@outpost/protocol";
import { describe, expect, it } from "vitest";
import type { AgentPool } from "../../durable/agent-pool.ts";
import { poolStub } from "../../src/pools/service.ts";
import { applyEndings } from "../../src/runs/events.ts";
import { type ErrorBody, request, requestJson } from "./helpers/api.ts";
import { describeAuth } from "./helpers/auth-matrix.ts";
import { deps, seedOrg, type TestOrg } from "./helpers/fixtures.ts";
import {
  advancePoolClock,
  enqueue,
  jobPath,
  makeJob,
  registerAgent,
  revokedAgentToken,
  seedPool,
} from "./helpers/pools.ts";

const agentHeaders = (agentId: string) => ({ "outpost-agent-id": agentId });

async function next(token: string, agentId: string, wait = 0) {
  return requestJson<JobsNextResponse>(`/agent/v1/jobs/next?wait=${wait}`, {
    method: "POST",
    token,
    headers: agentHeaders(agentId),
  });
}

async function leaseOne(token: string, agentId: string) {
  const res = await next(token, agentId);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  if (res.body.action !== "run") {
    throw new Error(`expected a job, got ${JSON.stringify(res.body)}`);
  }
  return res.body.job;
}

describe("agent protocol: register, lease, start, heartbeat, finish", () => {
  it("runs a job end to end and records job.finished", async () => {
    const org = await seedOrg();
    const pool = await seedPool(org);
    const agentId = await registerAgent(pool.token, { name: "dc1-a" });
    expect(agentId).toMatch(/^agt_[a-z2-7]{26}$/);

    const none = await request("/agent/v1/jobs/next?wait=0", {
      method: "POST",
      token: pool.token,
      headers: agentHeaders(agentId),
    });
    expect(none.status).toBe(204);

    const job = makeJob("ws_one", { orgId: org.orgId });
    await enqueue(pool.poolId, job);
    const assignment = await leaseOne(pool.token, agentId);
    expect(assignment).toMatchObject({
      jobId: job.jobId,
      runId: job.runId,
      phase: "plan",
      spec: job.spec,
    });
    expect(assignment.leaseId).toMatch(/^lease_/);

    const started = await requestJson(jobPath(job.jobId, assignment.leaseId, "start"), {
      method: "POST",
      token: pool.token,
      headers: agentHeaders(agentId),
    });
    expect(started.status, JSON.stringify(started.body)).toBe(200);
    expect(started.body).toEqual({
      jobId: job.jobId,
      leaseId: assignment.leaseId,
      state: "started",
    });

    const beat = await requestJson<HeartbeatResponse>("/agent/v1/heartbeat", {
      method: "POST",
      token: pool.token,
      headers: agentHeaders(agentId),
      body: { running: [{ jobId: job.jobId, leaseId: assignment.leaseId }] },
    });
    expect(beat.status).toBe(200);
    expect(beat.body).toEqual({ cancel: [], exit: null, heartbeatIntervalSeconds: 10 });

    const finishBody = {
      outcome: "succeeded",
      exitCode: 0,
      planSummary: { adds: 1, changes: 0, destroys: 0, hasChanges: true },
    };
    const finished = await requestJson(jobPath(job.jobId, assignment.leaseId, "finish"), {
      method: "POST",
      token: pool.token,
      headers: agentHeaders(agentId),
      body: finishBody,
    });
    expect(finished.status, JSON.stringify(finished.body)).toBe(200);
    expect(finished.body).toEqual({ jobId: job.jobId, state: "ended", outcome: "succeeded" });

    // A retried finish answers the same and records nothing twice.
    const again = await requestJson(jobPath(job.jobId, assignment.leaseId, "finish"), {
      method: "POST",
      token: pool.token,
      headers: agentHeaders(agentId),
      body: finishBody,
    });
    expect(again.status).toBe(200);

    const view = await poolStub(env, pool.poolId).getJob(job.jobId);
    expect(view).toMatchObject({
      state: "ended",
      outcome: "succeeded",
      exitCode: 0,
      planSummary: { adds: 1, changes: 0, destroys: 0, imports: 0, hasChanges: true },
    });
    const audit = await env.DB.prepare(
      "SELECT action, actor, target_type FROM audit_events WHERE target_id = ?",
    )
      .bind(job.jobId)
      .all();
    expect(audit.results).toEqual([{ action: "job.finished", actor: agentId, target_type: "job" }]);
  });
});

async function heartbeat(
  token: string,
  agentId: string,
  running: { jobId: string; leaseId: string }[],
) {
  return requestJson<HeartbeatResponse>("/agent/v1/heartbeat", {
    method: "POST",
    token,
    headers: agentHeaders(agentId),
    body: { running },
  });
}

async function start(token: string, agentId: string, jobId: string, leaseId: string) {
  return requestJson<ErrorBody>(jobPath(jobId, leaseId, "start"), {
    method: "POST",
    token,
    headers: agentHeaders(agentId),
  });
}

async function agentsOf(poolId: string) {
  return poolStub(env, poolId).listAgents();
}

/** Waits (without sleeping) until the agent's long-poll is held by the pool. */
async function untilPollHeld(poolId: string, agentId: string): Promise<void> {
  for (let i = 0; i < 2000; i++) {
    const held = await runInDurableObject(poolStub(env, poolId), (_i: AgentPool, state) => {
      return state.storage.sql
        .exec<{ held: number | null }>(
          "SELECT poll_held_until AS held FROM agents WHERE id = ?",
          agentId,
        )
        .one().held;
    });
    if (held !== null) {
      return;
    }
  }
  throw new Error("the poll was never held");
}

describe("long-poll", () => {
  it("is answered the moment a matching job is queued", async () => {
    const org = await seedOrg();
    const pool = await seedPool(org);
    const agentId = await registerAgent(pool.token);
    const pending = next(pool.token, agentId, 50);
    await untilPollHeld(pool.poolId, agentId);
    const job = makeJob("ws_wake");
    await enqueue(pool.poolId, job);
    const res = await pending;
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ action: "run", job: { jobId: job.jobId } });
  });

  it("answers 204 when the wait ends without work, and counts as contact", async () => {
    const org = await seedOrg();
    const pool = await seedPool(org);
    const agentId = await registerAgent(pool.token);
    const res = await request("/agent/v1/jobs/next?wait=1", {
      method: "POST",
      token: pool.token,
      headers: agentHeaders(agentId),
    });
    expect(res.status).toBe(204);
  });

  it("keeps a polling agent online past the unknown deadline while the poll is held", async () => {
    const org = await seedOrg();
    const pool = await seedPool(org);
    const agentId = await registerAgent(pool.token);
    const pending = next(pool.token, agentId, 50);
    await untilPollHeld(pool.poolId, agentId);
    await advancePoolClock(pool.poolId, 40_000);
    await runDurableObjectAlarm(poolStub(env, pool.poolId));
    expect((await agentsOf(pool.poolId))[0]?.status).toBe("idle");
    await enqueue(pool.poolId, makeJob("ws_held"));
    expect((await pending).status).toBe(200);
  });

  it("answers a held poll with exit when the agent's token is revoked", async () => {
    const org = await seedOrg();
    const pool = await seedPool(org);
    const agentId = await registerAgent(pool.token);
    const pending = next(pool.token, agentId, 50);
    await untilPollHeld(pool.poolId, agentId);
    const revoked = await requestJson<{ exitedAgentIds: string[] }>(
      `/api/v1/pools/${pool.poolId}/tokens/${pool.tokenId}`,
      { method: "DELETE", token: org.ownerToken },
    );
    expect(revoked.status).toBe(200);
    expect(revoked.body.exitedAgentIds).toEqual([agentId]);
    const res = await pending;
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      action: "exit",
      exit: { reason: expect.stringContaining("revoked") },
    });
    const after = await next(pool.token, agentId);
    expect(after.status).toBe(401);
    expect((after.body as unknown as ErrorBody).error.code).toBe("TOKEN_REVOKED");
    expect((await agentsOf(pool.poolId))[0]).toMatchObject({ id: agentId, status: "exited" });
  });
});

describe("two-phase start and leases", () => {
  it("returns a lease not started within 30 s to the queue untouched; the old lease is lost", async () => {
    const org = await seedOrg();
    const pool = await seedPool(org);
    const a = await registerAgent(pool.token);
    const b = await registerAgent(pool.token);
    const first = makeJob("ws_a");
    const second = makeJob("ws_a");
    await enqueue(pool.poolId, first);
    await enqueue(pool.poolId, second);
    const lease = await leaseOne(pool.token, a);
    expect(lease.jobId).toBe(first.jobId);
    expect(Date.parse(lease.startBy) - Date.now()).toBeGreaterThan(25_000);

    await advancePoolClock(pool.poolId, 29_000);
    await runDurableObjectAlarm(poolStub(env, pool.poolId));
    expect((await poolStub(env, pool.poolId).getJob(first.jobId))?.state).toBe("leased");

    await advancePoolClock(pool.poolId, 2_000);
    expect(await runDurableObjectAlarm(poolStub(env, pool.poolId))).toBe(true);
    const view = await poolStub(env, pool.poolId).getJob(first.jobId);
    expect(view).toMatchObject({ state: "queued", agentId: null, leaseId: null });

    // Untouched: it is still ahead of the job queued after it.
    expect((await leaseOne(pool.token, b)).jobId).toBe(first.jobId);
    const stale = await start(pool.token, a, first.jobId, lease.leaseId);
    expect(stale.status).toBe(409);
    expect(stale.body.error.code).toBe("LEASE_LOST");
  });

  it("answers LEASE_LOST for another agent's lease and 404 for an unknown job", async () => {
    const org = await seedOrg();
    const pool = await seedPool(org);
    const a = await registerAgent(pool.token);
    const b = await registerAgent(pool.token);
    const job = makeJob("ws_x");
    await enqueue(pool.poolId, job);
    const lease = await leaseOne(pool.token, a);
    const foreign = await start(pool.token, b, job.jobId, lease.leaseId);
    expect(foreign.status).toBe(409);
    expect(foreign.body.error.code).toBe("LEASE_LOST");
    const forged = await start(pool.token, a, job.jobId, `lease_${"b".repeat(26)}`);
    expect(forged.status).toBe(409);
    const finishForeign = await requestJson<ErrorBody>(
      jobPath(job.jobId, lease.leaseId, "finish"),
      {
        method: "POST",
        token: pool.token,
        headers: agentHeaders(b),
        body: { outcome: "succeeded", exitCode: 0 },
      },
    );
    expect(finishForeign.status).toBe(409);
    const unknown = await start(pool.token, a, makeJob("ws_x").jobId, lease.leaseId);
    expect(unknown.status).toBe(404);
    expect((await start(pool.token, a, job.jobId, lease.leaseId)).status).toBe(200);
    // Starting twice is harmless.
    expect((await start(pool.token, a, job.jobId, lease.leaseId)).status).toBe(200);
  });
});

describe("cancel requests", () => {
  it("delivers a graceful cancel by heartbeat, and a force cancel ends the job at once", async () => {
    const org = await seedOrg();
    const pool = await seedPool(org);
    const stub = poolStub(env, pool.poolId);
    const agentId = await registerAgent(pool.token, { capacity: 2 });
    const one = makeJob("ws_c1", { orgId: org.orgId });
    const two = makeJob("ws_c2", { orgId: org.orgId });
    await enqueue(pool.poolId, one);
    await enqueue(pool.poolId, two);
    const l1 = await leaseOne(pool.token, agentId);
    const l2 = await leaseOne(pool.token, agentId);
    await start(pool.token, agentId, l1.jobId, l1.leaseId);
    await start(pool.token, agentId, l2.jobId, l2.leaseId);
    const running = [
      { jobId: l1.jobId, leaseId: l1.leaseId },
      { jobId: l2.jobId, leaseId: l2.leaseId },
    ];

    const graceful = await stub.cancelJob(l1.jobId, { force: false });
    expect(graceful).toMatchObject({
      ok: true,
      value: { job: { state: "started" }, ending: null },
    });
    const forced = await stub.cancelJob(l2.jobId, { force: true });
    expect(forced).toMatchObject({
      ok: true,
      value: {
        job: { state: "ended", outcome: "canceled" },
        ending: { action: "job.canceled", forced: true },
      },
    });
    // The pool answers the ending to the caller, which applies it (the run service does).
    if (forced.ok && forced.value.ending) {
      await applyEndings(deps, [forced.value.ending]);
    }

    const beat = await heartbeat(pool.token, agentId, running);
    expect(beat.body.exit).toBeNull();
    expect(beat.body.cancel).toEqual([
      { ...running[0], mode: "graceful", reason: "cancel requested" },
      { ...running[1], mode: "force", reason: "force-canceled" },
    ]);
    const late = await requestJson<ErrorBody>(jobPath(l2.jobId, l2.leaseId, "finish"), {
      method: "POST",
      token: pool.token,
      headers: agentHeaders(agentId),
      body: { outcome: "canceled", exitCode: 137 },
    });
    expect(late.status).toBe(409);
    expect(late.body.error.code).toBe("LEASE_LOST");
    const done = await requestJson(jobPath(l1.jobId, l1.leaseId, "finish"), {
      method: "POST",
      token: pool.token,
      headers: agentHeaders(agentId),
      body: { outcome: "canceled", exitCode: 130 },
    });
    expect(done.body).toMatchObject({ outcome: "canceled" });
    const audit = await env.DB.prepare(
      "SELECT target_id, action, actor FROM audit_events WHERE target_type = 'job' AND org_id = ? ORDER BY target_id",
    )
      .bind(org.orgId)
      .all();
    expect(audit.results).toEqual(
      [
        { target_id: l1.jobId, action: "job.finished", actor: agentId },
        { target_id: l2.jobId, action: "job.canceled", actor: "system" },
      ].sort((x, y) => x.target_id.localeCompare(y.target_id)),
    );
  });
});

async function agentTokens(org: TestOrg) {
  const pool = await seedPool(org);
  return { revoked: await revokedAgentToken(org, pool.poolId), otherOrg: pool.token };
}

async function leasedTarget(org: TestOrg) {
  const pool = await seedPool(org);
  const agentId = await registerAgent(pool.token);
  const job = makeJob("ws_auth", { orgId: org.orgId });
  await enqueue(pool.poolId, job);
  const lease = await leaseOne(pool.token, agentId);
  return { agentId, jobId: job.jobId, leaseId: lease.leaseId };
}

describeAuth("POST /agent/v1/register", {
  role: null,
  hasOrgIds: false,
  tokens: agentTokens,
  target: () => ({
    method: "POST",
    path: "/agent/v1/register",
    body: { version: "0.1.0", os: "linux", arch: "amd64" },
  }),
});
describeAuth("POST /agent/v1/jobs/next", {
  role: null,
  tokens: agentTokens,
  target: async (org) => {
    const pool = await seedPool(org);
    const agentId = await registerAgent(pool.token);
    return { method: "POST", path: "/agent/v1/jobs/next?wait=0", headers: agentHeaders(agentId) };
  },
});
describeAuth("POST /agent/v1/jobs/:jobId/leases/:leaseId/start", {
  role: null,
  tokens: agentTokens,
  target: async (org) => {
    const t = await leasedTarget(org);
    return {
      method: "POST",
      path: jobPath(t.jobId, t.leaseId, "start"),
      headers: agentHeaders(t.agentId),
    };
  },
});
describeAuth("POST /agent/v1/heartbeat", {
  role: null,
  tokens: agentTokens,
  target: async (org) => {
    const t = await leasedTarget(org);
    return {
      method: "POST",
      path: "/agent/v1/heartbeat",
      headers: agentHeaders(t.agentId),
      body: { running: [{ jobId: t.jobId, leaseId: t.leaseId }] },
    };
  },
});
describeAuth("POST /agent/v1/jobs/:jobId/leases/:leaseId/finish", {
  role: null,
  tokens: agentTokens,
  target: async (org) => {
    const t = await leasedTarget(org);
    return {
      method: "POST",
      path: jobPath(t.jobId, t.leaseId, "finish"),
      headers: agentHeaders(t.agentId),
      body: { outcome: "failed", exitCode: 1 },
    };
  },
});
describeAuth("POST /agent/v1/goodbye", {
  role: null,
  tokens: agentTokens,
  target: async (org) => {
    const pool = await seedPool(org);
    const agentId = await registerAgent(pool.token);
    return { method: "POST", path: "/agent/v1/goodbye", headers: agentHeaders(agentId), body: {} };
  },
});
