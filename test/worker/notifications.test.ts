/**
 * Notification configurations through the real routes, and deliveries through the real queue to
 * a real loopback receiver (test/setup/webhook-receiver.ts), verified with the `standardwebhooks`
 * package as any receiver would. Retries are driven by the cron's tick on the test clock.
 */

import { env } from "cloudflare:workers";
import { Webhook } from "standardwebhooks";
import { describe, expect, inject, it, vi } from "vitest";
import { listRunEvents } from "../../src/events/outbox.ts";
import { tick } from "../../src/worker.ts";
import { type ErrorBody, requestJson } from "./helpers/api.ts";
import { describeAccess, describeAuth } from "./helpers/auth-matrix.ts";
import { useTestClock } from "./helpers/clock.ts";
import { snapshotD1 } from "./helpers/d1-snapshot.ts";
import { seedOrg, type TestOrg } from "./helpers/fixtures.ts";
import { queueRun, runnableWorkspace } from "./helpers/runs.ts";
import { createWorkspace } from "./helpers/workspaces.ts";

/** Wall-clock budget of a test that drives runs through many requests (slow on a busy machine). */
const SLOW_TEST_MS = 60_000;

const clock = useTestClock();
const receiver = inject("webhookReceiverUrl");
let hookCounter = 0;

type Config = { id: string; secret: string; url: string; [field: string]: unknown };
type Received = { headers: Record<string, string>; body: string };
type Delivery = {
  id: string;
  status: string;
  attempts: number;
  responseStatus: number | null;
  error: string | null;
};

/** A fresh receiver path, optionally answering the given statuses first. */
async function hook(script: { status: number; retryAfter?: string }[] = []) {
  const name = `h${Date.now().toString(36)}${hookCounter++}`;
  await fetch(`${receiver}/script/${name}`, { method: "PUT", body: JSON.stringify(script) });
  return {
    url: `${receiver}/hooks/${name}`,
    received: async () =>
      (await (await fetch(`${receiver}/requests/${name}`)).json()) as Received[],
  };
}

async function createConfig(org: TestOrg, workspaceId: string, body: Record<string, unknown>) {
  return requestJson<Config & ErrorBody>(`/api/v1/workspaces/${workspaceId}/notifications`, {
    method: "POST",
    token: org.tokens.admin,
    body: { name: "hook", ...body },
  });
}

async function deliveries(org: TestOrg, id: string): Promise<Delivery[]> {
  const res = await requestJson<{ deliveries: Delivery[] }>(
    `/api/v1/notifications/${id}/deliveries`,
    { token: org.tokens.admin },
  );
  expect(res.status).toBe(200);
  return res.body.deliveries;
}

/**
 * Verifies a request as a receiver would have on its arrival: the library checks the timestamp
 * against its own clock, so that clock is set to when the test clock sent it.
 */
function verified(secret: string, request: Received) {
  vi.useFakeTimers({ toFake: ["Date"] });
  try {
    vi.setSystemTime(Number(request.headers["webhook-timestamp"]) * 1000 + 1000);
    return new Webhook(secret).verify(request.body, request.headers) as {
      type: string;
      data: Record<string, unknown>;
    };
  } finally {
    vi.useRealTimers();
  }
}

