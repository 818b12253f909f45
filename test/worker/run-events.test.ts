/**
 * The run events outbox: D1's triggers record every run change in the statement that makes it,
 * the run model decides which are lifecycle events, and `emitRunEvent` (what schedules and
 * assessments call) records an event once per id and delivers it to the sinks.
 */
import { env } from "cloudflare:workers";
import { Webhook } from "standardwebhooks";
import { describe, expect, inject, it, vi } from "vitest";
import { emitRunEvent, listRunEvents } from "../../src/events/outbox.ts";
import { requestJson } from "./helpers/api.ts";
import { useTestClock } from "./helpers/clock.ts";
import { seedOrg } from "./helpers/fixtures.ts";
import { queueRun, runnableWorkspace, TestAgent } from "./helpers/runs.ts";

/** Wall-clock budget of a test that drives runs through many requests (slow on a busy machine). */
const SLOW_TEST_MS = 60_000;

const clock = useTestClock();
const receiver = inject("webhookReceiverUrl");

describe("run events", () => {
  it("are recorded by D1 triggers that every migration must keep", {
    timeout: SLOW_TEST_MS,
  }, async () => {
    const triggers = await env.DB.prepare(
      "SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'runs' AND name LIKE 'run_events_%' ORDER BY name",
    ).all<{ name: string }>();
    expect(triggers.results.map((t) => t.name)).toEqual([
      "run_events_on_insert",
      "run_events_on_status",
    ]);
  });

  it("skip needs_attention on an auto-apply run and name each change once", {
    timeout: SLOW_TEST_MS,
  }, async () => {
    const org = await seedOrg();
    const auto = await runnableWorkspace(org, { autoApply: true });
    const agent = await TestAgent.register(auto.agentToken);
    const run = await queueRun(org, auto.workspace.id);
    await agent.plan(true);
    await agent.apply();
    const events = await listRunEvents(clock.deps.db, run.body.id);
    expect(events.map((e) => [e.id, e.type, e.status])).toEqual([
      [`${run.body.id}:created`, "run:created", "pending"],
      [`${run.body.id}:planning`, "run:planning", "planning"],
      [`${run.body.id}:applying`, "run:applying", "applying"],
      [`${run.body.id}:applied`, "run:completed", "applied"],
    ]);
  });

  it("emitRunEvent records an event once per id and notifications deliver it once", {
    timeout: SLOW_TEST_MS,
  }, async () => {
    const org = await seedOrg();
    const ws = await runnableWorkspace(org);
    const name = `emit${Date.now().toString(36)}`;
    const config = await requestJson<{ id: string; secret: string }>(
      `/api/v1/workspaces/${ws.workspace.id}/notifications`,
      {
        method: "POST",
        token: org.tokens.admin,
        body: {
          name: "drift",
          url: `${receiver}/hooks/${name}`,
          triggers: ["assessment:drifted"],
        },
      },
    );
    const run = await queueRun(org, ws.workspace.id, { operation: "plan" });
    const event = {
      id: `asm_test_${name}:drifted`,
      type: "assessment:drifted" as const,
      orgId: org.orgId,
      workspaceId: ws.workspace.id,
      runId: run.body.id,
      status: "planned_and_finished" as const,
      data: { driftedResources: ["null_resource.x"] },
    };
    await emitRunEvent(clock.deps, event);
    await emitRunEvent(clock.deps, event);
    const received = async () =>
      (await (await fetch(`${receiver}/requests/${name}`)).json()) as {
        headers: Record<string, string>;
        body: string;
      }[];
    await expect.poll(async () => (await received()).length, { timeout: 10_000 }).toBe(1);
    const [request] = await received();
    if (!request) {
      throw new Error("no request");
    }
    vi.useFakeTimers({ toFake: ["Date"] });
    vi.setSystemTime(Number(request.headers["webhook-timestamp"]) * 1000);
    const payload = new Webhook(config.body.secret).verify(request.body, request.headers) as {
      type: string;
      data: { details: unknown };
    };
    vi.useRealTimers();
    expect(payload.type).toBe("assessment:drifted");
    expect(payload.data.details).toEqual({ driftedResources: ["null_resource.x"] });
    const recorded = (await listRunEvents(clock.deps.db, run.body.id)).filter(
      (e) => e.id === event.id,
    );
    expect(recorded).toHaveLength(1);
  });
});
