/**
 * Schedules: the routes, and occurrences driven through the Worker's real `scheduled` handler on
 * a clock the test sets (no wall-clock waits): one run per occurrence whatever the ticks do
 * (twice, at once, late), and a skipped occurrence while the previous scheduled run is active.
 */
import {
  createExecutionContext,
  createScheduledController,
  waitOnExecutionContext,
} from "cloudflare:test";
import { env } from "cloudflare:workers";
import { eq } from "drizzle-orm";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { runs } from "../../src/db/schema.ts";
import { newWorker } from "../../src/worker.ts";
import { type ErrorBody, requestJson, routeRequests } from "./helpers/api.ts";
import { describeAccess, describeAuth } from "./helpers/auth-matrix.ts";
import { snapshotD1 } from "./helpers/d1-snapshot.ts";
import { db, seedOrg, type TestOrg } from "./helpers/fixtures.ts";
import { runnableWorkspace, TestAgent } from "./helpers/runs.ts";
import { createWorkspace } from "./helpers/workspaces.ts";

type Schedule = {
  id: string;
  cron: string;
  timezone: string;
  operation: string;
  nextRunAt: string | null;
  lastOccurrence: {
    at: string;
    status: string;
    runId: string | null;
    reason: string | null;
  } | null;
};

const MINUTE = 60_000;

/**
 * The Worker on a clock the test sets: it starts 10 s past a minute boundary a few minutes
 * ahead, and moves only when the test says. `tick()` fires the cron handler as Cloudflare does.
 */
function useFixedClock() {
  const clock = { ms: 0 };
  const worker = newWorker(() => clock.ms);
  beforeEach(() => {
    clock.ms = Math.ceil(Date.now() / MINUTE) * MINUTE + 5 * MINUTE + 10_000;
    routeRequests(worker);
  });
  afterEach(() => routeRequests(null));
  return {
    get now() {
      return clock.ms;
    },
    set(ms: number) {
      clock.ms = ms;
    },
    async tick() {
      const ctx = createExecutionContext();
      await worker.scheduled(
        createScheduledController({ scheduledTime: clock.ms, cron: "* * * * *" }),
        env,
        ctx,
      );
      await waitOnExecutionContext(ctx);
    },
  };
}

async function createSchedule(org: TestOrg, workspaceId: string, body: Record<string, unknown>) {
  return requestJson<Schedule & ErrorBody>(`/api/v1/workspaces/${workspaceId}/schedules`, {
    method: "POST",
    token: org.tokens.admin,
    body,
  });
}

async function listSchedules(org: TestOrg, workspaceId: string): Promise<Schedule[]> {
  const res = await requestJson<{ schedules: Schedule[] }>(
    `/api/v1/workspaces/${workspaceId}/schedules`,
    { token: org.tokens.reader },
  );
  expect(res.status).toBe(200);
  return res.body.schedules;
}

async function scheduledRuns(workspaceId: string) {
  const rows = await db.select().from(runs).where(eq(runs.workspaceId, workspaceId));
  return rows.filter((r) => r.source === "schedule").sort((a, b) => a.createdAt - b.createdAt);
}

/** The first multiple of `stepMs` strictly after `ms`. */
const nextMultiple = (ms: number, stepMs: number) => Math.floor(ms / stepMs) * stepMs + stepMs;

