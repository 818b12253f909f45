/**
 * `/api/v1/variable-sets/{varsetId}/projects/{projectId}` and `…/workspaces/{workspaceId}`:
 * where a set applies (PUT applies it, DELETE stops). Organization admins only. Projects and
 * workspaces are named by id or name.
 */
import { createRoute } from "@hono/zod-openapi";
import { valueOrThrow } from "../errors.ts";
import { requirePermission } from "../middleware/auth.ts";
import { errorResponses, jsonResponse, newRouter } from "../router.ts";
import { linkTargetOf, setOf } from "./http.ts";
import { applySet, unapplySet } from "./links.ts";
import { SetProjectParams, SetWorkspaceParams, VariableSetSchema } from "./schemas.ts";

const tags = ["variable-sets"];
const security = [{ bearer: [] }];
const applyDescription = "Refused (409) for a global set, which reaches every workspace already.";

export const variableSetLinkRoutes = newRouter()
  .openapi(
    createRoute({
      method: "put",
      operationId: "applyVariableSetToProject",
      path: "/{varsetId}/projects/{projectId}",
      tags,
      summary:
        "Apply the set to a project and so to its workspaces; applying twice changes nothing",
      description: applyDescription,
      security,
      middleware: [requirePermission("variable_sets.manage")] as const,
      request: { params: SetProjectParams },
      responses: {
        200: jsonResponse(VariableSetSchema, "The set"),
        ...errorResponses(400, 401, 403, 404, 409),
      },
    }),
    async (c) => {
      const { varsetId, projectId } = c.req.valid("param");
      const { set, ctx } = await setOf(c, varsetId);
      const target = await linkTargetOf(c, "project", projectId);
      return c.json(valueOrThrow(await applySet(c.var.db, ctx, set, target)), 200);
    },
  )
  .openapi(
    createRoute({
      method: "delete",
      operationId: "removeVariableSetFromProject",
      path: "/{varsetId}/projects/{projectId}",
      tags,
      summary: "Stop applying the set to a project",
      security,
      middleware: [requirePermission("variable_sets.manage")] as const,
      request: { params: SetProjectParams },
      responses: {
        200: jsonResponse(VariableSetSchema, "The set"),
        ...errorResponses(400, 401, 403, 404),
      },
    }),
    async (c) => {
      const { varsetId, projectId } = c.req.valid("param");
      const { set, ctx } = await setOf(c, varsetId);
      const target = await linkTargetOf(c, "project", projectId);
      return c.json(valueOrThrow(await unapplySet(c.var.db, ctx, set, target)), 200);
    },
  )
  .openapi(
    createRoute({
      method: "put",
      operationId: "applyVariableSetToWorkspace",
      path: "/{varsetId}/workspaces/{workspaceId}",
      tags,
      summary: "Apply the set to a workspace; applying twice changes nothing",
      description: applyDescription,
      security,
      middleware: [requirePermission("variable_sets.manage")] as const,
      request: { params: SetWorkspaceParams },
      responses: {
        200: jsonResponse(VariableSetSchema, "The set"),
        ...errorResponses(400, 401, 403, 404, 409),
      },
    }),
    async (c) => {
      const { varsetId, workspaceId } = c.req.valid("param");
      const { set, ctx } = await setOf(c, varsetId);
      const target = await linkTargetOf(c, "workspace", workspaceId);
      return c.json(valueOrThrow(await applySet(c.var.db, ctx, set, target)), 200);
    },
  )
  .openapi(
    createRoute({
      method: "delete",
      operationId: "removeVariableSetFromWorkspace",
      path: "/{varsetId}/workspaces/{workspaceId}",
      tags,
      summary: "Stop applying the set to a workspace",
      security,
      middleware: [requirePermission("variable_sets.manage")] as const,
      request: { params: SetWorkspaceParams },
      responses: {
        200: jsonResponse(VariableSetSchema, "The set"),
        ...errorResponses(400, 401, 403, 404),
      },
    }),
    async (c) => {
      const { varsetId, workspaceId } = c.req.valid("param");
      const { set, ctx } = await setOf(c, varsetId);
      const target = await linkTargetOf(c, "workspace", workspaceId);
      return c.json(valueOrThrow(await unapplySet(c.var.db, ctx, set, target)), 200);
    },
  );
