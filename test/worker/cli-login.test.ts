/**
 * `outpost login --sso`'s endpoints: a login is pending until a signed-in person approves its
 * code, then the next poll gets a personal token once; unknown, consumed and org-token approvals
 * are refused. The whole flow with the real CLI and a browser is in test/browser/people.test.ts.
 */
import { describe, expect, it } from "vitest";
import { type ErrorBody, requestJson } from "./helpers/api.ts";
import { seedOrg } from "./helpers/fixtures.ts";
import { seedUser, sessionCookieOf } from "./helpers/people.ts";
import { csrfOf, signIn, uiFetch } from "./helpers/ui.ts";

type Started = { deviceCode: string; userCode: string; verificationUrl: string };
type Poll = { status: string; token?: string };

async function startLogin(): Promise<Started> {
  const res = await requestJson<Started>("/auth/cli/start", {
    method: "POST",
    body: { clientName: "laptop" },
  });
  expect(res.status).toBe(201);
  expect(res.body.verificationUrl).toBe(`http://outpost.test/ui/cli-login/${res.body.userCode}`);
  return res.body;
}

const poll = (deviceCode: string) =>
  requestJson<Poll & ErrorBody>("/auth/cli/token", { method: "POST", body: { deviceCode } });

describe("CLI login", () => {
  it("is pending until approved, then hands the person's token once", async () => {
    const org = await seedOrg();
    const user = await seedUser(org);
    const started = await startLogin();
    expect((await poll(started.deviceCode)).body).toEqual({ status: "pending" });
    const cookie = await sessionCookieOf(org, user);
    const page = await uiFetch(`/ui/cli-login/${started.userCode}`, { cookie });
    const html = await page.text();
    expect(html).toContain(started.userCode);
    expect(html).toContain("laptop");
    const approved = await uiFetch(`/ui/cli-login/${started.userCode}`, {
      cookie,
      form: { _csrf: csrfOf(html) },
    });
    expect(approved.status).toBe(200);
    const token = await poll(started.deviceCode);
    expect(token.body.status).toBe("approved");
    const me = await requestJson<{ id: string }>("/api/v1/user", { token: token.body.token ?? "" });
    expect(me.body.id).toBe(user.userId);
    expect((await poll(started.deviceCode)).status).toBe(404);
  });

  it("refuses an unknown device code and malformed input", async () => {
    expect((await poll("no-such-code")).status).toBe(404);
    const bad = await requestJson<ErrorBody>("/auth/cli/token", { method: "POST", body: {} });
    expect(bad.status).toBe(400);
  });

  it("cannot be approved by an org-token session: a CLI login makes a person's token", async () => {
    const org = await seedOrg();
    const started = await startLogin();
    const owner = await signIn(org.ownerToken);
    expect((await owner.get(`/ui/cli-login/${started.userCode}`)).status).toBe(403);
    expect((await owner.post(`/ui/cli-login/${started.userCode}`)).status).toBe(403);
    expect((await poll(started.deviceCode)).body).toEqual({ status: "pending" });
  });
});
