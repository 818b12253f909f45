/**
 * Pool autoscaling: the settings (`minAgents`, `maxAgents`, `jobsPerAgent`) through the pool API,
 * the rule of `desiredAgents` as a table, and `GET /api/v1/pools/{poolId}/autoscaling` over real
 * runs, real agents and the real pool object: only jobs that can run now count (not runs behind
 * another run of their workspace, not runs held by a workspace lock), and the signal never falls
 * below the agents holding jobs.
 */
import { describe, expect, it } from "vitest";
import {
  type AutoscalingSettings,
  desiredAgents,
  nextAutoscaling,
  type PoolLoad,
} from "../../src/pools/model.ts";
import { type ErrorBody, requestJson } from "./helpers/api.ts";
import { describeAuth } from "./helpers/auth-matrix.ts";
import { upload } from "./helpers/configuration-versions.ts";
import { snapshotD1 } from "./helpers/d1-snapshot.ts";
import { seedOrg, type TestOrg } from "./helpers/fixtures.ts";
import { seedPool } from "./helpers/pools.ts";
import { queueRun, TestAgent } from "./helpers/runs.ts";
import { gzip, tar } from "./helpers/tarball.ts";
import { createWorkspace } from "./helpers/workspaces.ts";

type Signal = {
  desiredAgents: number;
  queuedJobs: number;
  runningJobs: number;
  idleAgents: number;
  busyAgents: number;
  minAgents: number;
  maxAgents: number;
};

const settings = (minAgents: number, maxAgents: number, jobsPerAgent = 1): AutoscalingSettings => ({
  minAgents,
  maxAgents,
  jobsPerAgent,
});
const load = (queuedJobs: number, runningJobs: number, agentsHoldingJobs: number): PoolLoad => ({
  queuedJobs,
  runningJobs,
  agentsHoldingJobs,
});

describe("desiredAgents", () => {
  const rows: { why: string; load: PoolLoad; settings: AutoscalingSettings; want: number }[] = [
    {
      why: "an idle pool scales to minAgents 0",
      load: load(0, 0, 0),
      settings: settings(0, 10),
      want: 0,
    },
    {
      why: "an idle pool keeps minAgents",
      load: load(0, 0, 0),
      settings: settings(2, 10),
      want: 2,
    },
    { why: "one agent per queued job", load: load(3, 0, 0), settings: settings(0, 10), want: 3 },
    {
      why: "queued and running jobs both need agents",
      load: load(2, 1, 1),
      settings: settings(0, 10),
      want: 3,
    },
    { why: "capped at maxAgents", load: load(12, 0, 0), settings: settings(0, 4), want: 4 },
    {
      why: "jobsPerAgent packs jobs, rounding up",
      load: load(5, 0, 0),
      settings: settings(0, 10, 2),
      want: 3,
    },
    {
      why: "jobsPerAgent counts running jobs too",
      load: load(1, 3, 2),
      settings: settings(0, 10, 2),
      want: 2,
    },
    {
      why: "never below the agents holding jobs",
      load: load(0, 3, 3),
      settings: settings(0, 10, 4),
      want: 3,
    },
    {
      why: "holders win over a lowered maxAgents",
      load: load(4, 5, 5),
      settings: settings(0, 2),
      want: 5,
    },
    { why: "minAgents above the need", load: load(1, 0, 0), settings: settings(3, 5), want: 3 },
    { why: "maxAgents 0 parks the pool", load: load(7, 0, 0), settings: settings(0, 0), want: 0 },
    {
      why: "min equals max pins the fleet",
      load: load(0, 0, 0),
      settings: settings(4, 4),
      want: 4,
    },
  ];
  for (const row of rows) {
    it(row.why, () => {
      expect(desiredAgents(row.load, row.settings)).toBe(row.want);
    });
  }
});

describe("nextAutoscaling", () => {
  it("applies a patch over the current settings and refuses minAgents above maxAgents", () => {
    expect(nextAutoscaling(settings(0, 10), { maxAgents: 3 })).toEqual({
      ok: true,
      value: settings(0, 3),
    });
    expect(nextAutoscaling(settings(0, 10), { minAgents: 10, jobsPerAgent: 2 })).toEqual({
      ok: true,
      value: settings(10, 10, 2),
    });
    expect(nextAutoscaling(settings(2, 10), { maxAgents: 1 })).toEqual({
      ok: false,
      reason: "minAgents (2) must not be above maxAgents (1)",
    });
  });
});

let names = 0;
const uniqueName = () => `as-${names++}-${Date.now().toString(36)}`;

async function createPool(org: TestOrg, body: Record<string, unknown> = {}) {
  return requestJson<Record<string, unknown> & ErrorBody>("/api/v1/pools", {
    method: "POST",
    token: org.ownerToken,
    body: { name: uniqueName(), ...body },
  });
}

