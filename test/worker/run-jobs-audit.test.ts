/**
 * Every job records the agent that ran it (id, name, version, isolation mode, pool) and the
 * exact engine version it reported; the run API returns them after the agent is gone. The
 * audit log is readable through `GET /api/v1/audit-events` by owners and admins only.
 */
import { describe, expect, it } from "vitest";
import type { JobEndedEvent } from "../../durable/pool-types.ts";
import { closingLogLine } from "../../src/runs/log-closing.ts";
import { type ErrorBody, request, requestJson } from "./helpers/api.ts";
import { describeAuth } from "./helpers/auth-matrix.ts";
import { seedOrg } from "./helpers/fixtures.ts";
import { getRun, queueRun, runAction, runnableWorkspace, TestAgent } from "./helpers/runs.ts";

type RunJob = {
  id: string;
  phase: string;
  poolId: string;
  agent: { id: string; name: string | null; version: string; isolation: string };
  engineVersion: string | null;
  startedAt: string;
  endedAt: string | null;
};
type AuditEvent = { id: string; action: string; targetType: string; targetId: string };
type AuditPage = { auditEvents: AuditEvent[]; nextCursor: string | null };

describe("jobs record their agent", () => {
  it("stores agent, pool, isolation mode and engine version at start and returns them", async () => {
    const org = await seedOrg();
    const ws = await runnableWorkspace(org, { engineVersion: "~> 1.9" });
    const agent = await TestAgent.register(ws.agentToken, {
      name: "builder-1",
      isolation: "bwrap",
    });
    const queued = await queueRun(org, ws.workspace.id);
    expect(queued.status).toBe(201);
    expect(queued.body.jobs).toEqual([]);

    const plan = await agent.lease();
    expect(plan.spec.engineVersion).toBe("~> 1.9");
    await agent.start(plan);
    const planning = await getRun(org, queued.body.id);
    const started = planning.jobs as RunJob[];
    expect(started).toEqual([
      {
        id: `${queued.body.id}:plan`,
        phase: "plan",
        poolId: ws.poolId,
        agent: {
          id: agent.agentId,
          name: "builder-1",
          version: "0.1.0",
          isolation: "bwrap",
        },
        engineVersion: null,
        startedAt: expect.any(String),
        endedAt: null,
      },
    ]);
    const summary = { adds: 1, changes: 0, destroys: 0, imports: 0, hasChanges: true };
    const finished = await agent.finish(plan, {
      outcome: "succeeded",
      planSummary: summary,
      engineVersion: "1.9.5",
    });
    expect(finished.status).toBe(200);
    await runAction(org, queued.body.id, "confirm");

    // The apply runs the exact version its plan ran, not the workspace's constraint.
    const apply = await agent.lease();
    expect(apply.spec.engineVersion).toBe("1.9.5");
    await agent.start(apply);
    await agent.finish(apply, { outcome: "succeeded", engineVersion: "1.9.5" });

    const done = await getRun(org, queued.body.id);
    const jobs = done.jobs as RunJob[];
    expect(jobs.map((j) => [j.phase, j.engineVersion, j.agent.id])).toEqual([
      ["plan", "1.9.5", agent.agentId],
      ["apply", "1.9.5", agent.agentId],
    ]);
    expect(jobs.every((j) => j.endedAt !== null)).toBe(true);
  });

  it("shows an agent that did not report its isolation mode as unknown", async () => {
    const org = await seedOrg();
    const ws = await runnableWorkspace(org);
    const agent = await TestAgent.register(ws.agentToken);
    const queued = await queueRun(org, ws.workspace.id);
    const plan = await agent.lease();
    await agent.start(plan);
    const run = await getRun(org, queued.body.id);
    expect((run.jobs as RunJob[])[0]?.agent).toMatchObject({
      name: null,
      isolation: "unknown",
    });
  });

  it("refuses a finish whose engine version is not exact (400), changing nothing", async () => {
    const org = await seedOrg();
    const ws = await runnableWorkspace(org);
    const agent = await TestAgent.register(ws.agentToken);
    const queued = await queueRun(org, ws.workspace.id);
    const plan = await agent.lease();
    await agent.start(plan);
    const res = await agent.finish(plan, { outcome: "succeeded", engineVersion: "~> 1.9" });
    expect(res.status).toBe(400);
    expect((await getRun(org, queued.body.id)).status).toBe("planning");
  });
});