describe("notification configurations", () => {
  it("creates a configuration whose secret is shown once, lists, changes and deletes it", {
    timeout: SLOW_TEST_MS,
  }, async () => {
    const org = await seedOrg();
    const ws = await createWorkspace(org);
    const created = await createConfig(org, ws.id, {
      url: "https://hooks.example.com/outpost",
      triggers: ["run:errored", "run:needs_attention"],
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(created.body).toMatchObject({ destinationType: "generic", enabled: true });

    const listed = await requestJson<{ notifications: Record<string, unknown>[] }>(
      `/api/v1/workspaces/${ws.id}/notifications`,
      { token: org.tokens.admin },
    );
    expect(listed.body.notifications).toHaveLength(1);
    expect(JSON.stringify(listed.body)).not.toContain("whsec_");

    const patched = await requestJson<Config>(`/api/v1/notifications/${created.body.id}`, {
      method: "PATCH",
      token: org.tokens.admin,
      body: { enabled: false, destinationType: "slack" },
    });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ enabled: false, destinationType: "slack" });
    expect(JSON.stringify(patched.body)).not.toContain("whsec_");

    const rotated = await requestJson<Config>(
      `/api/v1/notifications/${created.body.id}/rotate-secret`,
      { method: "POST", token: org.tokens.admin },
    );
    expect(rotated.status).toBe(200);
    expect(rotated.body.secret).toMatch(/^whsec_/);
    expect(rotated.body.secret).not.toBe(created.body.secret);

    const deleted = await requestJson(`/api/v1/notifications/${created.body.id}`, {
      method: "DELETE",
      token: org.tokens.admin,
    });
    expect(deleted.status).toBe(204);
    const gone = await requestJson<ErrorBody>(`/api/v1/notifications/${created.body.id}`, {
      token: org.tokens.admin,
    });
    expect(gone.status).toBe(404);
  });

  it("refuses bad input with a clear 400 and changes nothing", {
    timeout: SLOW_TEST_MS,
  }, async () => {
    const org = await seedOrg();
    const ws = await createWorkspace(org);
    const before = await snapshotD1();
    const cases: [Record<string, unknown>, string][] = [
      [{ url: "http://hooks.example.com/x" }, "https"],
      [{ url: "https://user:pw@hooks.example.com/x" }, "user name"],
      [{ url: "not a url" }, "absolute URL"],
      [{ url: "https://hooks.example.com", triggers: ["run:exploded"] }, "triggers"],
      [{ url: "https://hooks.example.com", destinationType: "pager" }, "destinationType"],
      [{ url: "https://hooks.example.com", secret: "whsec_mine" }, "secret"],
    ];
    for (const [body, words] of cases) {
      const res = await createConfig(org, ws.id, body);
      expect(res.status, JSON.stringify(res.body)).toBe(400);
      expect(res.body.error.message).toContain(words);
    }
    expect(await snapshotD1()).toEqual(before);
  });
});