describe("schedule routes", () => {
  const clock = useFixedClock();

  it("creates a schedule whose next occurrence follows its cron in its time zone", async () => {
    const org = await seedOrg();
    const { workspace } = await runnableWorkspace(org);
    const res = await createSchedule(org, workspace.id, {
      cron: "*/5  * * * *",
      operation: "plan",
    });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body).toMatchObject({ cron: "*/5 * * * *", timezone: "UTC", lastOccurrence: null });
    expect(Date.parse(res.body.nextRunAt ?? "")).toBe(nextMultiple(clock.now, 5 * MINUTE));

    clock.set(clock.now + 1_000);
    const nine = await createSchedule(org, workspace.id, {
      cron: "0 9 * * *",
      timezone: "America/New_York",
      operation: "refresh",
    });
    expect(nine.status).toBe(201);
    const local = new Intl.DateTimeFormat("en-US", {
      timeZone: "America/New_York",
      hour: "2-digit",
      minute: "2-digit",
      hourCycle: "h23",
    }).format(new Date(nine.body.nextRunAt ?? ""));
    expect(local).toBe("09:00");
    expect(Date.parse(nine.body.nextRunAt ?? "")).toBeGreaterThan(clock.now);
    expect(Date.parse(nine.body.nextRunAt ?? "")).toBeLessThanOrEqual(clock.now + 24 * 60 * MINUTE);

    expect((await listSchedules(org, workspace.id)).map((s) => s.id)).toEqual([
      res.body.id,
      nine.body.id,
    ]);
  });

  it("refuses bad cron and time zones with a 400 naming the field, changing nothing", async () => {
    const org = await seedOrg();
    const { workspace } = await runnableWorkspace(org);
    const cases: [Record<string, unknown>, string, RegExp][] = [
      [{ cron: "*/5 * * *" }, "json.cron", /five fields .* it has 4/],
      [{ cron: "0 */5 * * * *" }, "json.cron", /five fields .* it has 6/],
      [{ cron: "@daily" }, "json.cron", /five fields/],
      [{ cron: "61 * * * *" }, "json.cron", /not valid: .*minute/],
      [{ cron: "0 0 30 2 *" }, "json.cron", /never occurs/],
      [{ cron: "* * * * *", timezone: "Mars/Olympus" }, "json.timezone", /IANA time zone/],
      [{ cron: "" }, "json.cron", /at least 1/],
      [{ cron: "* * * * *", operation: "apply-all" }, "json.operation", /plan/],
      [{ cron: "* * * * *", extra: 1 }, "json", /extra/],
    ];
    for (const [body, path, message] of cases) {
      const before = await snapshotD1();
      const res = await createSchedule(org, workspace.id, { operation: "plan", ...body });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error.code).toBe("BAD_REQUEST");
      expect(res.body.error.message).toMatch(message);
      expect(res.body.error.issues?.map((i) => i.path)).toContain(path);
      expect(await snapshotD1()).toEqual(before);
    }
  });

  it("refuses a schedule on a local workspace (409)", async () => {
    const org = await seedOrg();
    const workspace = await createWorkspace(org, { executionMode: "local" });
    const res = await createSchedule(org, workspace.id, { cron: "* * * * *", operation: "plan" });
    expect(res.status).toBe(409);
    expect(res.body.error.message).toMatch(/local execution/);
  });

  it("deletes a schedule; another workspace's or a second delete answers 404", async () => {
    const org = await seedOrg();
    const { workspace } = await runnableWorkspace(org);
    const other = await createWorkspace(org);
    const created = await createSchedule(org, workspace.id, {
      cron: "0 * * * *",
      operation: "plan",
    });
    const path = (ws: string) => `/api/v1/workspaces/${ws}/schedules/${created.body.id}`;
    const wrong = await requestJson<ErrorBody>(path(other.id), {
      method: "DELETE",
      token: org.tokens.admin,
    });
    expect(wrong.status).toBe(404);
    const gone = await requestJson(path(workspace.id), {
      method: "DELETE",
      token: org.tokens.admin,
    });
    expect(gone.status).toBe(204);
    expect(await listSchedules(org, workspace.id)).toEqual([]);
    const again = await requestJson(path(workspace.id), {
      method: "DELETE",
      token: org.tokens.admin,
    });
    expect(again.status).toBe(404);
  });
});

