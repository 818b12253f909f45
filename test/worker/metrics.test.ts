/**
 * `GET /metrics` through the real routes, the real pool objects and real D1 (with its triggers):
 * the pool gauges follow the queue and the agents, runs and job timings are counted once each
 * and never decrease (a deleted workspace's series ends, the pool's histograms keep its jobs),
 * the answer covers the token's organization only, it is OpenMetrics when asked by `Accept`, and
 * a scrape costs the same number of D1 statements and pool calls whatever the number of runs.
 */
import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { newApp } from "../../src/app.ts";
import { systemClock } from "../../src/deps.ts";
import { DURATION_BUCKETS_SECONDS, WAIT_BUCKETS_SECONDS } from "../../src/metrics/model.ts";
import { endRunJobQuery, insertRunJobQuery } from "../../src/runs/job-records.ts";
import { BASE, type ErrorBody, request, requestJson } from "./helpers/api.ts";
import { describeAuth } from "./helpers/auth-matrix.ts";
import { upload } from "./helpers/configuration-versions.ts";
import { countingEnv } from "./helpers/counting-env.ts";
import { snapshotD1 } from "./helpers/d1-snapshot.ts";
import { db, seedOrg, type TestOrg } from "./helpers/fixtures.ts";
import { seedTeam } from "./helpers/people.ts";
import { advancePoolClock, seedPool } from "./helpers/pools.ts";
import { queueRun, runAction, TestAgent } from "./helpers/runs.ts";
import { gzip, tar } from "./helpers/tarball.ts";
import { createWorkspace, seedRun, type WorkspaceBody } from "./helpers/workspaces.ts";

/** What Prometheus 2.x sends when it scrapes. */
const PROMETHEUS_ACCEPT =
  "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";

async function scrape(token: string, accept?: string) {
  const res = await request("/metrics", { token, ...(accept ? { headers: { accept } } : {}) });
  expect(res.status).toBe(200);
  // Decoded by hand: workerd warns when .text() reads a type it does not know as text.
  const text = new TextDecoder().decode(await res.arrayBuffer());
  return { text, contentType: res.headers.get("content-type") };
}

/** Every sample of an exposition by its series (`name{labels}`). */
function samples(text: string): Map<string, number> {
  const map = new Map<string, number>();
  for (const line of text.split("\n")) {
    if (line !== "" && !line.startsWith("#")) {
      const space = line.lastIndexOf(" ");
      map.set(line.slice(0, space), Number(line.slice(space + 1)));
    }
  }
  return map;
}

/** The samples of one family (by prefix), for whole-family comparisons. */
function family(m: Map<string, number>, prefix: string): Map<string, number> {
  return new Map([...m].filter(([series]) => series.startsWith(prefix)));
}

type Named = { id: string; name: string };
const poolLabels = (p: Named) => `pool="${p.name}",pool_id="${p.id}"`;
const wsLabels = (w: Named) => `workspace="${w.name}",workspace_id="${w.id}"`;

async function workspaceOn(org: TestOrg, poolId: string): Promise<WorkspaceBody> {
  const ws = await createWorkspace(org, { executionMode: "agent", poolId });
  const body = await gzip(tar([{ name: "main.tf", body: 'resource "null_resource" "x" {}\n' }]));
  expect((await upload(org, ws.id, body)).status).toBe(201);
  return ws;
}

async function queued(org: TestOrg, workspaceId: string): Promise<string> {
  const res = await queueRun(org, workspaceId);
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.id;
}

/** Queues a run in the workspace and takes it to `applied` with the agent. */
async function apply(org: TestOrg, agent: TestAgent, workspaceId: string): Promise<void> {
  const runId = await queued(org, workspaceId);
  await agent.plan(true);
  expect((await runAction(org, runId, "confirm")).status).toBe(200);
  await agent.apply();
}

async function namedPool(org: TestOrg) {
  const seeded = await seedPool(org);
  const res = await requestJson<{ name: string }>(`/api/v1/pools/${seeded.poolId}`, {
    token: org.tokens.reader,
  });
  return { ...seeded, id: seeded.poolId, name: res.body.name };
}

