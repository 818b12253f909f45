/**
 * The dashboard's projects, variable sets, effective variables and pool scope, through the real
 * pages and forms: what each page shows, what each form changes, and that the pages refuse what
 * the API refuses (roles, another organization's ids, bad input with nothing changed).
 */
import { describe, expect, it } from "vitest";
import { requestJson } from "./helpers/api.ts";
import { seedOrg } from "./helpers/fixtures.ts";
import { personWithProjectAccess, seedTeam, sessionCookieOf } from "./helpers/people.ts";
import {
  applySet,
  createProject,
  createVariableSet,
  putSetVariable,
  type VariableSetBody,
} from "./helpers/projects.ts";
import { queueRun, runnableWorkspace } from "./helpers/runs.ts";
import { csrfOf, signIn, uiFetch } from "./helpers/ui.ts";
import { createWorkspace } from "./helpers/workspaces.ts";

async function setById(token: string, id: string) {
  return requestJson<VariableSetBody>(`/api/v1/variable-sets/${id}`, { token });
}

describe("projects pages", () => {
  it("lists projects with their workspaces; admins create one, readers may not", async () => {
    const org = await seedOrg();
    const project = await createProject(org, "network-a");
    const ws = await createWorkspace(org, { name: "app-a", projectId: project.id });
    const reader = await signIn(org.tokens.reader);
    const list = await (await reader.get("/ui/projects")).text();
    expect(list).toContain("Default Project");
    expect(list).toMatch(/network-a<\/a>[\s\S]*?app-a<\/a>/);
    expect(list).not.toContain("New project");
    expect((await reader.post("/ui/projects", { name: "nope" })).status).toBe(403);

    const admin = await signIn(org.tokens.admin);
    const bad = await admin.post("/ui/projects", { name: "prj_bad" });
    expect(bad.status).toBe(400);
    const created = await admin.post("/ui/projects", { name: "network-b", description: "dc2" });
    expect(created.status).toBe(303);
    const location = created.headers.get("location") ?? "";
    expect(location).toMatch(/^\/ui\/projects\/prj_[a-z2-7]{26}$/);
    expect(await (await admin.get(location)).text()).toContain("dc2");
    expect((await admin.post("/ui/projects", { name: "network-b" })).status).toBe(409);

    const page = await (await reader.get(`/ui/projects/${project.id}`)).text();
    expect(page).toContain(`/ui/workspaces/${ws.id}`);
  });

  it("shows team access and the sets that reach it; a project admin manages the access", async () => {
    const org = await seedOrg();
    const project = await createProject(org);
    const set = await createVariableSet(org, { name: "network-creds" });
    await applySet(org, set.id, { projectId: project.id });
    await createVariableSet(org, { name: "everywhere", global: true });
    const team = await seedTeam(org);
    const { user } = await personWithProjectAccess(org, project, "admin");
    const cookie = await sessionCookieOf(org, user);
    const page = await (await uiFetch(`/ui/projects/${project.id}`, { cookie })).text();
    // A person without an organization role does not read variable sets.
    expect(page).not.toContain("network-creds");
    const csrf = csrfOf(page);
    const granted = await uiFetch(`/ui/projects/${project.id}/team-access`, {
      cookie,
      form: { _csrf: csrf, teamId: team.teamId, access: "write" },
    });
    expect(granted.status).toBe(303);

    const admin = await signIn(org.tokens.admin);
    const shown = await (await admin.get(`/ui/projects/${project.id}`)).text();
    expect(shown).toMatch(/network-creds<\/a>\s*\(applied to this project\)/);
    expect(shown).toMatch(/everywhere<\/a>\s*\(global\)/);
    expect(shown).toMatch(new RegExp(`<td>${team.name}</td>\\s*<td>write</td>`));

    const { user: reader } = await personWithProjectAccess(org, project, "read");
    const readerCookie = await sessionCookieOf(org, reader);
    const readerPage = await (
      await uiFetch(`/ui/projects/${project.id}`, { cookie: readerCookie })
    ).text();
    expect(readerPage).not.toContain("Give a team access");
    const refused = await uiFetch(`/ui/projects/${project.id}/team-access`, {
      cookie: readerCookie,
      form: { _csrf: csrfOf(readerPage), teamId: team.teamId, access: "admin" },
    });
    expect(refused.status).toBe(403);
  });

  it("answers 404 for another organization's project, and for one the viewer cannot see", async () => {
    const [org, other] = await Promise.all([seedOrg(), seedOrg()]);
    const theirs = await createProject(other);
    const admin = await signIn(org.tokens.admin);
    expect((await admin.get(`/ui/projects/${theirs.id}`)).status).toBe(404);
    const team = await seedTeam(org);
    const form = { teamId: team.teamId, access: "read" };
    expect((await admin.post(`/ui/projects/${theirs.id}/team-access`, form)).status).toBe(404);
    const mine = await createProject(org);
    const { user } = await personWithProjectAccess(org, mine, null);
    const cookie = await sessionCookieOf(org, user);
    expect((await uiFetch(`/ui/projects/${mine.id}`, { cookie })).status).toBe(404);
  });
});

