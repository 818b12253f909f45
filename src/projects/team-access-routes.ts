/**
 * `/api/v1/projects/{projectId}/team-access`: which teams hold which access (`read`, `plan`,
 * `write`, `admin`) on a project, and so on each of its workspaces. The project's admins set and
 * remove it; whoever sees the project may read it.
 */
import { createRoute, z } from "@hono/zod-openapi";
import { ACCESS_LEVELS } from "../authz/model.ts";
import { actorOf } from "../authz/principal.ts";
import { valueOrThrow } from "../errors.ts";
import { requirePerson } from "../middleware/auth.ts";
import { errorResponses, idParam, jsonBody, jsonResponse, newRouter } from "../router.ts";
import { projectOf } from "./http.ts";
import { ProjectParams, ProjectTeamAccessSchema } from "./schemas.ts";
import {
  deleteProjectTeamAccess,
  listProjectTeamAccess,
  putProjectTeamAccess,
} from "./team-access.ts";

const AccessParams = ProjectParams.extend({ teamId: idParam("team", "teamId") });

const tags = ["projects"];
const security = [{ bearer: [] }];

export const projectTeamAccessRoutes = newRouter()
  .openapi(
    createRoute({
      method: "get",
      operationId: "listProjectTeamAccess",
      path: "/{projectId}/team-access",
      tags,
      summary: "The teams with access to the project (and so to its workspaces) and their level",
      security,
      middleware: [requirePerson()] as const,
      request: { params: ProjectParams },
      responses: {
        200: jsonResponse(
          z.object({ teamAccess: z.array(ProjectTeamAccessSchema) }),
          "The team access",
        ),
        ...errorResponses(400, 401, 404),
      },
    }),
    async (c) => {
      const { project } = await projectOf(c, c.req.valid("param").projectId, "project.read");
      return c.json({ teamAccess: await listProjectTeamAccess(c.var.db, project.id) }, 200);
    },
  )
  .openapi(
    createRoute({
      method: "put",
      operationId: "putProjectTeamAccess",
      path: "/{projectId}/team-access/{teamId}",
      tags,
      summary: "Give a team read, plan, write or admin access to the project and its workspaces",
      security,
      middleware: [requirePerson()] as const,
      request: {
        params: AccessParams,
        body: jsonBody(
          z.strictObject({ access: z.enum(ACCESS_LEVELS) }).openapi("PutProjectTeamAccess"),
        ),
      },
      responses: {
        200: jsonResponse(ProjectTeamAccessSchema, "The team's access"),
        ...errorResponses(400, 401, 403, 404, 413, 415),
      },
    }),
    async (c) => {
      const { projectId, teamId } = c.req.valid("param");
      const { principal, project } = await projectOf(c, projectId, "project.team_access.manage");
      const ctx = { orgId: principal.orgId, actor: actorOf(principal), now: c.var.deps.now() };
      const access = c.req.valid("json").access;
      return c.json(
        valueOrThrow(await putProjectTeamAccess(c.var.db, ctx, { project, teamId, access })),
        200,
      );
    },
  )
  .openapi(
    createRoute({
      method: "delete",
      operationId: "deleteProjectTeamAccess",
      path: "/{projectId}/team-access/{teamId}",
      tags,
      summary: "Take a team's access to the project away",
      security,
      middleware: [requirePerson()] as const,
      request: { params: AccessParams },
      responses: {
        200: jsonResponse(ProjectTeamAccessSchema, "The access that was removed"),
        ...errorResponses(400, 401, 403, 404),
      },
    }),
    async (c) => {
      const { projectId, teamId } = c.req.valid("param");
      const { principal, project } = await projectOf(c, projectId, "project.team_access.manage");
      const ctx = { orgId: principal.orgId, actor: actorOf(principal), now: c.var.deps.now() };
      return c.json(
        valueOrThrow(await deleteProjectTeamAccess(c.var.db, ctx, { project, teamId })),
        200,
      );
    },
  );
