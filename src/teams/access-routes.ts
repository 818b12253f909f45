/**
 * `/api/v1/workspaces/{workspaceId}/team-access`: which teams hold which access (`read`, `plan`,
 * `write`, `admin`) on a workspace. Its admins set and remove it; whoever sees the workspace may
 * read it.
 */
import { createRoute, z } from "@hono/zod-openapi";
import { ACCESS_LEVELS } from "../authz/model.ts";
import { actorOf } from "../authz/principal.ts";
import { valueOrThrow } from "../errors.ts";
import { requirePerson } from "../middleware/auth.ts";
import { errorResponses, idParam, jsonBody, jsonResponse, newRouter } from "../router.ts";
import { workspaceOf } from "../workspaces/http.ts";
import { WorkspaceRef } from "../workspaces/model.ts";
import { deleteTeamAccess, listTeamAccess, putTeamAccess } from "./access.ts";

const TeamAccess = z
  .object({
    workspaceId: z.string(),
    teamId: z.string(),
    teamName: z.string(),
    access: z.enum(ACCESS_LEVELS),
    updatedAt: z.string(),
  })
  .openapi("TeamAccess");

const WorkspaceParams = z.strictObject({
  workspaceId: WorkspaceRef.openapi({ param: { name: "workspaceId", in: "path" } }),
});
const AccessParams = WorkspaceParams.extend({ teamId: idParam("team", "teamId") });

const tags = ["teams"];
const security = [{ bearer: [] }];

export const teamAccessRoutes = newRouter()
  .openapi(
    createRoute({
      method: "get",
      operationId: "listTeamAccess",
      path: "/{workspaceId}/team-access",
      tags,
      summary: "The teams with access to the workspace and their level",
      security,
      middleware: [requirePerson()] as const,
      request: { params: WorkspaceParams },
      responses: {
        200: jsonResponse(z.object({ teamAccess: z.array(TeamAccess) }), "The team access"),
        ...errorResponses(400, 401, 404),
      },
    }),
    async (c) => {
      const { workspace } = await workspaceOf(
        c,
        c.req.valid("param").workspaceId,
        "workspace.read",
      );
      return c.json({ teamAccess: await listTeamAccess(c.var.db, workspace.id) }, 200);
    },
  )
  .openapi(
    createRoute({
      method: "put",
      operationId: "putTeamAccess",
      path: "/{workspaceId}/team-access/{teamId}",
      tags,
      summary: "Give a team read, plan, write or admin access to the workspace",
      security,
      middleware: [requirePerson()] as const,
      request: {
        params: AccessParams,
        body: jsonBody(z.strictObject({ access: z.enum(ACCESS_LEVELS) }).openapi("PutTeamAccess")),
      },
      responses: {
        200: jsonResponse(TeamAccess, "The team's access"),
        ...errorResponses(400, 401, 403, 404, 413, 415),
      },
    }),
    async (c) => {
      const { workspaceId, teamId } = c.req.valid("param");
      const { principal, workspace } = await workspaceOf(c, workspaceId, "team_access.manage");
      const result = await putTeamAccess(
        c.var.db,
        { orgId: principal.orgId, actor: actorOf(principal), now: c.var.deps.now() },
        { workspace, teamId, access: c.req.valid("json").access },
      );
      return c.json(valueOrThrow(result), 200);
    },
  )
  .openapi(
    createRoute({
      method: "delete",
      operationId: "deleteTeamAccess",
      path: "/{workspaceId}/team-access/{teamId}",
      tags,
      summary: "Take a team's access to the workspace away",
      security,
      middleware: [requirePerson()] as const,
      request: { params: AccessParams },
      responses: {
        200: jsonResponse(TeamAccess, "The access that was removed"),
        ...errorResponses(400, 401, 403, 404),
      },
    }),
    async (c) => {
      const { workspaceId, teamId } = c.req.valid("param");
      const { principal, workspace } = await workspaceOf(c, workspaceId, "team_access.manage");
      const result = await deleteTeamAccess(
        c.var.db,
        { orgId: principal.orgId, actor: actorOf(principal), now: c.var.deps.now() },
        { workspace, teamId },
      );
      return c.json(valueOrThrow(result), 200);
    },
  );
