/**
 * Assessments: the routes, the verdict recorded once where the run ends, the workspace's drift
 * status, autoRemediate, and the interval driven through the real `scheduled` handler on a
 * clock the test sets.
 */
import {
  createExecutionContext,
  createScheduledController,
  waitOnExecutionContext,
} from "cloudflare:test";
import { env } from "cloudflare:workers";
import { and, eq } from "drizzle-orm";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { finishAssessment } from "../../src/assessments/service.ts";
import { auditEvents, runs } from "../../src/db/schema.ts";
import { newWorker } from "../../src/worker.ts";
import { type ErrorBody, request, requestJson, routeRequests } from "./helpers/api.ts";
import { describeAccess, describeAuth } from "./helpers/auth-matrix.ts";
import { snapshotD1 } from "./helpers/d1-snapshot.ts";
import { db, deps, seedOrg, type TestOrg } from "./helpers/fixtures.ts";
import { getRun, runnableWorkspace, TestAgent } from "./helpers/runs.ts";
import { signIn } from "./helpers/ui.ts";
import { createWorkspace } from "./helpers/workspaces.ts";

type Assessment = {
  id: string;
  status: string;
  driftedResources: string[];
  reason: string | null;
  runId: string;
  remediationRunId: string | null;
  createdAt: string;
  finishedAt: string | null;
};

const MINUTE = 60_000;

function startAssessment(org: TestOrg, workspaceId: string, token = org.tokens.member) {
  return requestJson<Assessment & ErrorBody>(`/api/v1/workspaces/${workspaceId}/assessments`, {
    method: "POST",
    token,
  });
}

async function listAssessments(org: TestOrg, workspaceId: string): Promise<Assessment[]> {
  const res = await requestJson<{ assessments: Assessment[] }>(
    `/api/v1/workspaces/${workspaceId}/assessments`,
    { token: org.tokens.reader },
  );
  expect(res.status).toBe(200);
  return res.body.assessments;
}

async function workspaceOf(org: TestOrg, id: string) {
  const res = await requestJson<Record<string, unknown>>(`/api/v1/workspaces/${id}`, {
    token: org.tokens.reader,
  });
  expect(res.status).toBe(200);
  return res.body;
}

/** Leases the assessment's plan job and finishes it as an agent that read `summary`. */
async function finishPlan(agent: TestAgent, body: Record<string, unknown>) {
  const job = await agent.lease();
  expect(job.phase).toBe("plan");
  await agent.start(job);
  const res = await agent.finish(job, body);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return job;
}

const noChanges = { adds: 0, changes: 0, destroys: 0, imports: 0, hasChanges: false };

