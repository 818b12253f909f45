/**
 * `/api/v1/variable-sets`: variables shared by many workspaces. Organization admins create,
 * change, delete and apply them; readers and up read them. `{varsetId}` in a path is the set's
 * `varset_…` id or its name. Its variables are `variable-routes.ts`'s.
 */
import { createRoute, z } from "@hono/zod-openapi";
import { actorOf } from "../authz/principal.ts";
import { valueOrThrow } from "../errors.ts";
import { decodeCursor, PageQuery, takePage } from "../lib/paging.ts";
import { personOf, requirePermission } from "../middleware/auth.ts";
import { errorResponses, jsonBody, jsonResponse, newRouter } from "../router.ts";
import { setOf } from "./http.ts";
import { variableSetLinkRoutes } from "./link-routes.ts";
import { CreateVariableSet, SetParams, UpdateVariableSet, VariableSetSchema } from "./schemas.ts";
import {
  createVariableSet,
  deleteVariableSet,
  listVariableSets,
  showVariableSet,
  updateVariableSet,
} from "./service.ts";

const tags = ["variable-sets"];
const security = [{ bearer: [] }];

export const variableSetRoutes = newRouter()
  .openapi(
    createRoute({
      method: "post",
      operationId: "createVariableSet",
      path: "/",
      tags,
      summary: "Create a variable set (empty; add variables, then apply it)",
      security,
      middleware: [requirePermission("variable_sets.manage")] as const,
      request: { body: jsonBody(CreateVariableSet) },
      responses: {
        201: jsonResponse(VariableSetSchema, "The set"),
        ...errorResponses(400, 401, 403, 409, 413, 415),
      },
    }),
    async (c) => {
      const principal = personOf(c);
      const ctx = { orgId: principal.orgId, actor: actorOf(principal), now: c.var.deps.now() };
      const set = valueOrThrow(await createVariableSet(c.var.db, ctx, c.req.valid("json")));
      return c.json(set, 201);
    },
  )
  .openapi(
    createRoute({
      method: "get",
      operationId: "listVariableSets",
      path: "/",
      tags,
      summary: "List the organization's variable sets by name, a page at a time",
      security,
      middleware: [requirePermission("variable_sets.read")] as const,
      request: { query: PageQuery },
      responses: {
        200: jsonResponse(
          z.object({ variableSets: z.array(VariableSetSchema), nextCursor: z.string().nullable() }),
          "A page of variable sets; pass nextCursor as cursor for the next",
        ),
        ...errorResponses(400, 401, 403),
      },
    }),
    async (c) => {
      const { limit, cursor } = c.req.valid("query");
      const after =
        cursor === undefined ? undefined : valueOrThrow(decodeCursor(cursor, ["string"]))[0];
      const rows = await listVariableSets(c.var.db, personOf(c).orgId, { limit, after });
      const page = takePage(rows, limit, (r) => [r.row.name]);
      return c.json(
        { variableSets: page.items.map((r) => r.set), nextCursor: page.nextCursor },
        200,
      );
    },
  )
  .openapi(
    createRoute({
      method: "get",
      operationId: "getVariableSet",
      path: "/{varsetId}",
      tags,
      summary: "Get a variable set by id or name, with where it is applied",
      security,
      middleware: [requirePermission("variable_sets.read")] as const,
      request: { params: SetParams },
      responses: {
        200: jsonResponse(VariableSetSchema, "The set"),
        ...errorResponses(400, 401, 403, 404),
      },
    }),
    async (c) => {
      const { set } = await setOf(c, c.req.valid("param").varsetId);
      return c.json(await showVariableSet(c.var.db, set), 200);
    },
  )
  .openapi(
    createRoute({
      method: "patch",
      operationId: "updateVariableSet",
      path: "/{varsetId}",
      tags,
      summary: "Change a variable set's name, description, global or priority",
      description:
        "Making a set global drops its project and workspace links; refused (409) when another global set holds one of its variables.",
      security,
      middleware: [requirePermission("variable_sets.manage")] as const,
      request: { params: SetParams, body: jsonBody(UpdateVariableSet) },
      responses: {
        200: jsonResponse(VariableSetSchema, "The set"),
        ...errorResponses(400, 401, 403, 404, 409, 413, 415),
      },
    }),
    async (c) => {
      const { set, ctx } = await setOf(c, c.req.valid("param").varsetId);
      const updated = await updateVariableSet(c.var.db, ctx, set, c.req.valid("json"));
      return c.json(valueOrThrow(updated), 200);
    },
  )
  .openapi(
    createRoute({
      method: "delete",
      operationId: "deleteVariableSet",
      path: "/{varsetId}",
      tags,
      summary:
        "Delete a variable set with its variables; the workspaces it reached stop getting them",
      security,
      middleware: [requirePermission("variable_sets.manage")] as const,
      request: { params: SetParams },
      responses: {
        200: jsonResponse(VariableSetSchema, "The deleted set"),
        ...errorResponses(400, 401, 403, 404),
      },
    }),
    async (c) => {
      const { set, ctx } = await setOf(c, c.req.valid("param").varsetId);
      return c.json(await deleteVariableSet(c.var.db, ctx, set), 200);
    },
  )
  .route("/", variableSetLinkRoutes);
