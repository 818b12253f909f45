import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { newApp } from "../../src/app.ts";
import { systemClock } from "../../src/deps.ts";
import { BASE, type ErrorBody, requestJson } from "./helpers/api.ts";
import { describeAuth } from "./helpers/auth-matrix.ts";
import { snapshotD1 } from "./helpers/d1-snapshot.ts";
import { seedOrg, type TestOrg } from "./helpers/fixtures.ts";
import { queueRun, type RunBody, runAction, runnableWorkspace, TestAgent } from "./helpers/runs.ts";
import { createWorkspace } from "./helpers/workspaces.ts";

describe("POST /api/v1/workspaces/:workspaceId/runs", () => {
  it("refuses bad input with field-level issues and changes nothing", async () => {
    const org = await seedOrg();
    const { workspace } = await runnableWorkspace(org);
    const cases: [unknown, string][] = [
      [{ operation: "deploy" }, "json.operation"],
      [{ isSpeculative: "yes" }, "json.isSpeculative"],
      [{ message: 3 }, "json.message"],
      [{ configurationVersionId: "run_x" }, "json.configurationVersionId"],
      [{ surprise: true }, "json"],
    ];
    for (const [body, field] of cases) {
      const before = await snapshotD1();
      const res = await queueRun(org, workspace.id, body as Record<string, unknown>);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error.issues?.some((i) => i.path.startsWith(field))).toBe(true);
      expect(await snapshotD1()).toEqual(before);
    }
    const before = await snapshotD1();
    const malformed = await requestJson<ErrorBody>(`/api/v1/workspaces/${workspace.id}/runs`, {
      method: "POST",
      token: org.tokens.member,
      body: "{",
      headers: { "content-type": "application/json" },
    });
    expect(malformed.status).toBe(400);
    const wrongType = await requestJson<ErrorBody>(`/api/v1/workspaces/${workspace.id}/runs`, {
      method: "POST",
      token: org.tokens.member,
      body: "x",
      headers: { "content-type": "text/plain" },
    });
    expect(wrongType.status).toBe(415);
    const huge = await queueRun(org, workspace.id, { message: "x".repeat(300_000) });
    expect(huge.status).toBe(413);
    expect(await snapshotD1()).toEqual(before);
  });

  it("refuses local workspaces, missing configurations and another workspace's configuration", async () => {
    const org = await seedOrg();
    const local = await createWorkspace(org, { executionMode: "local" });
    const res = await queueRun(org, local.id);
    expect(res.status).toBe(409);
    expect(res.body.error.message).toMatch(/local execution/);

    const { poolId } = await runnableWorkspace(org);
    const empty = await createWorkspace(org, { executionMode: "agent", poolId });
    const none = await queueRun(org, empty.id);
    expect(none.status).toBe(409);
    expect(none.body.error.message).toMatch(/no configuration version/);

    const other = await runnableWorkspace(org);
    const foreign = await queueRun(org, empty.id, {
      configurationVersionId: other.configurationVersionId,
    });
    expect(foreign.status).toBe(404);
  });

  it("answers 429 with Retry-After once the org has too many queued runs", async () => {
    const org = await seedOrg();
    const { workspace } = await runnableWorkspace(org);
    const app = newApp(systemClock);
    const limited = { ...env, MAX_QUEUED_RUNS_PER_ORG: "2" };
    const post = async () => {
      const ctx = createExecutionContext();
      const res = await app.fetch(
        new Request(`${BASE}/api/v1/workspaces/${workspace.id}/runs`, {
          method: "POST",
          headers: {
            authorization: `Bearer ${org.tokens.member}`,
            "content-type": "application/json",
          },
          body: "{}",
        }),
        limited,
        ctx,
      );
      await waitOnExecutionContext(ctx);
      return res;
    };
    expect((await post()).status).toBe(201);
    expect((await post()).status).toBe(201);
    const before = await snapshotD1();
    const refused = await post();
    expect(refused.status).toBe(429);
    expect(refused.headers.get("retry-after")).toBe("30");
    expect(((await refused.json()) as ErrorBody).error.code).toBe("RATE_LIMITED");
    expect(await snapshotD1()).toEqual(before);
  });
});

