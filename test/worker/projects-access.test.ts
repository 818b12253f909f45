/**
 * Project team access: set, listed and removed by the project's admins, audited, and one more
 * input to the same decision as workspace access: a caller's access to a workspace is the
 * highest of its organization role, its teams' access to the workspace's project and to the
 * workspace itself; lists filter in SQL by the same rule.
 */
import { describe, expect, it } from "vitest";
import { type ErrorBody, requestJson } from "./helpers/api.ts";
import { describeAuth, describeProjectAccess } from "./helpers/auth-matrix.ts";
import { snapshotD1 } from "./helpers/d1-snapshot.ts";
import { seedOrg, type TestOrg } from "./helpers/fixtures.ts";
import { grant, grantProject, personWithProjectAccess, seedTeam } from "./helpers/people.ts";
import { createProject } from "./helpers/projects.ts";
import { createWorkspace, type WorkspaceBody } from "./helpers/workspaces.ts";

type Access = { projectId: string; teamId: string; teamName: string; access: string };

const call = <T = Record<string, unknown> & ErrorBody>(
  token: string,
  method: string,
  path: string,
  body?: unknown,
) => requestJson<T>(path, { method, token, body });

async function projectWithWorkspace(org: TestOrg) {
  const project = await createProject(org);
  const workspace = await createWorkspace(org, { projectId: project.id });
  return { project, workspace };
}

describe("project team access routes", () => {
  it("puts, lists and removes a team's access, each change audited", async () => {
    const org = await seedOrg();
    const project = await createProject(org, "core");
    const team = await seedTeam(org, { name: "platform" });
    const path = `/api/v1/projects/core/team-access/${team.teamId}`;
    const put = await call<Access>(org.tokens.admin, "PUT", path, { access: "write" });
    expect(put.status).toBe(200);
    expect(put.body).toMatchObject({
      projectId: project.id,
      teamId: team.teamId,
      teamName: "platform",
      access: "write",
    });
    const again = await call<Access>(org.tokens.admin, "PUT", path, { access: "admin" });
    expect(again.body.access).toBe("admin");
    const listed = await call<{ teamAccess: Access[] }>(
      org.tokens.reader,
      "GET",
      `/api/v1/projects/${project.id}/team-access`,
    );
    expect(listed.body.teamAccess).toEqual([expect.objectContaining({ access: "admin" })]);
    const removed = await call<Access>(org.tokens.admin, "DELETE", path);
    expect(removed.status).toBe(200);
    expect(removed.body.access).toBe("admin");
    expect((await call(org.tokens.admin, "DELETE", path)).status).toBe(404);
    const audit = await call<{ auditEvents: { action: string; data: Record<string, unknown> }[] }>(
      org.tokens.admin,
      "GET",
      `/api/v1/audit-events?targetType=project&targetId=${project.id}`,
    );
    expect(audit.body.auditEvents.map((e) => e.action).sort()).toEqual([
      "project.create",
      "project.team_access.delete",
      "project.team_access.put",
      "project.team_access.put",
    ]);
    const change = audit.body.auditEvents.find(
      (e) => e.action === "project.team_access.put" && e.data.before === "write",
    );
    expect(change?.data).toMatchObject({ teamId: team.teamId, access: "admin" });
  });

  it("refuses a bad level (400) and another organization's team (404), changing nothing", async () => {
    const org = await seedOrg();
    const project = await createProject(org);
    const team = await seedTeam(org);
    const foreign = await seedTeam(await seedOrg());
    const before = await snapshotD1();
    const base = `/api/v1/projects/${project.id}/team-access`;
    for (const body of [{ access: "owner" }, {}, { access: "read", extra: 1 }]) {
      const res = await call(org.tokens.admin, "PUT", `${base}/${team.teamId}`, body);
      expect(res.status).toBe(400);
    }
    expect(
      (await call(org.tokens.admin, "PUT", `${base}/not-a-team`, { access: "read" })).status,
    ).toBe(400);
    const foreignTeam = await call(org.tokens.admin, "PUT", `${base}/${foreign.teamId}`, {
      access: "read",
    });
    expect(foreignTeam.status).toBe(404);
    expect(await snapshotD1()).toEqual(before);
  });
});