describe("GET /metrics", () => {
  it("follows the queue, the agents and the runs of the organization's pools", async () => {
    const org = await seedOrg();
    const p = await namedPool(org);
    const a = await workspaceOn(org, p.id);
    const b = await workspaceOn(org, p.id);
    // The pool's clock says its jobs were queued 90 s ago.
    await advancePoolClock(p.id, -90_000);
    const first = await queued(org, a.id);
    await queued(org, b.id);
    let m = samples((await scrape(org.tokens.reader)).text);
    expect(family(m, "outpost_pool_jobs{")).toEqual(
      new Map([
        [`outpost_pool_jobs{${poolLabels(p)},phase="plan",state="queued"}`, 2],
        [`outpost_pool_jobs{${poolLabels(p)},phase="plan",state="running"}`, 0],
        [`outpost_pool_jobs{${poolLabels(p)},phase="apply",state="queued"}`, 0],
        [`outpost_pool_jobs{${poolLabels(p)},phase="apply",state="running"}`, 0],
      ]),
    );
    expect(m.get(`outpost_pool_desired_agents{${poolLabels(p)}}`)).toBe(2);
    const age = m.get(`outpost_pool_oldest_queued_job_age_seconds{${poolLabels(p)}}`) ?? 0;
    expect(age).toBeGreaterThanOrEqual(90);
    expect(age).toBeLessThan(150);

    const agent = await TestAgent.register(p.token);
    const job = await agent.lease();
    expect(job.runId).toBe(first);
    await agent.start(job);
    await TestAgent.register(p.token);
    m = samples((await scrape(org.tokens.reader)).text);
    expect(m.get(`outpost_pool_jobs{${poolLabels(p)},phase="plan",state="queued"}`)).toBe(1);
    expect(m.get(`outpost_pool_jobs{${poolLabels(p)},phase="plan",state="running"}`)).toBe(1);
    expect(family(m, "outpost_pool_agents{")).toEqual(
      new Map(
        (["idle", "busy", "unknown", "errored", "exited"] as const).map((status) => [
          `outpost_pool_agents{${poolLabels(p)},status="${status}"}`,
          status === "idle" || status === "busy" ? 1 : 0,
        ]),
      ),
    );

    // a's plan fails (the run errors), b's is discarded, then a second run of a applies.
    await agent.finish(job, { outcome: "failed", exitCode: 1, message: "Error: bad provider" });
    const second = await agent.plan(true);
    expect(second.workspaceId).toBe(b.id);
    expect((await runAction(org, second.runId, "discard")).status).toBe(200);
    await apply(org, agent, a.id);
    m = samples((await scrape(org.tokens.reader)).text);
    expect(family(m, "outpost_runs_total")).toEqual(
      new Map([
        [`outpost_runs_total{${wsLabels(a)},outcome="applied"}`, 1],
        [`outpost_runs_total{${wsLabels(a)},outcome="errored"}`, 1],
        [`outpost_runs_total{${wsLabels(b)},outcome="discarded"}`, 1],
      ]),
    );
    // Three plans and one apply started and ended.
    const wait = (phase: string, le: string) =>
      m.get(`outpost_job_wait_seconds_bucket{${poolLabels(p)},phase="${phase}",le="${le}"}`);
    expect(m.get(`outpost_job_wait_seconds_count{${poolLabels(p)},phase="plan"}`)).toBe(3);
    expect(m.get(`outpost_job_wait_seconds_count{${poolLabels(p)},phase="apply"}`)).toBe(1);
    expect(wait("plan", "+Inf")).toBe(3);
    expect(wait("plan", "3600")).toBe(3);
    expect(m.get(`outpost_job_duration_seconds_count{${poolLabels(p)},phase="plan"}`)).toBe(3);
    expect(m.get(`outpost_job_duration_seconds_count{${poolLabels(p)},phase="apply"}`)).toBe(1);
    expect(m.get(`outpost_pool_jobs{${poolLabels(p)},phase="plan",state="queued"}`)).toBe(0);
    expect(m.get(`outpost_pool_desired_agents{${poolLabels(p)}}`)).toBe(0);
  });

  it("never decreases a counter: a deleted workspace's series ends, the histograms keep its jobs", async () => {
    const org = await seedOrg();
    const p = await namedPool(org);
    const gone = await workspaceOn(org, p.id);
    const kept = await workspaceOn(org, p.id);
    const agent = await TestAgent.register(p.token);
    await apply(org, agent, gone.id);
    await apply(org, agent, gone.id);
    await apply(org, agent, kept.id);
    const before = samples((await scrape(org.tokens.reader)).text);
    expect(before.get(`outpost_runs_total{${wsLabels(gone)},outcome="applied"}`)).toBe(2);
    const deleted = await request(`/api/v1/workspaces/${gone.id}`, {
      method: "DELETE",
      token: org.tokens.admin,
    });
    expect(deleted.status).toBe(200);
    const after = samples((await scrape(org.tokens.reader)).text);
    expect(family(after, "outpost_runs_total")).toEqual(
      new Map([[`outpost_runs_total{${wsLabels(kept)},outcome="applied"}`, 1]]),
    );
    expect(family(after, "outpost_job_")).toEqual(family(before, "outpost_job_"));
    expect(after.get(`outpost_job_wait_seconds_count{${poolLabels(p)},phase="apply"}`)).toBe(3);
  });

  it("covers the token's organization only", async () => {
    const org = await seedOrg();
    const other = await seedOrg();
    const mine = await namedPool(org);
    const theirs = await namedPool(other);
    const theirWorkspace = await workspaceOn(other, theirs.id);
    await apply(other, await TestAgent.register(theirs.token), theirWorkspace.id);
    const text = (await scrape(org.tokens.reader)).text;
    expect(text).toContain(`pool_id="${mine.id}"`);
    expect(text).not.toContain(theirs.id);
    expect(text).not.toContain(theirWorkspace.id);
    expect(family(samples(text), "outpost_runs_total")).toEqual(new Map());
    expect((await scrape(other.tokens.reader)).text).toContain(theirWorkspace.id);
  });

  it("is read by a team token with a role, refused (403) to one without, changing nothing", async () => {
    const org = await seedOrg();
    const p = await namedPool(org);
    const scrapers = await seedTeam(org, { role: "reader" });
    const noRole = await seedTeam(org, { role: null });
    expect((await scrape(scrapers.token)).text).toContain(`pool_id="${p.id}"`);
    for (const path of ["/metrics", `/api/v1/pools/${p.id}/autoscaling`]) {
      const before = await snapshotD1();
      const refused = await requestJson<ErrorBody>(path, { token: noRole.token });
      expect(refused.status, path).toBe(403);
      expect(refused.body.error.code).toBe("FORBIDDEN");
      expect(await snapshotD1()).toEqual(before);
    }
  });

  it("answers OpenMetrics when Accept prefers it, else the text format", async () => {
    const org = await seedOrg();
    const p = await namedPool(org);
    const ws = await workspaceOn(org, p.id);
    await apply(org, await TestAgent.register(p.token), ws.id);
    for (const accept of [undefined, "*/*", "text/plain;version=0.0.4", "application/json"]) {
      const text = await scrape(org.tokens.reader, accept);
      expect(text.contentType, accept).toBe("text/plain; version=0.0.4; charset=utf-8");
      expect(text.text).toContain("# TYPE outpost_runs_total counter\n");
      expect(text.text).toContain(
        `outpost_job_wait_seconds_bucket{${poolLabels(p)},phase="plan",le="1"}`,
      );
      expect(text.text).not.toContain("# EOF");
      expect(text.text).not.toContain("# UNIT");
    }
    for (const accept of [PROMETHEUS_ACCEPT, "application/openmetrics-text"]) {
      const om = await scrape(org.tokens.reader, accept);
      expect(om.contentType).toBe("application/openmetrics-text; version=1.0.0; charset=utf-8");
      expect(om.text.endsWith("\n# EOF\n")).toBe(true);
      expect(om.text).toContain("# TYPE outpost_runs counter\n");
      expect(om.text).toContain(`outpost_runs_total{${wsLabels(ws)},outcome="applied"} 1\n`);
      expect(om.text).toContain("# UNIT outpost_job_wait_seconds seconds\n");
      expect(om.text).toContain(
        `outpost_job_wait_seconds_bucket{${poolLabels(p)},phase="plan",le="1.0"}`,
      );
    }
  });

  it("costs the same D1 statements and one call per pool, whatever the number of runs", async () => {
    const org = await seedOrg();
    const pools = [await namedPool(org), await namedPool(org)];
    const workspaces = await Promise.all(pools.map((p) => workspaceOn(org, p.id)));
    const app = newApp(systemClock);
    const cost = async () => {
      const counted = countingEnv();
      const ctx = createExecutionContext();
      const res = await app.fetch(
        new Request(`${BASE}/metrics`, {
          headers: { authorization: `Bearer ${org.tokens.reader}` },
        }),
        counted.env,
        ctx,
      );
      expect(res.status).toBe(200);
      await res.text();
      await waitOnExecutionContext(ctx);
      return { statements: counted.statements.length, poolCalls: counted.poolCalls.sort() };
    };
    await cost(); // The token's first use records last_used_at; later ones within a minute do not.
    const few = await cost();
    for (const [i, p] of pools.entries()) {
      const agent = await TestAgent.register(p.token);
      for (let run = 0; run < 4; run += 1) {
        await apply(org, agent, workspaces[i]?.id ?? "");
      }
    }
    const many = await cost();
    expect(many).toEqual(few);
    // The token, then one batch: pools, run outcomes, job timings, drift.
    expect(many.statements).toBe(5);
    expect(many.poolCalls).toEqual(pools.map((p) => `${p.id}.report`).sort());
    console.log(
      `GET /metrics: ${many.statements} D1 statements, ${many.poolCalls.length} pool calls`,
    );

    const counted = countingEnv();
    const ctx = createExecutionContext();
    const res = await app.fetch(
      new Request(`${BASE}/api/v1/pools/${pools[0]?.id}/autoscaling`, {
        headers: { authorization: `Bearer ${org.tokens.reader}` },
      }),
      counted.env,
      ctx,
    );
    expect(res.status).toBe(200);
    await waitOnExecutionContext(ctx);
    // The token, the path's pool resolved by the names resolver (an id or a name), the pool.
    expect(counted.statements).toHaveLength(3);
    expect(counted.poolCalls).toEqual([`${pools[0]?.id}.report`]);
    // Eight runs applied through the real pool: seconds on a loaded machine, not a bound.
  }, 30_000);
});