describe("deliveries", () => {
  it("signs every generic delivery so standardwebhooks verifies it, and carries no secret", {
    timeout: SLOW_TEST_MS,
  }, async () => {
    const org = await seedOrg();
    const runnable = await runnableWorkspace(org);
    const target = await hook();
    const config = await createConfig(org, runnable.workspace.id, {
      url: target.url,
      triggers: ["run:created"],
    });
    expect(config.status).toBe(201);
    const run = await queueRun(org, runnable.workspace.id, { message: "notify me" });
    expect(run.status, JSON.stringify(run.body)).toBe(201);

    await expect.poll(async () => (await target.received()).length, { timeout: 10_000 }).toBe(1);
    const [request] = await target.received();
    if (!request) {
      throw new Error("no request");
    }
    const payload = verified(config.body.secret, request);
    expect(payload.type).toBe("run:created");
    expect(payload.data).toMatchObject({
      eventId: `${run.body.id}:created`,
      workspace: { id: runnable.workspace.id, name: runnable.workspace.name },
      run: {
        id: run.body.id,
        message: "notify me",
        url: `https://outpost.test/ui/runs/${run.body.id}`,
      },
    });
    expect(request.body).not.toContain("whsec_");
    expect(request.body).not.toContain(org.tokens.member);
    // Another secret does not verify it.
    const other = await createConfig(org, runnable.workspace.id, { url: target.url });
    expect(() => verified(other.body.secret, request)).toThrow();
    // Only the subscribed trigger was sent, whatever else the run did.
    expect((await listRunEvents(clock.deps.db, run.body.id)).map((e) => e.type)).toEqual([
      "run:created",
    ]);
  });

  it("retries 500, 500, 200 as three attempts under one webhook-id, each verifiable", {
    timeout: SLOW_TEST_MS,
  }, async () => {
    const org = await seedOrg();
    const runnable = await runnableWorkspace(org);
    const target = await hook([{ status: 500 }, { status: 500 }]);
    const config = await createConfig(org, runnable.workspace.id, {
      url: target.url,
      triggers: ["run:created"],
    });
    await queueRun(org, runnable.workspace.id);
    await expect.poll(async () => (await target.received()).length, { timeout: 10_000 }).toBe(1);
    await expect
      .poll(async () => (await deliveries(org, config.body.id))[0]?.error ?? null)
      .toContain("500");

    // Not due yet: a tick now attempts nothing.
    await tick(clock.deps);
    expect(await target.received()).toHaveLength(1);
    clock.advance(2 * 60_000);
    await tick(clock.deps);
    expect(await target.received()).toHaveLength(2);
    clock.advance(5 * 60_000);
    await tick(clock.deps);
    const requests = await target.received();
    expect(requests).toHaveLength(3);

    const ids = new Set(requests.map((r) => r.headers["webhook-id"]));
    expect(ids.size).toBe(1);
    for (const request of requests) {
      expect(verified(config.body.secret, request).type).toBe("run:created");
    }
    const [delivery] = await deliveries(org, config.body.id);
    expect(delivery).toMatchObject({ status: "delivered", attempts: 3, responseStatus: 200 });
    expect(delivery?.id).toBe([...ids][0]);
    // Delivered: later ticks send nothing more.
    clock.advance(60 * 60_000);
    await tick(clock.deps);
    expect(await target.received()).toHaveLength(3);
  });

  it("honours Retry-After on 429, fails a 4xx at once, and gives up after a bounded number of attempts", {
    timeout: SLOW_TEST_MS,
  }, async () => {
    const org = await seedOrg();
    const runnable = await runnableWorkspace(org);
    const limited = await hook([{ status: 429, retryAfter: "600" }]);
    const refused = await hook([{ status: 404 }]);
    const failing = await hook(Array.from({ length: 20 }, () => ({ status: 503 })));
    const configs = await Promise.all(
      [limited, refused, failing].map((t) =>
        createConfig(org, runnable.workspace.id, { url: t.url, triggers: ["run:created"] }),
      ),
    );
    await queueRun(org, runnable.workspace.id);
    for (const t of [limited, refused, failing]) {
      await expect.poll(async () => (await t.received()).length, { timeout: 10_000 }).toBe(1);
    }
    const [limitedConfig, refusedConfig, failingConfig] = configs.map((c) => c.body.id);
    if (!limitedConfig || !refusedConfig || !failingConfig) {
      throw new Error("configs missing");
    }
    await expect.poll(async () => (await deliveries(org, refusedConfig))[0]?.status).toBe("failed");
    expect((await deliveries(org, refusedConfig))[0]).toMatchObject({
      attempts: 1,
      responseStatus: 404,
    });

    // Five minutes on: past the backoff, not past Retry-After (ten minutes).
    clock.advance(5 * 60_000);
    await tick(clock.deps);
    expect(await limited.received()).toHaveLength(1);
    clock.advance(6 * 60_000);
    await tick(clock.deps);
    expect(await limited.received()).toHaveLength(2);
    expect((await deliveries(org, limitedConfig))[0]).toMatchObject({ status: "delivered" });

    // The failing one: an hour at a time until it is given up.
    for (let i = 0; i < 12; i++) {
      clock.advance(61 * 60_000);
      await tick(clock.deps);
    }
    const [gaveUp] = await deliveries(org, failingConfig);
    expect(gaveUp).toMatchObject({ status: "failed", attempts: 8, responseStatus: 503 });
    expect(gaveUp?.error).toContain("gave up after 8 attempts");
    expect(await failing.received()).toHaveLength(8);
    expect(await refused.received()).toHaveLength(1);
  });

  it("verify sends one test delivery and answers how it went", {
    timeout: SLOW_TEST_MS,
  }, async () => {
    const org = await seedOrg();
    const ws = await createWorkspace(org);
    const target = await hook([{ status: 500 }]);
    const config = await createConfig(org, ws.id, { url: target.url });
    const failed = await requestJson<Delivery>(`/api/v1/notifications/${config.body.id}/verify`, {
      method: "POST",
      token: org.tokens.admin,
    });
    expect(failed.status).toBe(200);
    expect(failed.body).toMatchObject({ status: "failed", responseStatus: 500, attempts: 1 });
    const ok = await requestJson<Delivery>(`/api/v1/notifications/${config.body.id}/verify`, {
      method: "POST",
      token: org.tokens.admin,
    });
    expect(ok.body).toMatchObject({ status: "delivered", responseStatus: 200, attempts: 1 });
    const requests = await target.received();
    expect(requests).toHaveLength(2);
    const last = requests[1];
    if (!last) {
      throw new Error("no request");
    }
    expect(verified(config.body.secret, last).type).toBe("verification");
  });

  it("formats Slack and Teams messages with the run, workspace, status and link", {
    timeout: SLOW_TEST_MS,
  }, async () => {
    const org = await seedOrg();
    const runnable = await runnableWorkspace(org);
    const slack = await hook();
    const teams = await hook();
    await createConfig(org, runnable.workspace.id, {
      url: slack.url,
      destinationType: "slack",
      triggers: ["run:created"],
    });
    await createConfig(org, runnable.workspace.id, {
      url: teams.url,
      destinationType: "microsoft-teams",
      triggers: ["run:created"],
    });
    const run = await queueRun(org, runnable.workspace.id);
    await expect.poll(async () => (await slack.received()).length, { timeout: 10_000 }).toBe(1);
    await expect.poll(async () => (await teams.received()).length, { timeout: 10_000 }).toBe(1);
    const slackBody = JSON.parse((await slack.received())[0]?.body ?? "{}") as { text: string };
    expect(slackBody.text).toContain(run.body.id);
    expect(slackBody.text).toContain(runnable.workspace.name);
    expect(slackBody.text).toContain(`https://outpost.test/ui/runs/${run.body.id}`);
    const teamsBody = (await teams.received())[0]?.body ?? "";
    expect(teamsBody).toContain("AdaptiveCard");
    expect(teamsBody).toContain(runnable.workspace.name);
    expect(teamsBody).toContain("pending");
  });
});