describe("GET /api/v1/audit-events", () => {
  it("pages the org's events newest first and filters by target", async () => {
    const org = await seedOrg();
    const other = await seedOrg();
    const ws = await runnableWorkspace(org);
    for (const description of ["one", "two", "three"]) {
      const res = await requestJson(`/api/v1/workspaces/${ws.workspace.id}`, {
        method: "PATCH",
        token: org.tokens.admin,
        body: { description },
      });
      expect(res.status).toBe(200);
    }
    await runnableWorkspace(other);

    const first = await requestJson<AuditPage>(
      `/api/v1/audit-events?targetType=workspace&targetId=${ws.workspace.id}&limit=2`,
      { token: org.tokens.admin },
    );
    expect(first.status).toBe(200);
    expect(first.body.auditEvents).toHaveLength(2);
    expect(first.body.nextCursor).toEqual(expect.any(String));
    const rest = await requestJson<AuditPage>(
      `/api/v1/audit-events?targetType=workspace&targetId=${ws.workspace.id}&limit=100&cursor=${first.body.nextCursor}`,
      { token: org.tokens.owner },
    );
    const all = [...first.body.auditEvents, ...rest.body.auditEvents];
    expect(all.every((e) => e.targetId === ws.workspace.id)).toBe(true);
    expect(all.filter((e) => e.action === "workspace.update")).toHaveLength(3);
    expect(new Set(all.map((e) => e.id)).size).toBe(all.length);

    // Nothing of another organization, even when its ids are asked for.
    const foreign = await requestJson<AuditPage>("/api/v1/audit-events?limit=100", {
      token: other.tokens.admin,
    });
    expect(foreign.body.auditEvents.some((e) => e.targetId === ws.workspace.id)).toBe(false);
    const byId = await requestJson<AuditPage>(`/api/v1/audit-events?targetId=${ws.workspace.id}`, {
      token: other.tokens.owner,
    });
    expect(byId.body.auditEvents).toEqual([]);
  });

  it("answers bad filters and cursors with 400 and a sentence", async () => {
    const org = await seedOrg();
    for (const query of [
      "limit=0",
      "limit=101",
      "cursor=!!",
      "cursor=abc",
      "targetId=a%20b",
      "nope=1",
    ]) {
      const res = await requestJson<ErrorBody>(`/api/v1/audit-events?${query}`, {
        token: org.tokens.owner,
      });
      expect(res.status, query).toBe(400);
      expect(res.body.error.message.length).toBeGreaterThan(10);
    }
  });

  describeAuth("GET /api/v1/audit-events", {
    role: "admin",
    hasOrgIds: false,
    target: () => ({ method: "GET", path: "/api/v1/audit-events" }),
  });
});

describe("closing log lines", () => {
  it("a run canceled before an agent took it says so in its log", async () => {
    const org = await seedOrg();
    const ws = await runnableWorkspace(org);
    const queued = await queueRun(org, ws.workspace.id);
    expect((await runAction(org, queued.body.id, "cancel")).status).toBe(200);
    const res = await request(`/api/v1/runs/${queued.body.id}/logs?phase=plan`, {
      token: org.tokens.reader,
    });
    expect(res.status).toBe(200);
    expect(await res.text()).toBe("Outpost: the plan was canceled before an agent started it.\n");
  });

  it("says why for every ending the agent did not report, and nothing for those it did", () => {
    const base = {
      jobId: `run_${"a".repeat(26)}:apply`,
      runId: `run_${"a".repeat(26)}`,
      workspaceId: "ws_x",
      orgId: "org_x",
      phase: "apply" as const,
      exitCode: null,
      planSummary: null,
      endedAt: 1,
      operation: "apply" as const,
      isSpeculative: false,
    };
    const line = (e: Partial<JobEndedEvent>) =>
      closingLogLine({
        ...base,
        outcome: "errored",
        action: "job.errored",
        actor: "system",
        agentId: "agt_x",
        reason: null,
        forced: false,
        ...e,
      });
    expect(line({ action: "job.finished", outcome: "canceled" })).toBeNull();
    expect(line({ reason: "agent agt_x is errored: no heartbeat for 5 min" })).toBe(
      "Outpost: the apply ended without its agent's report: agent agt_x is errored: no heartbeat for 5 min.",
    );
    expect(line({ reason: "the apply timed out after 24 h" })).toMatch(/timed out after 24 h\.$/);
    expect(line({ action: "job.canceled", outcome: "canceled", forced: true })).toMatch(
      /force-canceled; its agent was told to kill its process/,
    );
    expect(
      line({
        action: "job.canceled",
        outcome: "canceled",
        forced: true,
        reason: "force-canceled; no live agent held it (agent agt_x is unknown: missed heartbeats)",
      }),
    ).toBe(
      "Outpost: the apply was force-canceled; no live agent held it (agent agt_x is unknown: missed heartbeats); the job ended at once.",
    );
    expect(line({ action: "job.canceled", outcome: "canceled", agentId: null })).toBe(
      "Outpost: the apply was canceled before an agent started it.",
    );
  });
});