describe("the counters' triggers", () => {
  /** The bound the model files a value under: the first at or above it, else +Inf. */
  const expectedLe = (seconds: number, bounds: readonly number[]) =>
    String(bounds.find((b) => seconds <= b) ?? "+Inf");

  it("file each wait and duration under the bound the model names, once per job", async () => {
    const org = await seedOrg();
    const p = await namedPool(org);
    const ws = await workspaceOn(org, p.id);
    const now = Date.now();
    const cases = (bounds: readonly number[]) => [
      0,
      ...bounds.flatMap((b) => [b, b + 0.001]),
      (bounds.at(-1) ?? 0) + 5000,
    ];
    const expected = new Map<string, number>();
    const add = (key: string) => expected.set(key, (expected.get(key) ?? 0) + 1);
    for (const seconds of cases(WAIT_BUCKETS_SECONDS)) {
      const runId = await seedRun(org.orgId, ws.id, "planning");
      await env.DB.prepare(
        "UPDATE runs SET status_timestamps = json_object('plan_queued', ?) WHERE id = ?",
      )
        .bind(now - Math.round(seconds * 1000), runId)
        .run();
      const job = {
        jobId: `${runId}:plan`,
        runId,
        orgId: org.orgId,
        phase: "plan" as const,
        poolId: p.id,
      };
      const agent = { id: "agt_x", name: null, version: "1.0.0", isolation: null };
      // A repeated start records nothing more.
      await insertRunJobQuery(db, job, agent, now);
      await insertRunJobQuery(db, job, agent, now);
      add(`wait:${expectedLe(seconds, WAIT_BUCKETS_SECONDS)}`);
    }
    for (const seconds of cases(DURATION_BUCKETS_SECONDS)) {
      const runId = await seedRun(org.orgId, ws.id, "planning");
      const job = {
        jobId: `${runId}:plan`,
        runId,
        orgId: org.orgId,
        phase: "plan" as const,
        poolId: p.id,
      };
      await insertRunJobQuery(
        db,
        job,
        { id: "agt_x", name: null, version: "1.0.0", isolation: null },
        now,
      );
      // A repeated ending records nothing more (first ending wins).
      await endRunJobQuery(db, job.jobId, now + Math.round(seconds * 1000));
      await endRunJobQuery(db, job.jobId, now + 10_000_000);
      add(`duration:${expectedLe(seconds, DURATION_BUCKETS_SECONDS)}`);
    }
    const rows = await env.DB.prepare(
      "SELECT metric, le, count FROM job_timings WHERE pool_id = ? AND phase = 'plan'",
    )
      .bind(p.id)
      .all<{ metric: string; le: string; count: number }>();
    // The duration cases' starts count as waits of runs that were never queued: none.
    expect(new Map(rows.results.map((r) => [`${r.metric}:${r.le}`, r.count]))).toEqual(expected);
    // About 60 runs seeded and 120 D1 writes in turn: seconds on a loaded machine, not a bound.
  }, 30_000);
});

describeAuth("GET /metrics", {
  role: "reader",
  hasOrgIds: false,
  target: () => ({ method: "GET", path: "/metrics" }),
});