describe("assessments", () => {
  it("is a speculative refresh-only run; drift found marks the workspace drifted", async () => {
    const org = await seedOrg();
    const { workspace, agentToken } = await runnableWorkspace(org);
    expect(await workspaceOf(org, workspace.id)).toMatchObject({ driftStatus: "unknown" });
    const started = await startAssessment(org, workspace.id);
    expect(started.status, JSON.stringify(started.body)).toBe(201);
    expect(started.body).toMatchObject({ status: "pending", driftedResources: [] });
    const run = await getRun(org, started.body.runId);
    expect(run).toMatchObject({
      operation: "refresh",
      isSpeculative: true,
      source: "assessment",
      status: "plan_queued",
    });

    const again = await startAssessment(org, workspace.id);
    expect(again.status).toBe(409);
    expect(again.body.error.message).toMatch(/has an assessment running/);

    const agent = await TestAgent.register(agentToken);
    const job = await finishPlan(agent, {
      outcome: "succeeded",
      exitCode: 2,
      planSummary: { ...noChanges, hasChanges: true, driftedResources: ["null_resource.x"] },
    });
    expect(job.spec).toMatchObject({ operation: "refresh", isSpeculative: true });
    expect((await getRun(org, run.id)).status).toBe("planned_and_finished");
    const [result] = await listAssessments(org, workspace.id);
    expect(result).toMatchObject({
      id: started.body.id,
      status: "drifted",
      driftedResources: ["null_resource.x"],
      runId: run.id,
      remediationRunId: null,
    });
    expect(await workspaceOf(org, workspace.id)).toMatchObject({
      driftStatus: "drifted",
      lastAssessmentAt: result?.finishedAt,
    });
    // No remediation without autoRemediate, and the workspace was never held.
    const all = await db.select().from(runs).where(eq(runs.workspaceId, workspace.id));
    expect(all).toHaveLength(1);
    expect((await workspaceOf(org, workspace.id)).currentRunId).toBeNull();
  });

  it("records no drift, and an errored check with its reason", async () => {
    const org = await seedOrg();
    const { workspace, agentToken } = await runnableWorkspace(org);
    const agent = await TestAgent.register(agentToken);
    await startAssessment(org, workspace.id);
    await finishPlan(agent, {
      outcome: "succeeded",
      planSummary: { ...noChanges, driftedResources: [] },
    });
    expect((await listAssessments(org, workspace.id))[0]?.status).toBe("no_drift");
    expect(await workspaceOf(org, workspace.id)).toMatchObject({ driftStatus: "no_drift" });

    await startAssessment(org, workspace.id);
    await finishPlan(agent, { outcome: "failed", exitCode: 1, message: "Error: provider crashed" });
    const [failed] = await listAssessments(org, workspace.id);
    expect(failed?.status).toBe("errored");
    expect(failed?.reason).toMatch(/provider crashed/);
    expect(await workspaceOf(org, workspace.id)).toMatchObject({ driftStatus: "errored" });
  });

  it("with autoRemediate, queues one normal plan however often the ending is seen", async () => {
    const org = await seedOrg();
    const { workspace, agentToken } = await runnableWorkspace(org, { autoRemediate: true });
    const started = await startAssessment(org, workspace.id);
    const agent = await TestAgent.register(agentToken);
    await finishPlan(agent, {
      outcome: "succeeded",
      planSummary: { ...noChanges, hasChanges: true, driftedResources: ["null_resource.x"] },
    });
    // The ending seen again (a repeated finish, the tick's repair): nothing happens twice.
    await finishAssessment(deps, started.body.runId);
    await finishAssessment(deps, started.body.runId);
    const [result] = await listAssessments(org, workspace.id);
    expect(result?.remediationRunId).toMatch(/^run_/);
    const remediation = await getRun(org, result?.remediationRunId ?? "");
    expect(remediation).toMatchObject({ operation: "apply", isSpeculative: false });
    expect(remediation.message).toContain(started.body.id);
    const all = await db.select().from(runs).where(eq(runs.workspaceId, workspace.id));
    expect(all).toHaveLength(2);
    const finishes = await db
      .select()
      .from(auditEvents)
      .where(
        and(eq(auditEvents.targetId, started.body.id), eq(auditEvents.action, "assessment.finish")),
      );
    expect(finishes).toHaveLength(1);
  });

  it("shows the drift status as a badge on the dashboard's workspace pages", async () => {
    const org = await seedOrg();
    const { workspace, agentToken } = await runnableWorkspace(org);
    const reader = await signIn(org.tokens.reader);
    const page = async (path: string) => (await reader.get(path)).text();
    expect(await page(`/ui/workspaces/${workspace.id}`)).toContain('data-drift="unknown"');
    await startAssessment(org, workspace.id);
    const agent = await TestAgent.register(agentToken);
    await finishPlan(agent, {
      outcome: "succeeded",
      planSummary: { ...noChanges, hasChanges: true, driftedResources: ["null_resource.x"] },
    });
    const detail = await page(`/ui/workspaces/${workspace.id}`);
    expect(detail).toMatch(
      /<span class="badge drift-drifted" data-drift="drifted">drifted<\/span>/,
    );
    expect(detail).toContain("assessments off");
    expect(await page("/ui/workspaces")).toContain('data-drift="drifted"');
  });

  it("answers outpost_workspace_drifted for the workspaces with a verdict", async () => {
    const org = await seedOrg();
    const drifting = await runnableWorkspace(org);
    const clean = await runnableWorkspace(org);
    const unchecked = await runnableWorkspace(org);
    for (const [ws, drifted] of [
      [drifting, true],
      [clean, false],
    ] as const) {
      await startAssessment(org, ws.workspace.id);
      const agent = await TestAgent.register(ws.agentToken);
      await finishPlan(agent, {
        outcome: "succeeded",
        planSummary: drifted
          ? { ...noChanges, hasChanges: true, driftedResources: ["null_resource.x"] }
          : noChanges,
      });
    }
    const res = await request("/metrics", { token: org.tokens.reader });
    expect(res.status).toBe(200);
    const text = new TextDecoder().decode(await res.arrayBuffer());
    const lines = text.split("\n").filter((l) => l.startsWith("outpost_workspace_drifted{"));
    const series = (ws: typeof clean, value: number) =>
      `outpost_workspace_drifted{workspace="${ws.workspace.name}",workspace_id="${ws.workspace.id}"} ${value}`;
    expect(lines.sort()).toEqual([series(clean, 0), series(drifting, 1)].sort());
    expect(text).not.toContain(unchecked.workspace.id);
  });

  it("refuses a workspace that cannot run (409), changing nothing", async () => {
    const org = await seedOrg();
    const local = await createWorkspace(org, { executionMode: "local" });
    const before = await snapshotD1();
    const res = await startAssessment(org, local.id);
    expect(res.status).toBe(409);
    expect(res.body.error.message).toMatch(/local execution/);
    expect(await snapshotD1()).toEqual(before);
  });

  it("validates the workspace settings: interval bounds, no assessments on a local workspace", async () => {
    const org = await seedOrg();
    const { workspace } = await runnableWorkspace(org);
    const local = await createWorkspace(org, { executionMode: "local" });
    const patch = (id: string, body: Record<string, unknown>) =>
      requestJson<ErrorBody>(`/api/v1/workspaces/${id}`, {
        method: "PATCH",
        token: org.tokens.admin,
        body,
      });
    for (const [id, body, message] of [
      [workspace.id, { assessmentIntervalMinutes: 59 }, /assessmentIntervalMinutes/],
      [workspace.id, { assessmentIntervalMinutes: 10_081 }, /assessmentIntervalMinutes/],
      [workspace.id, { assessmentsEnabled: "yes" }, /assessmentsEnabled/],
      [local.id, { assessmentsEnabled: true }, /local workspace cannot enable them/],
    ] as const) {
      const before = await snapshotD1();
      const res = await patch(id, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error.message).toMatch(message);
      expect(await snapshotD1()).toEqual(before);
    }
    const on = await patch(workspace.id, { assessmentsEnabled: true });
    expect(on.status).toBe(200);
    expect(on.body).toMatchObject({ assessmentsEnabled: true, assessmentIntervalMinutes: 1440 });
  });
});

