/**
 * Dashboard pages for projects: the list (with each project's workspaces), creating one, and a
 * project's page with its team access and the variable sets that reach it. The same services and
 * the same `may` decisions as `/api/v1/projects…`, checked again on every submit.
 */
import { z } from "@hono/zod-openapi";
import { type Context, Hono } from "hono";
import { authorizeProject } from "../authz/http.ts";
import { ACCESS_LEVELS, decideOrganization, decideProject } from "../authz/model.ts";
import { actorOf } from "../authz/principal.ts";
import { ApiError, valueOrThrow } from "../errors.ts";
import { ProjectDescription, ProjectName } from "../projects/model.ts";
import { createProject, listProjects, resolveProject, showProject } from "../projects/service.ts";
import {
  deleteProjectTeamAccess,
  listProjectTeamAccess,
  putProjectTeamAccess,
} from "../projects/team-access.ts";
import { listTeams } from "../teams/service.ts";
import { setsForProject } from "../varsets/queries.ts";
import { listWorkspaces } from "../workspaces/service.ts";
import { idOf, noticeText, readForm, redirectWithNotice, viewerOf } from "./forms.ts";
import { ProjectPage, ProjectsPage } from "./pages/projects.tsx";
import type { UiEnv } from "./session.ts";

const NOTICES = {
  "team-access-saved": "Team access saved; it counts on every workspace of the project.",
  "team-access-removed": "Team access removed.",
};

const ctxOf = (c: Context<UiEnv>) => ({
  orgId: c.var.session.orgId,
  actor: actorOf(c.var.session.principal),
  now: c.var.deps.now(),
});

/** The project of the page once `may` allowed `action` on it (404 / 403 as in the API). */
async function projectOf(c: Context<UiEnv>, action: Parameters<typeof decideProject>[1]) {
  // By id or by name, as the API's project paths.
  const id = c.req.param("projectId") ?? "";
  const { principal } = c.var.session;
  const project = await resolveProject(c.var.db, principal.orgId, id);
  if (!project) {
    throw new ApiError("NOT_FOUND", `project ${id} not found`);
  }
  const grants = await authorizeProject(c.var.db, principal, action, project);
  return { project, grants };
}

/** The projects the viewer sees, each with the workspaces of it the viewer sees. */
async function renderList(c: Context<UiEnv>, error?: { message: string; status: 409 | 400 }) {
  const { principal } = c.var.session;
  const [projects, workspaces] = await Promise.all([
    listProjects(c.var.db, principal, { limit: 200 }),
    listWorkspaces(c.var.db, principal, { limit: 200 }),
  ]);
  const rows = projects.map(({ project }) => ({
    project,
    workspaces: workspaces
      .filter((w) => w.row.projectId === project.id)
      .map((w) => ({ id: w.workspace.id, name: w.workspace.name })),
  }));
  return c.html(
    <ProjectsPage
      viewer={viewerOf(c)}
      projects={rows}
      mayCreate={decideOrganization(principal.role, "projects.create") === "allow"}
      error={error?.message}
    />,
    error?.status ?? 200,
  );
}

export const projectPages = new Hono<UiEnv>()
  .get("/", (c) => renderList(c))
  .post("/", async (c) => {
    const form = await readForm(
      c,
      z.strictObject({ name: ProjectName, description: ProjectDescription.default("") }),
    );
    const { principal } = c.var.session;
    if (decideOrganization(principal.role, "projects.create") !== "allow") {
      throw new ApiError("FORBIDDEN", "creating a project needs the admin role");
    }
    const result = await createProject(c.var.db, ctxOf(c), form);
    if (!result.ok) {
      return renderList(c, { message: `${result.reason.message}.`, status: 409 });
    }
    return c.redirect(`/ui/projects/${result.value.id}`, 303);
  })
  .get("/:projectId", async (c) => {
    const { project, grants } = await projectOf(c, "project.read");
    const { principal, orgId } = c.var.session;
    const seesSets = decideOrganization(principal.role, "variable_sets.read") === "allow";
    const [shown, workspaces, teamAccess, teams, sets] = await Promise.all([
      showProject(c.var.db, project),
      listWorkspaces(c.var.db, principal, { limit: 200, projectId: project.id }),
      listProjectTeamAccess(c.var.db, project.id),
      listTeams(c.var.db, orgId),
      seesSets ? setsForProject(c.var.db, orgId, project.id) : [],
    ]);
    return c.html(
      <ProjectPage
        viewer={viewerOf(c)}
        project={shown}
        workspaces={workspaces.map((w) => ({ id: w.workspace.id, name: w.workspace.name }))}
        teamAccess={teamAccess}
        teams={teams}
        mayManageAccess={decideProject(grants, "project.team_access.manage") === "allow"}
        variableSets={sets}
        notice={noticeText(c, NOTICES)}
      />,
    );
  })
  .post("/:projectId/team-access", async (c) => {
    // The form (CSRF, fields) first: a bad body is 400 whatever the ids.
    const form = await readForm(
      c,
      z.strictObject({
        teamId: z.string().regex(/^team_[a-z2-7]{26}$/, "pick a team"),
        access: z.enum(ACCESS_LEVELS),
      }),
    );
    const { project } = await projectOf(c, "project.team_access.manage");
    const result = await putProjectTeamAccess(c.var.db, ctxOf(c), {
      project,
      teamId: form.teamId,
      access: form.access,
    });
    valueOrThrow(result);
    return redirectWithNotice(c, `/ui/projects/${project.id}`, "team-access-saved");
  })
  .post("/:projectId/team-access/:teamId/delete", async (c) => {
    await readForm(c, z.strictObject({}));
    const { project } = await projectOf(c, "project.team_access.manage");
    const teamId = idOf(c, "teamId", "team");
    const result = await deleteProjectTeamAccess(c.var.db, ctxOf(c), { project, teamId });
    if (!result.ok) {
      throw new ApiError("NOT_FOUND", "that team has no access to this project");
    }
    return redirectWithNotice(c, `/ui/projects/${project.id}`, "team-access-removed");
  });