async function patchPool(org: TestOrg, poolId: string, body: unknown) {
  return requestJson<Record<string, unknown> & ErrorBody>(`/api/v1/pools/${poolId}`, {
    method: "PATCH",
    token: org.ownerToken,
    body,
  });
}

describe("pool autoscaling settings", () => {
  it("defaults to 0 to 10 agents, one job each, and shows them in the pool API", async () => {
    const org = await seedOrg();
    const created = await createPool(org);
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ minAgents: 0, maxAgents: 10, jobsPerAgent: 1 });
    const custom = await createPool(org, { minAgents: 1, maxAgents: 4, jobsPerAgent: 2 });
    expect(custom.body).toMatchObject({ minAgents: 1, maxAgents: 4, jobsPerAgent: 2 });
    const shown = await requestJson<Record<string, unknown>>(`/api/v1/pools/${custom.body.id}`, {
      token: org.tokens.reader,
    });
    expect(shown.body).toMatchObject({ minAgents: 1, maxAgents: 4, jobsPerAgent: 2 });
    const listed = await requestJson<{ pools: Record<string, unknown>[] }>("/api/v1/pools", {
      token: org.tokens.reader,
    });
    expect(listed.body.pools.find((p) => p.id === custom.body.id)).toMatchObject({
      minAgents: 1,
      maxAgents: 4,
      jobsPerAgent: 2,
    });
  });

  it("changes each setting with PATCH, checked against the stored ones", async () => {
    const org = await seedOrg();
    const pool = await createPool(org, { minAgents: 2, maxAgents: 5 });
    const poolId = String(pool.body.id);
    const changed = await patchPool(org, poolId, { maxAgents: 8, jobsPerAgent: 3 });
    expect(changed.status, JSON.stringify(changed.body)).toBe(200);
    expect(changed.body).toMatchObject({ minAgents: 2, maxAgents: 8, jobsPerAgent: 3 });
    const raised = await patchPool(org, poolId, { minAgents: 8 });
    expect(raised.body).toMatchObject({ minAgents: 8, maxAgents: 8 });
  });

  it("refuses invalid settings with a sentence (400), changing nothing", async () => {
    const org = await seedOrg();
    const pool = await createPool(org, { minAgents: 2, maxAgents: 5 });
    const poolId = String(pool.body.id);
    const cases: { patch: boolean; body: unknown; message: RegExp; field?: string }[] = [
      {
        patch: false,
        body: { name: uniqueName(), minAgents: 11 },
        message: /^minAgents \(11\) must not be above maxAgents \(10\)$/,
      },
      {
        patch: false,
        body: { name: uniqueName(), minAgents: 3, maxAgents: 2 },
        message: /minAgents \(3\) must not be above maxAgents \(2\)/,
      },
      {
        patch: true,
        body: { maxAgents: 1 },
        message: /minAgents \(2\) must not be above maxAgents \(1\)/,
      },
      {
        patch: true,
        body: { minAgents: 6 },
        message: /minAgents \(6\) must not be above maxAgents \(5\)/,
      },
      {
        patch: true,
        body: { jobsPerAgent: 0 },
        message: /jobsPerAgent/,
        field: "json.jobsPerAgent",
      },
      { patch: true, body: { maxAgents: 1001 }, message: /maxAgents/, field: "json.maxAgents" },
      { patch: true, body: { minAgents: -1 }, message: /minAgents/, field: "json.minAgents" },
      { patch: true, body: { minAgents: 1.5 }, message: /minAgents/, field: "json.minAgents" },
      { patch: true, body: { maxAgents: "4" }, message: /maxAgents/, field: "json.maxAgents" },
      {
        patch: true,
        body: { jobsPerAgent: null },
        message: /jobsPerAgent/,
        field: "json.jobsPerAgent",
      },
    ];
    for (const c of cases) {
      const before = await snapshotD1();
      const res = c.patch
        ? await patchPool(org, poolId, c.body)
        : await createPool(org, c.body as Record<string, unknown>);
      expect(res.status, JSON.stringify(c.body)).toBe(400);
      expect(res.body.error.code).toBe("BAD_REQUEST");
      expect(res.body.error.message).toMatch(c.message);
      if (c.field) {
        expect(res.body.error.issues?.some((i) => i.path === c.field)).toBe(true);
      }
      expect(await snapshotD1()).toEqual(before);
    }
  });
});

const CONFIG = 'resource "null_resource" "x" {}\n';

/** A workspace on the pool with an uploaded configuration, so its runs can be queued. */
async function workspaceOn(org: TestOrg, poolId: string): Promise<string> {
  const ws = await createWorkspace(org, { executionMode: "agent", poolId });
  const cv = await upload(org, ws.id, await gzip(tar([{ name: "main.tf", body: CONFIG }])));
  expect(cv.status, JSON.stringify(cv.body)).toBe(201);
  return ws.id;
}

