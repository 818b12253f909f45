/**
 * The dashboard for people: pages offer only what the viewer may do (no confirm button for plan
 * access; no settings, variables or team access forms below admin/write), the server refuses the
 * rest anyway, workspaces the viewer cannot see are not found, the header names the person, the
 * owner's People page, and team access set from the workspace page.
 */
import { describe, expect, it } from "vitest";
import { seedOrg } from "./helpers/fixtures.ts";
import { personWithAccess, seedTeam, seedUser, sessionCookieOf } from "./helpers/people.ts";
import { seedWorkspace } from "./helpers/state-fixtures.ts";
import { csrfOf, signIn, uiFetch } from "./helpers/ui.ts";
import { seedRun } from "./helpers/workspaces.ts";

async function page(cookie: string, path: string) {
  const res = await uiFetch(path, { cookie });
  return { status: res.status, html: await res.text() };
}

describe("pages by access", () => {
  it("plan access: the run page has no confirm button, and a forged confirm is refused", async () => {
    const org = await seedOrg();
    const id = await seedWorkspace(org);
    const runId = await seedRun(org.orgId, id, "planned");
    const planner = await personWithAccess(org, { id }, "plan");
    const cookie = await sessionCookieOf(org, planner.user);
    const planView = await page(cookie, `/ui/runs/${runId}`);
    expect(planView.status).toBe(200);
    expect(planView.html).not.toContain("Confirm and apply");
    expect(planView.html).toContain("can view runs but not act on them");
    const forged = await uiFetch(`/ui/runs/${runId}/confirm`, {
      cookie,
      form: { _csrf: csrfOf(planView.html) },
    });
    expect(forged.status).toBe(403);
    const writer = await personWithAccess(org, { id }, "write");
    const writeView = await page(await sessionCookieOf(org, writer.user), `/ui/runs/${runId}`);
    expect(writeView.html).toContain("Confirm and apply");
  });

  it("the workspace page shows each form only to the access that may use it", async () => {
    const org = await seedOrg();
    const id = await seedWorkspace(org, { executionMode: "agent" });
    const forms = (html: string) => ({
      queue: html.includes("Queue run"),
      lock: html.includes("Lock workspace"),
      variables: html.includes(`action="/ui/workspaces/${id}/vars"`),
      settings: html.includes(`action="/ui/workspaces/${id}/configure"`),
      teamAccess: html.includes(`action="/ui/workspaces/${id}/team-access"`),
    });
    const expected = {
      read: { queue: false, lock: false, variables: false, settings: false, teamAccess: false },
      plan: { queue: true, lock: false, variables: false, settings: false, teamAccess: false },
      write: { queue: true, lock: true, variables: true, settings: false, teamAccess: false },
      admin: { queue: true, lock: true, variables: true, settings: true, teamAccess: true },
    } as const;
    for (const level of ["read", "plan", "write", "admin"] as const) {
      const { user } = await personWithAccess(org, { id }, level);
      const view = await page(await sessionCookieOf(org, user), `/ui/workspaces/${id}`);
      expect(view.status).toBe(200);
      expect(forms(view.html), level).toEqual(expected[level]);
    }
  });

  it("a workspace the person cannot see is not found and not listed; the header names them", async () => {
    const org = await seedOrg();
    const [seen, hidden] = await Promise.all([seedWorkspace(org), seedWorkspace(org)]);
    const { user } = await personWithAccess(org, { id: seen }, "read");
    const cookie = await sessionCookieOf(org, user);
    const list = await page(cookie, "/ui/workspaces");
    expect(list.html).toContain(seen);
    expect(list.html).not.toContain(hidden);
    expect(list.html).toContain(`${user.email} (no organization role)`);
    expect(list.html).not.toContain('href="/ui/pools"');
    expect((await page(cookie, `/ui/workspaces/${hidden}`)).status).toBe(404);
    expect((await page(cookie, "/ui/pools")).status).toBe(403);
  });
});

describe("the owner's People page", () => {
  it("is for owners: it lists teams and people; an owner creates a team and gives it access", async () => {
    const org = await seedOrg();
    const user = await seedUser(org, { name: "Ada" });
    const team = await seedTeam(org, { groups: ["eng"] });
    const owner = await signIn(org.ownerToken);
    const people = await owner.get("/ui/people");
    expect(people.status).toBe(200);
    const html = await people.text();
    expect(html).toContain(team.name);
    expect(html).toContain(user.email);
    const admin = await signIn(org.tokens.admin);
    expect((await admin.get("/ui/people")).status).toBe(403);
    const created = await owner.post("/ui/people/teams", {
      name: "sre",
      idpGroups: "sre, oncall",
      organizationRole: "",
    });
    expect(created.status).toBe(303);
    const teamUrl = created.headers.get("location") ?? "";
    expect(teamUrl).toMatch(/^\/ui\/people\/teams\/team_\w+/);
    const teamId = teamUrl.split("/")[4]?.split("?")[0] ?? "";
    const id = await seedWorkspace(org);
    const granted = await owner.post(`/ui/workspaces/${id}/team-access`, {
      teamId,
      access: "plan",
    });
    expect(granted.status).toBe(303);
    const ws = await (await owner.get(`/ui/workspaces/${id}`)).text();
    expect(ws).toMatch(/<td>sre<\/td><td>plan<\/td>/);
  });
});
