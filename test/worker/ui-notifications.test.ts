/**
 * The dashboard's notifications page of a workspace, through the real forms: the signing secret
 * shown once, enable and disable, a test delivery to the loopback receiver verified with
 * `standardwebhooks`, the deliveries, delete; and the refusals (roles, CSRF, bad input, another
 * workspace's or organization's configuration).
 */
import { Webhook } from "standardwebhooks";
import { describe, expect, inject, it, vi } from "vitest";
import { type ErrorBody, requestJson } from "./helpers/api.ts";
import { useTestClock } from "./helpers/clock.ts";
import { snapshotD1 } from "./helpers/d1-snapshot.ts";
import { seedOrg, type TestOrg } from "./helpers/fixtures.ts";
import { signIn } from "./helpers/ui.ts";
import { createWorkspace } from "./helpers/workspaces.ts";

/** Wall-clock budget of a test that drives many requests (slow on a busy machine). */
const SLOW_TEST_MS = 60_000;

useTestClock();
const receiver = inject("webhookReceiverUrl");

type Config = { id: string; enabled: boolean; triggers: string[]; name: string };

async function configs(org: TestOrg, workspaceId: string): Promise<Config[]> {
  const res = await requestJson<{ notifications: Config[] }>(
    `/api/v1/workspaces/${workspaceId}/notifications`,
    { token: org.tokens.admin },
  );
  expect(res.status).toBe(200);
  return res.body.notifications;
}

describe("the notifications page", () => {
  it("creates a configuration showing its secret once, sends a signed test, disables and deletes it", {
    timeout: SLOW_TEST_MS,
  }, async () => {
    const org = await seedOrg();
    const ws = await createWorkspace(org);
    const admin = await signIn(org.tokens.admin);
    const base = `/ui/workspaces/${ws.id}/notifications`;
    expect(await (await admin.get(`/ui/workspaces/${ws.id}`)).text()).toContain(`href="${base}"`);
    const name = `ui${Date.now().toString(36)}`;
    const created = await admin.post(base, {
      name: "ops",
      url: `${receiver}/hooks/${name}`,
      destinationType: "generic",
      "trigger:run:errored": "on",
      "trigger:assessment:drifted": "on",
    });
    expect(created.status).toBe(201);
    const createdPage = await created.text();
    const secret = /whsec_[A-Za-z0-9+/=]+/.exec(createdPage)?.[0] ?? "";
    expect(secret).toMatch(/^whsec_/);
    expect(createdPage).toContain("shown only once");
    const [config] = await configs(org, ws.id);
    expect(config).toMatchObject({
      name: "ops",
      enabled: true,
      triggers: ["run:errored", "assessment:drifted"],
    });
    const id = config?.id ?? "";
    // Shown once: the page never shows it again.
    const page = await (await admin.get(base)).text();
    expect(page).not.toContain("whsec_");
    expect(page).toContain("run:errored, assessment:drifted");

    const verified = await admin.post(`${base}/${id}/verify`);
    expect(verified.status).toBe(200);
    expect(await verified.text()).toContain("Test delivery delivered (200)");
    const [request] = (await (await fetch(`${receiver}/requests/${name}`)).json()) as {
      headers: Record<string, string>;
      body: string;
    }[];
    vi.useFakeTimers({ toFake: ["Date"] });
    try {
      vi.setSystemTime(Number(request?.headers["webhook-timestamp"]) * 1000 + 1000);
      const payload = new Webhook(secret).verify(request?.body ?? "", request?.headers ?? {}) as {
        type: string;
      };
      expect(payload.type).toBe("verification");
    } finally {
      vi.useRealTimers();
    }
    const withDeliveries = await (await admin.get(base)).text();
    expect(withDeliveries).toContain("verification");
    expect(withDeliveries).toMatch(/status-delivered/);

    const disabled = await admin.post(`${base}/${id}/disable`);
    expect(disabled.status).toBe(303);
    expect((await configs(org, ws.id))[0]?.enabled).toBe(false);
    expect(await (await admin.get(disabled.headers.get("location") ?? "")).text()).toContain(
      "Notification disabled.",
    );
    await admin.post(`${base}/${id}/enable`);
    expect((await configs(org, ws.id))[0]?.enabled).toBe(true);

    expect((await admin.post(`${base}/${id}/delete`)).status).toBe(303);
    expect(await configs(org, ws.id)).toEqual([]);
  });

  it("refuses lower roles, a missing CSRF token, bad input and others' configurations, changing nothing", {
    timeout: SLOW_TEST_MS,
  }, async () => {
    const org = await seedOrg();
    const ws = await createWorkspace(org);
    const other = await createWorkspace(org);
    const base = `/ui/workspaces/${ws.id}/notifications`;
    const created = await requestJson<Config & ErrorBody>(
      `/api/v1/workspaces/${other.id}/notifications`,
      {
        method: "POST",
        token: org.tokens.admin,
        body: { name: "x", url: "https://hooks.example.com/x" },
      },
    );
    const elsewhere = created.body.id;
    const [admin, member, reader] = await Promise.all([
      signIn(org.tokens.admin),
      signIn(org.tokens.member),
      signIn(org.tokens.reader),
    ]);
    const stranger = await signIn((await seedOrg()).tokens.owner);
    const before = await snapshotD1();
    const form = { name: "x", url: "https://hooks.example.com/x", destinationType: "generic" };

    for (const session of [member, reader]) {
      expect((await session.get(base)).status).toBe(403);
      expect((await session.post(base, form)).status).toBe(403);
      expect(
        (await session.post(`/ui/workspaces/${other.id}/notifications/${elsewhere}/disable`))
          .status,
      ).toBe(403);
    }
    expect((await admin.post(base, form, null)).status).toBe(403);
    const insecure = await admin.post(base, { ...form, url: "http://hooks.example.com/x" });
    expect(insecure.status).toBe(400);
    expect(await insecure.text()).toContain("https");
    expect((await admin.post(base, { ...form, "trigger:run:exploded": "on" })).status).toBe(400);
    expect((await admin.post(base, { ...form, destinationType: "pager" })).status).toBe(400);
    // Another workspace's configuration under this workspace's path, and another organization's.
    expect((await admin.post(`${base}/${elsewhere}/disable`)).status).toBe(404);
    expect((await admin.post(`${base}/${elsewhere}/delete`)).status).toBe(404);
    expect((await stranger.get(base)).status).toBe(404);
    expect(
      (await stranger.post(`/ui/workspaces/${other.id}/notifications/${elsewhere}/delete`)).status,
    ).toBe(404);
    expect(await snapshotD1()).toEqual(before);
  });
});