async function signal(org: TestOrg, poolId: string, token = org.tokens.reader): Promise<Signal> {
  const res = await requestJson<Signal>(`/api/v1/pools/${poolId}/autoscaling`, { token });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body;
}

async function queued(org: TestOrg, workspaceId: string): Promise<string> {
  const res = await queueRun(org, workspaceId);
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.id;
}

describe("GET /api/v1/pools/:poolId/autoscaling", () => {
  it("counts only jobs that can run now: not runs behind another run, not locked workspaces", async () => {
    const org = await seedOrg();
    const pool = await seedPool(org);
    const [a, b, c, locked] = await Promise.all(
      [0, 1, 2, 3].map(() => workspaceOn(org, pool.poolId)),
    );
    if (!a || !b || !c || !locked) {
      throw new Error("workspaces missing");
    }
    const lock = await requestJson(`/api/v1/workspaces/${locked}/lock`, {
      method: "POST",
      token: org.tokens.member,
      body: { reason: "provider upgrade" },
    });
    expect(lock.status).toBe(200);
    await queued(org, a);
    await queued(org, b);
    await queued(org, c);
    // Behind the current run of their workspace, and held by a user's lock: both pending.
    const behind = await queued(org, a);
    const held = await queued(org, locked);
    for (const runId of [behind, held]) {
      const run = await requestJson<{ status: string }>(`/api/v1/runs/${runId}`, {
        token: org.tokens.reader,
      });
      expect(run.body.status).toBe("pending");
    }
    expect(await signal(org, pool.poolId)).toEqual({
      desiredAgents: 3,
      queuedJobs: 3,
      runningJobs: 0,
      idleAgents: 0,
      busyAgents: 0,
      minAgents: 0,
      maxAgents: 10,
    });
  });

  it("counts running jobs and idle and busy agents, packs by jobsPerAgent and clamps", async () => {
    const org = await seedOrg();
    const pool = await seedPool(org);
    const workspaces = await Promise.all([0, 1, 2, 3, 4].map(() => workspaceOn(org, pool.poolId)));
    for (const ws of workspaces) {
      await queued(org, ws);
    }
    const busy = await TestAgent.register(pool.token);
    await TestAgent.register(pool.token);
    const job = await busy.lease();
    expect(await signal(org, pool.poolId)).toEqual({
      desiredAgents: 5,
      queuedJobs: 4,
      runningJobs: 1,
      idleAgents: 1,
      busyAgents: 1,
      minAgents: 0,
      maxAgents: 10,
    });
    await busy.start(job);
    expect((await patchPool(org, pool.poolId, { jobsPerAgent: 2 })).status).toBe(200);
    expect((await signal(org, pool.poolId)).desiredAgents).toBe(3);
    expect((await patchPool(org, pool.poolId, { maxAgents: 2 })).status).toBe(200);
    expect(await signal(org, pool.poolId)).toMatchObject({ desiredAgents: 2, maxAgents: 2 });
    // Lowered below the agents holding jobs: the signal keeps them until their jobs end.
    const second = await TestAgent.register(pool.token);
    const third = await TestAgent.register(pool.token);
    await second.start(await second.lease());
    await third.start(await third.lease());
    expect((await patchPool(org, pool.poolId, { maxAgents: 1, jobsPerAgent: 1 })).status).toBe(200);
    expect(await signal(org, pool.poolId)).toMatchObject({
      desiredAgents: 3,
      queuedJobs: 2,
      runningJobs: 3,
      busyAgents: 3,
      maxAgents: 1,
    });
  });

  it("keeps minAgents for an idle pool and answers 0 with minAgents 0", async () => {
    const org = await seedOrg();
    const pool = await seedPool(org);
    expect((await signal(org, pool.poolId)).desiredAgents).toBe(0);
    expect((await patchPool(org, pool.poolId, { minAgents: 2 })).status).toBe(200);
    expect(await signal(org, pool.poolId)).toMatchObject({ desiredAgents: 2, minAgents: 2 });
  });

  it("refuses a malformed pool id (400) and another organization's pool (404)", async () => {
    const org = await seedOrg();
    const other = await seedOrg();
    const pool = await seedPool(other);
    const bad = await requestJson<ErrorBody>("/api/v1/pools/not-a-pool/autoscaling", {
      token: org.tokens.reader,
    });
    expect(bad.status).toBe(400);
    expect(bad.body.error.message).toMatch(/poolId/);
    const foreign = await requestJson<ErrorBody>(`/api/v1/pools/${pool.poolId}/autoscaling`, {
      token: org.tokens.reader,
    });
    expect(foreign.status).toBe(404);
    expect(foreign.body.error.message).toBe(`pool ${pool.poolId} not found`);
  });
});

describeAuth("GET /api/v1/pools/:poolId/autoscaling", {
  role: "reader",
  target: async (org) => ({
    method: "GET",
    path: `/api/v1/pools/${(await seedPool(org)).poolId}/autoscaling`,
  }),
});
