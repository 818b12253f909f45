/**
 * Assessments notify end to end: an assessment started through the real route, its plan finished
 * by an agent over the protocol, the verdict sent through the real run events queue to the
 * loopback receiver (test/setup/webhook-receiver.ts) and verified there with `standardwebhooks`,
 * as a receiver would. A repeated ending of the same assessment sends nothing more.
 */
import { Webhook } from "standardwebhooks";
import { describe, expect, inject, it, vi } from "vitest";
import { finishAssessment } from "../../src/assessments/service.ts";
import { listRunEvents } from "../../src/events/outbox.ts";
import { requestJson } from "./helpers/api.ts";
import { useTestClock } from "./helpers/clock.ts";
import { seedOrg } from "./helpers/fixtures.ts";
import { runnableWorkspace, TestAgent } from "./helpers/runs.ts";

/** Wall-clock budget of a test that drives runs through many requests (slow on a busy machine). */
const SLOW_TEST_MS = 60_000;

const clock = useTestClock();
const receiver = inject("webhookReceiverUrl");

type Received = { headers: Record<string, string>; body: string };
type Payload = {
  type: string;
  data: {
    eventId: string;
    workspace: { id: string };
    run: { id: string; status: string };
    details: { assessmentId: string; driftedResources: string[] };
  };
};

const noChanges = { adds: 0, changes: 0, destroys: 0, imports: 0, hasChanges: false };

/** Verifies a request with the library, its clock set to when the test clock sent it. */
function verified(secret: string, request: Received): Payload {
  vi.useFakeTimers({ toFake: ["Date"] });
  try {
    vi.setSystemTime(Number(request.headers["webhook-timestamp"]) * 1000 + 1000);
    return new Webhook(secret).verify(request.body, request.headers) as Payload;
  } finally {
    vi.useRealTimers();
  }
}

describe("assessment notifications", () => {
  it("sends assessment:drifted with the drifted addresses and assessment:failed, each once and signed", {
    timeout: SLOW_TEST_MS,
  }, async () => {
    const org = await seedOrg();
    const { workspace, agentToken } = await runnableWorkspace(org);
    const name = `asm${Date.now().toString(36)}`;
    const config = await requestJson<{ id: string; secret: string }>(
      `/api/v1/workspaces/${workspace.id}/notifications`,
      {
        method: "POST",
        token: org.tokens.admin,
        body: {
          name: "drift",
          url: `${receiver}/hooks/${name}`,
          triggers: ["assessment:drifted", "assessment:failed"],
        },
      },
    );
    expect(config.status, JSON.stringify(config.body)).toBe(201);
    const slack = await requestJson(`/api/v1/workspaces/${workspace.id}/notifications`, {
      method: "POST",
      token: org.tokens.admin,
      body: {
        name: "chat",
        destinationType: "slack",
        url: `${receiver}/hooks/${name}-slack`,
        triggers: ["assessment:drifted"],
      },
    });
    expect(slack.status).toBe(201);
    const received = async () =>
      (await (await fetch(`${receiver}/requests/${name}`)).json()) as Received[];
    const agent = await TestAgent.register(agentToken);
    const assess = async (finish: Record<string, unknown>) => {
      const started = await requestJson<{ id: string; runId: string }>(
        `/api/v1/workspaces/${workspace.id}/assessments`,
        { method: "POST", token: org.tokens.member },
      );
      expect(started.status, JSON.stringify(started.body)).toBe(201);
      const job = await agent.lease();
      await agent.start(job);
      const res = await agent.finish(job, finish);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      return started.body;
    };

    const drifted = await assess({
      outcome: "succeeded",
      exitCode: 2,
      planSummary: {
        ...noChanges,
        hasChanges: true,
        driftedResources: ["null_resource.x", "aws_s3_bucket.logs"],
      },
    });
    await expect.poll(async () => (await received()).length, { timeout: 10_000 }).toBe(1);
    // The same ending seen again (a repeated finish, the tick's repair) records no second event.
    await finishAssessment(clock.deps, drifted.runId);
    await finishAssessment(clock.deps, drifted.runId);
    const events = await listRunEvents(clock.deps.db, drifted.runId);
    expect(events.filter((e) => e.type.startsWith("assessment:")).map((e) => e.id)).toEqual([
      `${drifted.id}:drifted`,
    ]);

    // Chat messages name the drifted addresses too.
    await expect
      .poll(async () => {
        const res = await fetch(`${receiver}/requests/${name}-slack`);
        return ((await res.json()) as Received[]).map((r) => r.body);
      })
      .toEqual([expect.stringContaining("Drifted: null_resource.x, aws_s3_bucket.logs")]);

    const failed = await assess({
      outcome: "failed",
      exitCode: 1,
      message: "Error: provider crashed",
    });
    // The failure's delivery arrives after the drift's: the repeated endings added none between.
    await expect.poll(async () => (await received()).length, { timeout: 10_000 }).toBe(2);
    const [first, second] = await received();
    if (!first || !second) {
      throw new Error("deliveries missing");
    }
    const driftPayload = verified(config.body.secret, first);
    expect(driftPayload.type).toBe("assessment:drifted");
    expect(driftPayload.data).toMatchObject({
      eventId: `${drifted.id}:drifted`,
      workspace: { id: workspace.id },
      run: { id: drifted.runId, status: "planned_and_finished" },
      details: {
        assessmentId: drifted.id,
        driftedResources: ["null_resource.x", "aws_s3_bucket.logs"],
      },
    });
    const failPayload = verified(config.body.secret, second);
    expect(failPayload.type).toBe("assessment:failed");
    expect(failPayload.data).toMatchObject({
      eventId: `${failed.id}:errored`,
      run: { id: failed.runId, status: "errored" },
      details: { assessmentId: failed.id, driftedResources: [] },
    });
    for (const request of [first, second]) {
      expect(request.body).not.toContain("whsec_");
      expect(request.body).not.toContain(config.body.secret);
      expect(request.body).not.toContain(agentToken);
      for (const token of Object.values(org.tokens)) {
        expect(request.body).not.toContain(token);
      }
    }
    const deliveries = await requestJson<{ deliveries: { status: string; trigger: string }[] }>(
      `/api/v1/notifications/${config.body.id}/deliveries`,
      { token: org.tokens.admin },
    );
    expect(deliveries.body.deliveries.map((d) => d.status)).toEqual(["delivered", "delivered"]);
  });
});
