/**
 * Run triggers through the real routes, the real run events queue and a real agent protocol:
 * an applied run of A queues a plan on B; cycles and a 21st source are refused with 409.
 */
import { describe, expect, it } from "vitest";
import { listRunEvents } from "../../src/events/outbox.ts";
import { type ErrorBody, requestJson } from "./helpers/api.ts";
import { describeAccess, describeAuth } from "./helpers/auth-matrix.ts";
import { useTestClock } from "./helpers/clock.ts";
import { snapshotD1 } from "./helpers/d1-snapshot.ts";
import { seedOrg, type TestOrg } from "./helpers/fixtures.ts";
import { grant, personWithAccess } from "./helpers/people.ts";
import {
  getRun,
  queueRun,
  type RunBody,
  runAction,
  runnableWorkspace,
  TestAgent,
} from "./helpers/runs.ts";
import { createWorkspace } from "./helpers/workspaces.ts";

/** Wall-clock budget of a test that drives runs through many requests (slow on a busy machine). */
const SLOW_TEST_MS = 60_000;

const clock = useTestClock();

type Trigger = { id: string; sourceWorkspaceId: string; sourceWorkspaceName: string };

async function addTrigger(org: TestOrg, targetId: string, sourceWorkspaceId: string) {
  return requestJson<Trigger & ErrorBody>(`/api/v1/workspaces/${targetId}/run-triggers`, {
    method: "POST",
    token: org.tokens.admin,
    body: { sourceWorkspaceId },
  });
}

async function runsOf(org: TestOrg, workspaceId: string): Promise<RunBody[]> {
  const res = await requestJson<{ runs: RunBody[] }>(`/api/v1/workspaces/${workspaceId}/runs`, {
    token: org.tokens.reader,
  });
  return res.body.runs;
}

describe("run triggers", () => {
  it("an applied run of A queues a plan on B that names it and follows B's auto-apply", {
    timeout: SLOW_TEST_MS,
  }, async () => {
    const org = await seedOrg();
    const a = await runnableWorkspace(org);
    const b = await runnableWorkspace(org, { autoApply: true });
    const added = await addTrigger(org, b.workspace.id, a.workspace.name);
    expect(added.status, JSON.stringify(added.body)).toBe(201);
    expect(added.body).toMatchObject({
      sourceWorkspaceId: a.workspace.id,
      sourceWorkspaceName: a.workspace.name,
    });

    const agentA = await TestAgent.register(a.agentToken);
    const run = await queueRun(org, a.workspace.id);
    await agentA.plan(true);
    // Planned, not applied: nothing is queued on B.
    expect((await getRun(org, run.body.id)).status).toBe("planned");
    expect(await runsOf(org, b.workspace.id)).toEqual([]);
    await runAction(org, run.body.id, "confirm");
    await agentA.apply();
    expect((await getRun(org, run.body.id)).status).toBe("applied");

    await expect
      .poll(async () => (await runsOf(org, b.workspace.id)).length, { timeout: 10_000 })
      .toBe(1);
    const [triggered] = await runsOf(org, b.workspace.id);
    expect(triggered).toMatchObject({
      source: "run-trigger",
      triggeringRunId: run.body.id,
      isAutoApply: true,
      operation: "apply",
      createdBy: { type: "run-trigger", id: added.body.id },
    });
    expect(triggered?.message).toContain(run.body.id);
    expect(triggered?.message).toContain(a.workspace.name);
    expect((await listRunEvents(clock.deps.db, run.body.id)).map((e) => e.type)).toEqual([
      "run:created",
      "run:planning",
      "run:needs_attention",
      "run:applying",
      "run:completed",
    ]);

    // B's run follows B's auto-apply: planned with changes, it applies without a confirm.
    const agentB = await TestAgent.register(b.agentToken);
    await agentB.plan(true);
    expect((await getRun(org, triggered?.id ?? "")).status).toBe("apply_queued");
  });

  it("refuses a cycle with 409 naming it, and a self-trigger", {
    timeout: SLOW_TEST_MS,
  }, async () => {
    const org = await seedOrg();
    const [a, b, c] = await Promise.all([1, 2, 3].map(() => createWorkspace(org)));
    if (!a || !b || !c) {
      throw new Error("no workspaces");
    }
    expect((await addTrigger(org, b.id, a.id)).status).toBe(201);
    expect((await addTrigger(org, c.id, b.id)).status).toBe(201);
    const before = await snapshotD1();
    const cycle = await addTrigger(org, a.id, c.id);
    expect(cycle.status).toBe(409);
    expect(cycle.body.error.message).toContain(`${c.name} → ${a.name} → ${b.name} → ${c.name}`);
    const self = await addTrigger(org, a.id, a.id);
    expect(self.status).toBe(409);
    expect(self.body.error.message).toContain(`${a.name} → ${a.name}`);
    const twice = await addTrigger(org, b.id, a.id);
    expect(twice.status).toBe(409);
    expect(await snapshotD1()).toEqual(before);
  });

  it("allows at most 20 sources", { timeout: SLOW_TEST_MS }, async () => {
    const org = await seedOrg();
    const target = await createWorkspace(org);
    for (let i = 0; i < 20; i++) {
      const source = await createWorkspace(org);
      expect((await addTrigger(org, target.id, source.id)).status).toBe(201);
    }
    const extra = await createWorkspace(org);
    const refused = await addTrigger(org, target.id, extra.id);
    expect(refused.status).toBe(409);
    expect(refused.body.error.message).toContain("20");
    const listed = await requestJson<{ runTriggers: Trigger[] }>(
      `/api/v1/workspaces/${target.id}/run-triggers`,
      { token: org.tokens.reader },
    );
    expect(listed.body.runTriggers).toHaveLength(20);
  });

  it("refuses a missing body field with 400 and another org's source with 404", {
    timeout: SLOW_TEST_MS,
  }, async () => {
    const org = await seedOrg();
    const other = await seedOrg();
    const target = await createWorkspace(org);
    const foreign = await createWorkspace(other);
    const before = await snapshotD1();
    const missing = await requestJson<ErrorBody>(`/api/v1/workspaces/${target.id}/run-triggers`, {
      method: "POST",
      token: org.tokens.admin,
      body: {},
    });
    expect(missing.status).toBe(400);
    expect(missing.body.error.message).toContain("sourceWorkspaceId");
    expect((await addTrigger(org, target.id, foreign.id)).status).toBe(404);
    expect(await snapshotD1()).toEqual(before);
  });
});