describe("scheduled occurrences through the cron handler", () => {
  const clock = useFixedClock();

  it("queues one run per occurrence, however often and late the handler runs", async () => {
    const org = await seedOrg();
    const { workspace, agentToken } = await runnableWorkspace(org);
    const created = await createSchedule(org, workspace.id, {
      cron: "*/5 * * * *",
      operation: "plan",
    });
    const first = Date.parse(created.body.nextRunAt ?? "");

    await clock.tick(); // nothing is due yet
    expect(await scheduledRuns(workspace.id)).toEqual([]);

    clock.set(first + 20_000);
    await clock.tick();
    await clock.tick(); // a duplicate delivery of the same tick
    await Promise.all([clock.tick(), clock.tick()]); // two at once
    let queued = await scheduledRuns(workspace.id);
    expect(queued).toHaveLength(1);
    expect(queued[0]).toMatchObject({ operation: "plan", isSpeculative: true, source: "schedule" });
    expect(queued[0]?.message).toContain(new Date(first).toISOString());
    expect(queued[0]?.createdBy).toMatchObject({ type: "schedule", id: created.body.id });
    let [view] = await listSchedules(org, workspace.id);
    expect(view?.lastOccurrence).toMatchObject({ status: "queued", runId: queued[0]?.id });
    expect(Date.parse(view?.nextRunAt ?? "")).toBe(first + 5 * MINUTE);

    // The next occurrence comes while the first run still waits for an agent: skipped.
    clock.set(first + 5 * MINUTE + 1_000);
    await clock.tick();
    await clock.tick();
    expect(await scheduledRuns(workspace.id)).toHaveLength(1);
    [view] = await listSchedules(org, workspace.id);
    expect(view?.lastOccurrence).toMatchObject({
      at: new Date(first + 5 * MINUTE).toISOString(),
      status: "skipped",
      runId: null,
    });
    expect(view?.lastOccurrence?.reason).toMatch(/still plan_queued/);

    // The run finishes; the handler then misses three occurrences and runs late, once: only
    // the newest missed occurrence queues a run.
    const agent = await TestAgent.register(agentToken);
    await agent.plan(false);
    clock.set(first + 22 * MINUTE);
    await clock.tick();
    await clock.tick();
    queued = await scheduledRuns(workspace.id);
    expect(queued).toHaveLength(2);
    expect(queued[1]?.message).toContain(new Date(first + 20 * MINUTE).toISOString());
    [view] = await listSchedules(org, workspace.id);
    expect(view?.lastOccurrence).toMatchObject({ status: "queued", runId: queued[1]?.id });
    expect(Date.parse(view?.nextRunAt ?? "")).toBe(first + 25 * MINUTE);
  });

  it("records a failed occurrence when its run is refused", async () => {
    const org = await seedOrg();
    const pool = await runnableWorkspace(org);
    // A workspace without a configuration: every run is refused.
    const bare = await createWorkspace(org, { executionMode: "agent", poolId: pool.poolId });
    const created = await createSchedule(org, bare.id, { cron: "* * * * *", operation: "apply" });
    clock.set(Date.parse(created.body.nextRunAt ?? "") + 1_000);
    await clock.tick();
    const [view] = await listSchedules(org, bare.id);
    expect(view?.lastOccurrence).toMatchObject({ status: "failed", runId: null });
    expect(view?.lastOccurrence?.reason).toMatch(/no configuration version/);
    expect(await scheduledRuns(bare.id)).toEqual([]);
  });

  it("never runs a deleted schedule", async () => {
    const org = await seedOrg();
    const { workspace } = await runnableWorkspace(org);
    const created = await createSchedule(org, workspace.id, {
      cron: "* * * * *",
      operation: "plan",
    });
    const del = await requestJson(
      `/api/v1/workspaces/${workspace.id}/schedules/${created.body.id}`,
      {
        method: "DELETE",
        token: org.tokens.admin,
      },
    );
    expect(del.status).toBe(204);
    clock.set(Date.parse(created.body.nextRunAt ?? "") + 1_000);
    await clock.tick();
    expect(await scheduledRuns(workspace.id)).toEqual([]);
  });
});

async function withSchedule(org: TestOrg) {
  const { workspace } = await runnableWorkspace(org);
  const created = await createSchedule(org, workspace.id, { cron: "0 3 * * *", operation: "plan" });
  expect(created.status).toBe(201);
  return { workspaceId: workspace.id, scheduleId: created.body.id };
}

describeAuth("POST /api/v1/workspaces/:workspaceId/schedules", {
  role: "admin",
  target: async (org) => ({
    method: "POST",
    path: `/api/v1/workspaces/${(await withSchedule(org)).workspaceId}/schedules`,
    body: { cron: "*/10 * * * *", operation: "apply" },
  }),
});
describeAuth("GET /api/v1/workspaces/:workspaceId/schedules", {
  role: "reader",
  target: async (org) => ({
    method: "GET",
    path: `/api/v1/workspaces/${(await withSchedule(org)).workspaceId}/schedules`,
  }),
});
describeAuth("DELETE /api/v1/workspaces/:workspaceId/schedules/:scheduleId", {
  role: "admin",
  target: async (org) => {
    const { workspaceId, scheduleId } = await withSchedule(org);
    return { method: "DELETE", path: `/api/v1/workspaces/${workspaceId}/schedules/${scheduleId}` };
  },
});
describeAccess("POST /api/v1/workspaces/:workspaceId/schedules", {
  level: "admin",
  allowedStatus: 201,
  target: async (org) => {
    const { workspaceId } = await withSchedule(org);
    return {
      workspaceId,
      method: "POST",
      path: `/api/v1/workspaces/${workspaceId}/schedules`,
      body: { cron: "*/10 * * * *", operation: "plan" },
    };
  },
});
describeAccess("GET /api/v1/workspaces/:workspaceId/schedules", {
  level: "read",
  allowedStatus: 200,
  target: async (org) => {
    const { workspaceId } = await withSchedule(org);
    return { workspaceId, method: "GET", path: `/api/v1/workspaces/${workspaceId}/schedules` };
  },
});
describeAccess("DELETE /api/v1/workspaces/:workspaceId/schedules/:scheduleId", {
  level: "admin",
  allowedStatus: 204,
  target: async (org) => {
    const { workspaceId, scheduleId } = await withSchedule(org);
    return {
      workspaceId,
      method: "DELETE",
      path: `/api/v1/workspaces/${workspaceId}/schedules/${scheduleId}`,
    };
  },
});