describe("variable set editor", () => {
  it("creates a set, adds variables (sensitive ones write-only) and applies it", async () => {
    const org = await seedOrg();
    const project = await createProject(org, "net");
    const ws = await createWorkspace(org, { name: "app", projectId: project.id });
    const admin = await signIn(org.tokens.admin);
    const created = await admin.post("/ui/variable-sets", {
      name: "cloud-creds",
      description: "shared",
      priority: "on",
    });
    expect(created.status).toBe(303);
    const path = created.headers.get("location") ?? "";
    const id = path.split("/").pop() ?? "";
    expect(id).toMatch(/^varset_/);

    const saved = await admin.post(`${path}/vars`, {
      key: "CLOUD_TOKEN",
      value: "s3cr3t-cloud-token",
      category: "env",
      sensitive: "on",
    });
    expect(saved.status).toBe(303);
    await admin.post(`${path}/vars`, {
      key: "region",
      value: "eu-1",
      category: "terraform",
      description: "where the network lives",
    });
    const applied = await admin.post(`${path}/apply`, { target: `project:${project.id}` });
    expect(applied.status).toBe(303);

    const page = await (await admin.get(path)).text();
    expect(page).toContain("CLOUD_TOKEN");
    expect(page).not.toContain("s3cr3t-cloud-token");
    expect(page).toContain("<td>where the network lives</td>");
    expect(page).toMatch(/project net<\/a>/);
    const body = (await setById(org.tokens.admin, id)).body;
    expect(body).toMatchObject({ priority: true, variableCount: 2, projects: [{ name: "net" }] });

    await admin.post(`/ui/workspaces/${ws.id}/vars`, {
      key: "region",
      value: "own",
      category: "terraform",
    });
    const wsPage = await (await admin.get(`/ui/workspaces/${ws.id}`)).text();
    const effective = wsPage.slice(wsPage.indexOf('id="effective-heading"'));
    expect(effective).toMatch(/region<\/td>\s*<td>terraform<\/td>\s*<td class="mono">eu-1<\/td>/);
    expect(effective).toContain("priority set <a");
    expect(effective).toContain("cloud-creds</a> (through the project)");
    expect(effective).not.toContain("s3cr3t-cloud-token");

    const unapplied = await admin.post(`${path}/unapply/project/${project.id}`);
    expect(unapplied.status).toBe(303);
    const deleted = await admin.post(`${path}/vars/env/CLOUD_TOKEN/delete`);
    expect(deleted.status).toBe(303);
    expect((await setById(org.tokens.admin, id)).body).toMatchObject({
      variableCount: 1,
      projects: [],
    });
  });

  it("refuses roles below admin, bad input and another organization's sets, changing nothing", async () => {
    const [org, other] = await Promise.all([seedOrg(), seedOrg()]);
    const set = await createVariableSet(org, { name: "mine" });
    await putSetVariable(org, set.id, "region", { value: "eu-1", category: "terraform" });
    const theirs = await createVariableSet(other);
    const path = `/ui/variable-sets/${set.id}`;

    const member = await signIn(org.tokens.member);
    expect((await member.get(path)).status).toBe(200);
    expect(await (await member.get(path)).text()).not.toContain("Save variable");
    const memberTries = [
      member.post("/ui/variable-sets", { name: "x" }),
      member.post(`${path}/vars`, { key: "region", value: "x", category: "terraform" }),
      member.post(`${path}/settings`, { global: "on" }),
      member.post(`${path}/delete`),
    ];
    for (const res of await Promise.all(memberTries)) {
      expect(res.status).toBe(403);
    }

    const admin = await signIn(org.tokens.admin);
    expect((await admin.post(`${path}/vars`, { key: "", category: "terraform" })).status).toBe(400);
    expect((await admin.post(`${path}/apply`, { target: "pool:x" })).status).toBe(400);
    expect(
      (await admin.post(`${path}/vars`, { key: "x", value: "", category: "other" })).status,
    ).toBe(400);
    expect((await admin.get(`/ui/variable-sets/${theirs.id}`)).status).toBe(404);
    expect((await admin.post(`/ui/variable-sets/${theirs.id}/delete`)).status).toBe(404);
    const theirProject = await createProject(other);
    expect(
      (await admin.post(`${path}/apply`, { target: `project:${theirProject.id}` })).status,
    ).toBe(404);
    expect((await setById(org.tokens.admin, set.id)).body).toMatchObject({
      name: "mine",
      global: false,
      variableCount: 1,
      projects: [],
    });
  });
});

describe("pool scope on the dashboard", () => {
  it("shows the scope, lets an owner narrow it, and the workspace page says it is not allowed", async () => {
    const org = await seedOrg();
    const runnable = await runnableWorkspace(org, { name: "app-staging" });
    const other = await createWorkspace(org, { name: "app-prod" });
    const run = await queueRun(org, runnable.workspace.id);
    const owner = await signIn(org.ownerToken);
    const path = `/ui/pools/${runnable.poolId}`;
    expect(await (await owner.get(path)).text()).toContain("Every workspace of the organization.");

    const admin = await signIn(org.tokens.admin);
    expect((await admin.post(`${path}/scope`, { workspaces: "app-prod" })).status).toBe(403);
    expect((await owner.post(`${path}/scope`, { workspaces: "no-such-ws" })).status).toBe(400);
    expect(await (await owner.get(path)).text()).toContain("Every workspace of the organization.");

    const narrowed = await owner.post(`${path}/scope`, { workspaces: "app-prod\n", projects: "" });
    expect(narrowed.status).toBe(303);
    const page = await (await owner.get(path)).text();
    expect(page).toMatch(/Only the workspaces of the projects\s*<strong>\(none\)<\/strong>/);
    expect(page).toContain(`<strong>${other.name}</strong>`);
    expect(page).toContain("app-staging</a><strong> (not allowed by the scope)</strong>");

    const wsPage = await (await owner.get(`/ui/workspaces/${runnable.workspace.id}`)).text();
    expect(wsPage).toMatch(/pool [^ ]+ does not allow workspace app-staging/);
    const errored = await requestJson<{ status: string; statusReason: string }>(
      `/api/v1/runs/${run.body.id}`,
      { token: org.tokens.reader },
    );
    expect(errored.body).toMatchObject({ status: "errored" });
    expect(errored.body.statusReason).toMatch(/does not allow workspace app-staging/);
  });
});