describe("project access counts on every workspace of the project", () => {
  it("a team's project access reaches its workspaces, and only while they are in it", async () => {
    const org = await seedOrg();
    const { project, workspace } = await projectWithWorkspace(org);
    const { user, team } = await personWithProjectAccess(org, project, "write");
    for (const token of [user.token, team.token]) {
      expect((await call(token, "GET", `/api/v1/workspaces/${workspace.id}`)).status).toBe(200);
      // write: lock and unlock, but not change settings.
      const locked = await call(token, "POST", `/api/v1/workspaces/${workspace.id}/lock`, {
        reason: "maintenance",
      });
      expect(locked.status).toBe(200);
      expect((await call(token, "POST", `/api/v1/workspaces/${workspace.id}/unlock`)).status).toBe(
        200,
      );
      const patch = await call(token, "PATCH", `/api/v1/workspaces/${workspace.id}`, {
        description: "x",
      });
      expect(patch.status).toBe(403);
      expect(patch.body.error.message).toMatch(/you need admin access/);
    }
    // Moved to another project, the workspace is out of the team's reach.
    await createProject(org, "elsewhere");
    const moved = await call(org.tokens.admin, "PATCH", `/api/v1/workspaces/${workspace.id}`, {
      projectId: "elsewhere",
    });
    expect(moved.status).toBe(200);
    expect((await call(user.token, "GET", `/api/v1/workspaces/${workspace.id}`)).status).toBe(404);
  });

  it("the highest of organization role, project access and workspace access wins", async () => {
    const org = await seedOrg();
    const { project, workspace } = await projectWithWorkspace(org);
    const settings = (token: string) =>
      call(token, "PATCH", `/api/v1/workspaces/${workspace.id}`, { description: "changed" });
    // Project read, workspace admin: admin.
    const a = await personWithProjectAccess(org, project, "read");
    await grant(org, workspace, a.team, "admin");
    expect((await settings(a.user.token)).status).toBe(200);
    // Project admin, workspace read: admin.
    const b = await personWithProjectAccess(org, project, "admin");
    await grant(org, workspace, b.team, "read");
    expect((await settings(b.team.token)).status).toBe(200);
    // Project plan, workspace read: plan (queue runs, not lock).
    const c = await personWithProjectAccess(org, project, "plan");
    await grant(org, workspace, c.team, "read");
    const lock = await call(c.user.token, "POST", `/api/v1/workspaces/${workspace.id}/lock`, {
      reason: "x",
    });
    expect(lock.status).toBe(403);
    // A team with project read and an organization member role: write (the role) wins.
    const d = await personWithProjectAccess(org, project, "read");
    const member = await seedTeam(org, { role: "member" });
    const lockedByRole = await call(
      member.token,
      "POST",
      `/api/v1/workspaces/${workspace.id}/lock`,
      {
        reason: "role",
      },
    );
    expect(lockedByRole.status).toBe(200);
    expect((await settings(d.user.token)).status).toBe(403);
  });

  it("lists keep to what the caller's project access reaches, filtered in the query", async () => {
    const org = await seedOrg();
    const { project, workspace } = await projectWithWorkspace(org);
    const other = await projectWithWorkspace(org);
    const { user, team } = await personWithProjectAccess(org, project, "read");
    for (const token of [user.token, team.token]) {
      const workspaces = await call<{ workspaces: WorkspaceBody[] }>(
        token,
        "GET",
        "/api/v1/workspaces",
      );
      expect(workspaces.body.workspaces.map((w) => w.id)).toEqual([workspace.id]);
      const projects = await call<{ projects: { id: string }[] }>(token, "GET", "/api/v1/projects");
      expect(projects.body.projects.map((p) => p.id)).toEqual([project.id]);
      expect((await call(token, "GET", `/api/v1/projects/${other.project.id}`)).status).toBe(404);
      expect((await call(token, "GET", `/api/v1/workspaces/${other.workspace.id}`)).status).toBe(
        404,
      );
    }
    await grantProject(org, other.project, team, "read");
    const both = await call<{ workspaces: WorkspaceBody[] }>(
      user.token,
      "GET",
      "/api/v1/workspaces",
    );
    expect(both.body.workspaces).toHaveLength(2);
  });

  it("moving a workspace into a project needs admin access to that project too", async () => {
    const org = await seedOrg();
    const { workspace } = await projectWithWorkspace(org);
    const target = await createProject(org);
    const { user, team } = await personWithProjectAccess(org, target, "write");
    await grant(org, workspace, team, "admin");
    const before = await snapshotD1();
    const refused = await call(user.token, "PATCH", `/api/v1/workspaces/${workspace.id}`, {
      projectId: target.id,
    });
    expect(refused.status).toBe(403);
    expect(refused.body.error.message).toBe(
      `to move workspaces into it on project ${target.name} you need admin access to it or the admin role`,
    );
    expect(await snapshotD1()).toEqual(before);
    await grantProject(org, target, team, "admin");
    const moved = await call<WorkspaceBody>(
      user.token,
      "PATCH",
      `/api/v1/workspaces/${workspace.id}`,
      {
        projectId: target.id,
      },
    );
    expect(moved.status).toBe(200);
    expect(moved.body.projectId).toBe(target.id);
  });
});

