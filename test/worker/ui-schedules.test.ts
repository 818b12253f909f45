/**
 * The dashboard's schedules page of a workspace, through the real forms: create (validated as
 * the API does), list, delete; refusals by role, CSRF and another organization.
 */
import { describe, expect, it } from "vitest";
import { requestJson } from "./helpers/api.ts";
import { snapshotD1 } from "./helpers/d1-snapshot.ts";
import { seedOrg, type TestOrg } from "./helpers/fixtures.ts";
import { runnableWorkspace } from "./helpers/runs.ts";
import { signIn } from "./helpers/ui.ts";

/** Wall-clock budget of a test that drives many requests (slow on a busy machine). */
const SLOW_TEST_MS = 60_000;

async function schedules(org: TestOrg, workspaceId: string) {
  const res = await requestJson<{ schedules: { id: string; cron: string; timezone: string }[] }>(
    `/api/v1/workspaces/${workspaceId}/schedules`,
    { token: org.tokens.reader },
  );
  expect(res.status).toBe(200);
  return res.body.schedules;
}

describe("the schedules page", () => {
  it("creates, lists and deletes a schedule; refuses bad input, lower roles and other organizations", {
    timeout: SLOW_TEST_MS,
  }, async () => {
    const org = await seedOrg();
    const { workspace } = await runnableWorkspace(org);
    const base = `/ui/workspaces/${workspace.id}/schedules`;
    const [admin, member] = await Promise.all([
      signIn(org.tokens.admin),
      signIn(org.tokens.member),
    ]);
    const stranger = await signIn((await seedOrg()).tokens.owner);
    expect(await (await admin.get(`/ui/workspaces/${workspace.id}`)).text()).toContain(
      `href="${base}"`,
    );

    const before = await snapshotD1();
    const bad = await admin.post(base, { cron: "61 * * * *", timezone: "UTC", operation: "plan" });
    expect(bad.status).toBe(400);
    expect(await bad.text()).toContain("cron");
    expect(
      (await admin.post(base, { cron: "0 6 * * *", timezone: "Mars/Olympus", operation: "plan" }))
        .status,
    ).toBe(400);
    expect((await member.post(base, { cron: "0 6 * * *", operation: "plan" })).status).toBe(403);
    expect((await member.get(base)).status).toBe(403);
    expect((await admin.post(base, { cron: "0 6 * * *", operation: "plan" }, null)).status).toBe(
      403,
    );
    expect((await stranger.get(base)).status).toBe(404);
    expect(await snapshotD1()).toEqual(before);

    const created = await admin.post(base, {
      cron: "0 6 * * 1-5",
      timezone: "Europe/Berlin",
      operation: "refresh",
    });
    expect(created.status).toBe(303);
    const [schedule] = await schedules(org, workspace.id);
    expect(schedule).toMatchObject({ cron: "0 6 * * 1-5", timezone: "Europe/Berlin" });
    const page = await (await admin.get(base)).text();
    expect(page).toContain("0 6 * * 1-5");
    expect(page).toContain("Europe/Berlin");

    const id = schedule?.id ?? "";
    expect((await stranger.post(`${base}/${id}/delete`)).status).toBe(404);
    expect((await member.post(`${base}/${id}/delete`)).status).toBe(403);
    const deleted = await admin.post(`${base}/${id}/delete`);
    expect(deleted.status).toBe(303);
    expect(await (await admin.get(deleted.headers.get("location") ?? "")).text()).toContain(
      "Schedule deleted.",
    );
    expect(await schedules(org, workspace.id)).toEqual([]);
  });
});
