/**
 * Projects through the real routes: create, read by id or name, rename, delete (409 while it
 * holds workspaces, saying how many; never the default project); workspaces created into a
 * project (the default one when none is named), moved with PATCH, listed by project; and the
 * migration that puts existing workspaces into "Default Project".
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { type ErrorBody, requestJson } from "./helpers/api.ts";
import { describeAuth } from "./helpers/auth-matrix.ts";
import { snapshotD1 } from "./helpers/d1-snapshot.ts";
import { seedOrg, type TestOrg } from "./helpers/fixtures.ts";
import { createProject, type ProjectBody } from "./helpers/projects.ts";
import { createWorkspace, type WorkspaceBody } from "./helpers/workspaces.ts";

type ProjectList = { projects: ProjectBody[]; nextCursor: string | null };

const api = <T = ProjectBody & ErrorBody>(
  org: TestOrg,
  method: string,
  path: string,
  body?: unknown,
  token = org.tokens.admin,
) => requestJson<T>(path, { method, token, body });

async function defaultProjectOf(org: TestOrg): Promise<ProjectBody> {
  const list = await api<ProjectList>(org, "GET", "/api/v1/projects");
  const found = list.body.projects.find((p) => p.isDefault);
  if (!found) {
    throw new Error("the organization has no default project");
  }
  return found;
}

describe("projects", () => {
  it("every organization starts with its default project, where new workspaces go", async () => {
    const org = await seedOrg();
    const list = await api<ProjectList>(
      org,
      "GET",
      "/api/v1/projects",
      undefined,
      org.tokens.reader,
    );
    expect(list.status).toBe(200);
    expect(list.body.projects).toEqual([
      expect.objectContaining({ name: "Default Project", isDefault: true, workspaceCount: 0 }),
    ]);
    const ws = await createWorkspace(org);
    expect(ws.projectId).toBe(list.body.projects[0]?.id);
    expect((await defaultProjectOf(org)).workspaceCount).toBe(1);
  });

  it("creates, reads by id and by name, renames and deletes an empty project", async () => {
    const org = await seedOrg();
    const created = await api(org, "POST", "/api/v1/projects", {
      name: "networking",
      description: "the three networks",
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      id: expect.stringMatching(/^prj_[a-z2-7]{26}$/),
      name: "networking",
      description: "the three networks",
      isDefault: false,
      workspaceCount: 0,
    });
    const byName = await api(
      org,
      "GET",
      "/api/v1/projects/networking",
      undefined,
      org.tokens.reader,
    );
    expect(byName.body).toEqual(created.body);
    const spaced = await api(org, "POST", "/api/v1/projects", { name: "Platform Team" });
    expect(spaced.status).toBe(201);
    const bySpacedName = await api(org, "GET", "/api/v1/projects/Platform%20Team");
    expect(bySpacedName.body.id).toBe(spaced.body.id);

    const renamed = await api(org, "PATCH", `/api/v1/projects/${created.body.id}`, {
      name: "network",
    });
    expect(renamed.status).toBe(200);
    expect(renamed.body.name).toBe("network");
    const deleted = await api(org, "DELETE", "/api/v1/projects/network");
    expect(deleted.status).toBe(200);
    expect((await api(org, "GET", `/api/v1/projects/${created.body.id}`)).status).toBe(404);
  });

  it("refuses bad input (400), a taken name (409) and changes nothing", async () => {
    const org = await seedOrg();
    await createProject(org, "apps");
    const before = await snapshotD1();
    for (const body of [
      {},
      { name: "" },
      { name: "prj_looks_like_an_id" },
      { name: "trailing " },
      { name: "a/b" },
      { name: "x".repeat(91) },
      { name: "ok", extra: true },
    ]) {
      const res = await api(org, "POST", "/api/v1/projects", body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error.code).toBe("BAD_REQUEST");
    }
    const taken = await api(org, "POST", "/api/v1/projects", { name: "apps" });
    expect(taken.status).toBe(409);
    expect(taken.body.error.message).toBe("a project named apps exists");
    const emptyPatch = await api(org, "PATCH", "/api/v1/projects/apps", {});
    expect(emptyPatch.status).toBe(400);
    expect(await snapshotD1()).toEqual(before);
  });

  it("refuses to delete a project holding workspaces (409 with how many) or the default one", async () => {
    const org = await seedOrg();
    const project = await createProject(org, "busy");
    await createWorkspace(org, { projectId: "busy" });
    await createWorkspace(org, { projectId: project.id });
    const before = await snapshotD1();
    const refused = await api(org, "DELETE", "/api/v1/projects/busy");
    expect(refused.status).toBe(409);
    expect(refused.body.error.message).toBe(
      "project busy still holds 2 workspaces; move them to another project or delete them first",
    );
    const defaultProject = await defaultProjectOf(org);
    const refusedDefault = await api(org, "DELETE", `/api/v1/projects/${defaultProject.id}`);
    expect(refusedDefault.status).toBe(409);
    expect(refusedDefault.body.error.message).toMatch(/default project.*cannot be deleted/);
    expect(await snapshotD1()).toEqual(before);
  });

  it("moves a workspace between projects with PATCH projectId (by id or name)", async () => {
    const org = await seedOrg();
    const from = await createProject(org, "from");
    const to = await createProject(org, "to");
    const ws = await createWorkspace(org, { projectId: "from" });
    expect(ws.projectId).toBe(from.id);
    const moved = await api<WorkspaceBody>(org, "PATCH", `/api/v1/workspaces/${ws.id}`, {
      projectId: "to",
    });
    expect(moved.status).toBe(200);
    expect(moved.body.projectId).toBe(to.id);
    expect((await api(org, "GET", `/api/v1/projects/${from.id}`)).body.workspaceCount).toBe(0);
    expect((await api(org, "DELETE", "/api/v1/projects/from")).status).toBe(200);
  });

  it("refuses an unknown project on create, move and list filter (400), changing nothing", async () => {
    const org = await seedOrg();
    const other = await seedOrg();
    const foreign = await createProject(other, "theirs");
    const ws = await createWorkspace(org);
    const before = await snapshotD1();
    for (const projectId of ["nope", foreign.id, "theirs"]) {
      const created = await api(org, "POST", "/api/v1/workspaces", { name: "x1", projectId });
      expect(created.status).toBe(400);
      expect(created.body.error.issues?.[0]?.path).toBe("json.projectId");
      const moved = await api(org, "PATCH", `/api/v1/workspaces/${ws.id}`, { projectId });
      expect(moved.status).toBe(400);
      const listed = await api(org, "GET", `/api/v1/workspaces?projectId=${projectId}`);
      expect(listed.status).toBe(400);
      expect(listed.body.error.issues?.[0]?.path).toBe("query.projectId");
    }
    expect(await snapshotD1()).toEqual(before);
  });

  it("lists workspaces by project with ?projectId=", async () => {
    const org = await seedOrg();
    const apps = await createProject(org, "apps2");
    const a = await createWorkspace(org, { projectId: apps.id });
    const b = await createWorkspace(org, { projectId: "apps2" });
    await createWorkspace(org);
    const listed = await api<{ workspaces: WorkspaceBody[] }>(
      org,
      "GET",
      "/api/v1/workspaces?projectId=apps2",
      undefined,
      org.tokens.reader,
    );
    expect(listed.status).toBe(200);
    expect(listed.body.workspaces.map((w) => w.id).sort()).toEqual([a.id, b.id].sort());
  });

  it("the migration puts existing workspaces into a project named Default Project", async () => {
    const org = await seedOrg();
    const ws = await createWorkspace(org);
    // As before the migration: no project for the workspace, none for the organization.
    await env.DB.prepare("UPDATE workspaces SET project_id = NULL WHERE org_id = ?")
      .bind(org.orgId)
      .run();
    await env.DB.prepare("DELETE FROM projects WHERE org_id = ?").bind(org.orgId).run();
    const migration = env.TEST_MIGRATIONS.find((m) => m.name.includes("default_projects"));
    expect(migration).toBeDefined();
    for (const statement of migration?.queries ?? []) {
      await env.DB.prepare(statement).run();
    }
    const project = await env.DB.prepare(
      "SELECT id, name, is_default FROM projects WHERE org_id = ?",
    )
      .bind(org.orgId)
      .all<{ id: string; name: string; is_default: number }>();
    expect(project.results).toEqual([
      { id: expect.stringMatching(/^prj_[a-z2-7]{26}$/), name: "Default Project", is_default: 1 },
    ]);
    const moved = await api<WorkspaceBody>(org, "GET", `/api/v1/workspaces/${ws.id}`);
    expect(moved.body.projectId).toBe(project.results[0]?.id);
    // Running it again changes nothing.
    for (const statement of migration?.queries ?? []) {
      await env.DB.prepare(statement).run();
    }
    const again = await env.DB.prepare("SELECT count(*) AS n FROM projects WHERE org_id = ?")
      .bind(org.orgId)
      .first<{ n: number }>();
    expect(again?.n).toBe(1);
  });
});

describeAuth("POST /api/v1/projects", {
  role: "admin",
  hasOrgIds: false,
  target: () => ({ method: "POST", path: "/api/v1/projects", body: { name: "auth-case" } }),
});

describeAuth("GET /api/v1/projects", {
  role: "reader",
  hasOrgIds: false,
  target: () => ({ method: "GET", path: "/api/v1/projects" }),
});

describeAuth("GET /api/v1/projects/:projectId", {
  role: "reader",
  target: async (org) => {
    const project = await createProject(org);
    return { method: "GET", path: `/api/v1/projects/${project.id}` };
  },
});

describeAuth("PATCH /api/v1/projects/:projectId", {
  role: "admin",
  target: async (org) => {
    const project = await createProject(org);
    return { method: "PATCH", path: `/api/v1/projects/${project.id}`, body: { description: "x" } };
  },
});

describeAuth("DELETE /api/v1/projects/:projectId", {
  role: "admin",
  target: async (org) => {
    const project = await createProject(org);
    return { method: "DELETE", path: `/api/v1/projects/${project.id}` };
  },
});