describe("GET runs", () => {
  it("lists a workspace's runs newest first with a cursor, and the org's runs by status", async () => {
    const org = await seedOrg();
    const { workspace } = await runnableWorkspace(org);
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      ids.push((await queueRun(org, workspace.id, { message: `run ${i}` })).body.id);
    }
    const first = await requestJson<{ runs: RunBody[]; nextCursor: string }>(
      `/api/v1/workspaces/${workspace.name}/runs?limit=3`,
      { token: org.tokens.reader },
    );
    expect(first.body.runs.map((r) => r.id)).toEqual(ids.slice(2).reverse());
    const second = await requestJson<{ runs: RunBody[]; nextCursor: string | null }>(
      `/api/v1/workspaces/${workspace.id}/runs?limit=3&cursor=${first.body.nextCursor}`,
      { token: org.tokens.reader },
    );
    expect(second.body.runs.map((r) => r.id)).toEqual(ids.slice(0, 2).reverse());
    expect(second.body.nextCursor).toBeNull();
    const pending = await requestJson<{ runs: RunBody[] }>("/api/v1/runs?status=pending", {
      token: org.tokens.reader,
    });
    expect(pending.body.runs).toHaveLength(4);
    const bad = await requestJson<ErrorBody>("/api/v1/runs?status=nope&limit=0", {
      token: org.tokens.reader,
    });
    expect(bad.status).toBe(400);
    const forged = await requestJson<ErrorBody>("/api/v1/runs?cursor=bm9wZQ", {
      token: org.tokens.reader,
    });
    expect(forged.status).toBe(400);
  });
});

describe("run actions", () => {
  it("refuses actions that do not fit the run's status, and records an audit event for each that does", async () => {
    const org = await seedOrg();
    const { workspace, agentToken } = await runnableWorkspace(org);
    const agent = await TestAgent.register(agentToken);
    const run = await queueRun(org, workspace.id);
    expect((await runAction(org, run.body.id, "confirm")).status).toBe(409);
    expect((await runAction(org, run.body.id, "discard")).status).toBe(409);
    // No live agent holds a queued run's job, so force-cancel would be allowed now (as cancel is);
    // it is refused once the run has ended.
    await agent.plan(true);
    const cancelPlanned = await runAction(org, run.body.id, "cancel");
    expect(cancelPlanned.status).toBe(409);
    expect(cancelPlanned.body.error.message).toMatch(/discard it instead/);
    expect((await runAction(org, run.body.id, "discard")).status).toBe(200);
    expect((await runAction(org, run.body.id, "force-cancel")).status).toBe(409);
    const second = await queueRun(org, workspace.id);
    await runAction(org, second.body.id, "cancel");
    const audit = await env.DB.prepare(
      "SELECT action FROM audit_events WHERE target_type = 'run' AND org_id = ? ORDER BY created_at, rowid",
    )
      .bind(org.orgId)
      .all<{ action: string }>();
    expect(audit.results.map((r) => r.action)).toEqual([
      "run.create",
      "run.discard",
      "run.create",
      "run.cancel",
    ]);
  });
});

// Auth matrices. Targets are built against resources of the org under test.
async function runOf(org: TestOrg): Promise<string> {
  const { workspace } = await runnableWorkspace(org);
  return (await queueRun(org, workspace.id)).body.id;
}

describeAuth("POST /api/v1/workspaces/:workspaceId/runs", {
  role: "member",
  target: async (org) => ({
    method: "POST",
    path: `/api/v1/workspaces/${(await runnableWorkspace(org)).workspace.id}/runs`,
    body: {},
  }),
});
describeAuth("GET /api/v1/workspaces/:workspaceId/runs", {
  role: "reader",
  target: async (org) => ({
    method: "GET",
    path: `/api/v1/workspaces/${(await runnableWorkspace(org)).workspace.id}/runs`,
  }),
});
describeAuth("GET /api/v1/runs", {
  role: "reader",
  hasOrgIds: false,
  target: () => ({ method: "GET", path: "/api/v1/runs" }),
});
describeAuth("GET /api/v1/runs/:runId", {
  role: "reader",
  target: async (org) => ({ method: "GET", path: `/api/v1/runs/${await runOf(org)}` }),
});
describeAuth("GET /api/v1/runs/:runId/logs", {
  role: "reader",
  target: async (org) => ({
    method: "GET",
    path: `/api/v1/runs/${await runOf(org)}/logs?phase=plan`,
  }),
});
for (const action of ["confirm", "discard", "cancel", "force-cancel"]) {
  describeAuth(`POST /api/v1/runs/:runId/${action}`, {
    role: "member",
    target: async (org) => ({ method: "POST", path: `/api/v1/runs/${await runOf(org)}/${action}` }),
  });
}