describeAuth("GET /api/v1/projects/:projectId/team-access", {
  role: "reader",
  target: async (org) => {
    const project = await createProject(org);
    return { method: "GET", path: `/api/v1/projects/${project.id}/team-access` };
  },
});

describeAuth("PUT /api/v1/projects/:projectId/team-access/:teamId", {
  role: "admin",
  target: async (org) => {
    const [project, team] = await Promise.all([createProject(org), seedTeam(org)]);
    return {
      method: "PUT",
      path: `/api/v1/projects/${project.id}/team-access/${team.teamId}`,
      body: { access: "read" },
    };
  },
});

describeAuth("DELETE /api/v1/projects/:projectId/team-access/:teamId", {
  role: "admin",
  target: async (org) => {
    const [project, team] = await Promise.all([createProject(org), seedTeam(org)]);
    await grantProject(org, project, team, "read");
    return { method: "DELETE", path: `/api/v1/projects/${project.id}/team-access/${team.teamId}` };
  },
});

describeProjectAccess("GET /api/v1/projects/:projectId", {
  level: "read",
  allowedStatus: 200,
  target: async (org) => {
    const project = await createProject(org);
    return { projectId: project.id, method: "GET", path: `/api/v1/projects/${project.id}` };
  },
});

describeProjectAccess("GET /api/v1/projects/:projectId/team-access", {
  level: "read",
  allowedStatus: 200,
  target: async (org) => {
    const project = await createProject(org);
    return {
      projectId: project.id,
      method: "GET",
      path: `/api/v1/projects/${project.id}/team-access`,
    };
  },
});

describeProjectAccess("PATCH /api/v1/projects/:projectId", {
  level: "admin",
  allowedStatus: 200,
  target: async (org) => {
    const project = await createProject(org);
    return {
      projectId: project.id,
      method: "PATCH",
      path: `/api/v1/projects/${project.id}`,
      body: { description: "by a team" },
    };
  },
});

describeProjectAccess("DELETE /api/v1/projects/:projectId", {
  level: "admin",
  allowedStatus: 200,
  target: async (org) => {
    const project = await createProject(org);
    return { projectId: project.id, method: "DELETE", path: `/api/v1/projects/${project.id}` };
  },
});

describeProjectAccess("PUT /api/v1/projects/:projectId/team-access/:teamId", {
  level: "admin",
  allowedStatus: 200,
  target: async (org) => {
    const [project, team] = await Promise.all([createProject(org), seedTeam(org)]);
    return {
      projectId: project.id,
      method: "PUT",
      path: `/api/v1/projects/${project.id}/team-access/${team.teamId}`,
      body: { access: "plan" },
    };
  },
});

describeProjectAccess("DELETE /api/v1/projects/:projectId/team-access/:teamId", {
  level: "admin",
  allowedStatus: 200,
  target: async (org) => {
    const [project, team] = await Promise.all([createProject(org), seedTeam(org)]);
    await grantProject(org, project, team, "read");
    return {
      projectId: project.id,
      method: "DELETE",
      path: `/api/v1/projects/${project.id}/team-access/${team.teamId}`,
    };
  },
});