async function configTarget(org: TestOrg, suffix = "", method = "GET", body?: unknown) {
  const ws = await createWorkspace(org);
  const config = await createConfig(org, ws.id, { url: "https://hooks.example.com/x" });
  return {
    method,
    path: `/api/v1/notifications/${config.body.id}${suffix}`,
    body,
    workspaceId: ws.id,
  };
}

describeAuth("POST /api/v1/workspaces/:id/notifications", {
  role: "admin",
  target: async (org) => {
    const ws = await createWorkspace(org);
    return {
      method: "POST",
      path: `/api/v1/workspaces/${ws.id}/notifications`,
      body: { name: "x", url: "https://hooks.example.com/x" },
    };
  },
});
describeAccess("POST /api/v1/workspaces/:id/notifications", {
  level: "admin",
  allowedStatus: 201,
  target: async (org) => {
    const ws = await createWorkspace(org);
    return {
      method: "POST",
      path: `/api/v1/workspaces/${ws.id}/notifications`,
      body: { name: "x", url: "https://hooks.example.com/x" },
      workspaceId: ws.id,
    };
  },
});
describeAuth("GET /api/v1/workspaces/:id/notifications", {
  role: "admin",
  target: async (org) => {
    const ws = await createWorkspace(org);
    return { method: "GET", path: `/api/v1/workspaces/${ws.id}/notifications` };
  },
});
const byIdRoutes: [string, string, number, unknown?][] = [
  ["GET", "", 200],
  ["PATCH", "", 200, { enabled: false }],
  ["DELETE", "", 204],
  ["POST", "/rotate-secret", 200],
  ["GET", "/deliveries", 200],
];
for (const [method, suffix, allowedStatus, body] of byIdRoutes) {
  describeAuth(`${method} /api/v1/notifications/:id${suffix}`, {
    role: "admin",
    target: (org) => configTarget(org, suffix, method, body),
  });
  describeAccess(`${method} /api/v1/notifications/:id${suffix}`, {
    level: "admin",
    allowedStatus,
    target: (org) => configTarget(org, suffix, method, body),
  });
}
describeAuth("POST /api/v1/notifications/:id/verify", {
  role: "admin",
  target: (org) => configTarget(org, "/verify", "POST"),
});

it("keeps the delivery loopback flag a development setting", () => {
  expect(env.NOTIFICATIONS_ALLOW_LOOPBACK).toBe("true");
});