describeAuth("POST /api/v1/workspaces/:id/run-triggers", {
  role: "admin",
  target: async (org) => {
    const [target, source] = [await createWorkspace(org), await createWorkspace(org)];
    return {
      method: "POST",
      path: `/api/v1/workspaces/${target.id}/run-triggers`,
      body: { sourceWorkspaceId: source.id },
    };
  },
});
describe("POST /api/v1/workspaces/:id/run-triggers: team access", () => {
  it("needs admin on the target and read on the source; an unseen source is not found", {
    timeout: SLOW_TEST_MS,
  }, async () => {
    const org = await seedOrg();
    const [target, source] = [await createWorkspace(org), await createWorkspace(org)];
    const path = `/api/v1/workspaces/${target.id}/run-triggers`;
    const body = { sourceWorkspaceId: source.id };
    for (const level of ["read", "plan", "write"] as const) {
      const { user, team } = await personWithAccess(org, target, level);
      await grant(org, source, team, "read");
      const res = await requestJson<ErrorBody>(path, { method: "POST", token: user.token, body });
      expect(res.status, level).toBe(403);
    }
    const { user, team } = await personWithAccess(org, target, "admin");
    const before = await snapshotD1();
    const unseen = await requestJson<ErrorBody>(path, { method: "POST", token: user.token, body });
    expect(unseen.status).toBe(404);
    expect(unseen.body.error.code).toBe("NOT_FOUND");
    expect(await snapshotD1()).toEqual(before);
    await grant(org, source, team, "read");
    const byUser = await requestJson<Trigger>(path, { method: "POST", token: user.token, body });
    expect(byUser.status).toBe(201);
    const removed = await requestJson(`/api/v1/run-triggers/${byUser.body.id}`, {
      method: "DELETE",
      token: team.token,
    });
    expect(removed.status).toBe(204);
    const byTeam = await requestJson<Trigger>(path, { method: "POST", token: team.token, body });
    expect(byTeam.status).toBe(201);
    const listed = await requestJson<{ runTriggers: Trigger[] }>(path, { token: user.token });
    expect(listed.body.runTriggers.map((t) => t.sourceWorkspaceId)).toEqual([source.id]);
  });
});
describeAuth("GET /api/v1/workspaces/:id/run-triggers", {
  role: "reader",
  target: async (org) => {
    const ws = await createWorkspace(org);
    return { method: "GET", path: `/api/v1/workspaces/${ws.id}/run-triggers` };
  },
});
describeAuth("DELETE /api/v1/run-triggers/:id", {
  role: "admin",
  target: async (org) => {
    const [target, source] = [await createWorkspace(org), await createWorkspace(org)];
    const added = await addTrigger(org, target.id, source.id);
    return { method: "DELETE", path: `/api/v1/run-triggers/${added.body.id}` };
  },
});
describeAccess("DELETE /api/v1/run-triggers/:id", {
  level: "admin",
  allowedStatus: 204,
  target: async (org) => {
    const [target, source] = [await createWorkspace(org), await createWorkspace(org)];
    const added = await addTrigger(org, target.id, source.id);
    return {
      method: "DELETE",
      path: `/api/v1/run-triggers/${added.body.id}`,
      workspaceId: target.id,
    };
  },
});