describe("assessments on an interval, through the cron handler", () => {
  const clock = { ms: 0 };
  const worker = newWorker(() => clock.ms);
  beforeEach(() => {
    clock.ms = Date.now() + MINUTE;
    routeRequests(worker);
  });
  afterEach(() => routeRequests(null));
  async function tick() {
    const ctx = createExecutionContext();
    await worker.scheduled(
      createScheduledController({ scheduledTime: clock.ms, cron: "* * * * *" }),
      env,
      ctx,
    );
    await waitOnExecutionContext(ctx);
  }

  it("starts one assessment per interval, never a second while one is pending", async () => {
    const org = await seedOrg();
    const { workspace, agentToken } = await runnableWorkspace(org);
    const on = await requestJson(`/api/v1/workspaces/${workspace.id}`, {
      method: "PATCH",
      token: org.tokens.admin,
      body: { assessmentsEnabled: true, assessmentIntervalMinutes: 60 },
    });
    expect(on.status).toBe(200);
    await tick();
    await Promise.all([tick(), tick()]);
    let list = await listAssessments(org, workspace.id);
    expect(list).toHaveLength(1);
    expect(list[0]?.status).toBe("pending");
    expect(Date.parse(String((await workspaceOf(org, workspace.id)).nextAssessmentAt))).toBe(
      clock.ms + 60 * MINUTE,
    );

    // An interval later the first is still pending: none starts.
    clock.ms += 61 * MINUTE;
    await tick();
    expect(await listAssessments(org, workspace.id)).toHaveLength(1);

    const agent = await TestAgent.register(agentToken);
    await finishPlan(agent, { outcome: "succeeded", planSummary: noChanges });
    clock.ms += 61 * MINUTE;
    await tick();
    await tick();
    list = await listAssessments(org, workspace.id);
    expect(list.map((a) => a.status)).toEqual(["pending", "no_drift"]);
  });
});

async function assessedWorkspace(org: TestOrg) {
  const { workspace } = await runnableWorkspace(org);
  return workspace.id;
}

describeAuth("POST /api/v1/workspaces/:workspaceId/assessments", {
  role: "member",
  target: async (org) => ({
    method: "POST",
    path: `/api/v1/workspaces/${await assessedWorkspace(org)}/assessments`,
  }),
});
describeAuth("GET /api/v1/workspaces/:workspaceId/assessments", {
  role: "reader",
  target: async (org) => ({
    method: "GET",
    path: `/api/v1/workspaces/${await assessedWorkspace(org)}/assessments`,
  }),
});
describeAccess("POST /api/v1/workspaces/:workspaceId/assessments", {
  level: "plan",
  allowedStatus: 201,
  target: async (org) => {
    const workspaceId = await assessedWorkspace(org);
    return { workspaceId, method: "POST", path: `/api/v1/workspaces/${workspaceId}/assessments` };
  },
});
describeAccess("GET /api/v1/workspaces/:workspaceId/assessments", {
  level: "read",
  allowedStatus: 200,
  target: async (org) => {
    const workspaceId = await assessedWorkspace(org);
    return { workspaceId, method: "GET", path: `/api/v1/workspaces/${workspaceId}/assessments` };
  },
});
