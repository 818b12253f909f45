/**
 * `/api/v1/variable-sets/{varsetId}/vars`: a set's variables, with the same shape, categories and
 * write-only sensitive values as a workspace's (the same service writes both). Organization
 * admins write; readers and up read.
 */
import { createRoute, z } from "@hono/zod-openapi";
import { actorOf } from "../authz/principal.ts";
import { ApiError, valueOrThrow } from "../errors.ts";
import { requirePermission } from "../middleware/auth.ts";
import { errorResponses, jsonBody, jsonResponse, newRouter } from "../router.ts";
import { CategoryQuery, PutVariable, VariableSchema } from "../variables/routes.ts";
import {
  deleteStoredVariable,
  findStoredVariable,
  listStoredVariables,
  presentVariable,
} from "../variables/service.ts";
import { setOf } from "./http.ts";
import { setVariables } from "./queries.ts";
import { SetParams, SetVariableParams } from "./schemas.ts";
import { putSetVariable } from "./service.ts";

const tags = ["variable-sets"];
const security = [{ bearer: [] }];

export const variableSetVariableRoutes = newRouter()
  .openapi(
    createRoute({
      method: "get",
      operationId: "listVariableSetVariables",
      path: "/{varsetId}/vars",
      tags,
      summary: "List a variable set's variables (sensitive values never included)",
      security,
      middleware: [requirePermission("variable_sets.read")] as const,
      request: { params: SetParams, query: CategoryQuery },
      responses: {
        200: jsonResponse(z.object({ variables: z.array(VariableSchema) }), "The variables"),
        ...errorResponses(400, 401, 403, 404),
      },
    }),
    async (c) => {
      const { set } = await setOf(c, c.req.valid("param").varsetId);
      const { category } = c.req.valid("query");
      const variables = await listStoredVariables(setVariables(c.var.db, set.orgId, set.id));
      return c.json(
        { variables: category ? variables.filter((v) => v.category === category) : variables },
        200,
      );
    },
  )
  .openapi(
    createRoute({
      method: "get",
      operationId: "getVariableSetVariable",
      path: "/{varsetId}/vars/{key}",
      tags,
      summary: "Get one variable of a variable set",
      security,
      middleware: [requirePermission("variable_sets.read")] as const,
      request: { params: SetVariableParams, query: CategoryQuery },
      responses: {
        200: jsonResponse(VariableSchema, "The variable"),
        ...errorResponses(400, 401, 403, 404),
      },
    }),
    async (c) => {
      const { varsetId, key } = c.req.valid("param");
      const { set } = await setOf(c, varsetId);
      const store = setVariables(c.var.db, set.orgId, set.id);
      const found = await findStoredVariable(store, key, c.req.valid("query").category);
      return c.json(presentVariable(valueOrThrow(found)), 200);
    },
  )
  .openapi(
    createRoute({
      method: "put",
      operationId: "setVariableSetVariable",
      path: "/{varsetId}/vars/{key}",
      tags,
      summary: "Create or replace a variable of a variable set",
      description:
        "The same rules as a workspace's variables: replace semantics, write-only sensitive values. In a global set, a variable another global set holds is refused (409).",
      security,
      middleware: [requirePermission("variable_sets.manage")] as const,
      request: { params: SetVariableParams, query: CategoryQuery, body: jsonBody(PutVariable) },
      responses: {
        200: jsonResponse(VariableSchema, "The replaced variable"),
        201: jsonResponse(VariableSchema, "The created variable"),
        ...errorResponses(400, 401, 403, 404, 409, 413, 415),
      },
    }),
    async (c) => {
      const { varsetId, key } = c.req.valid("param");
      const { principal, set } = await setOf(c, varsetId);
      const write = c.req.valid("json");
      const query = c.req.valid("query");
      if (query.category !== undefined && query.category !== write.category) {
        throw new ApiError("BAD_REQUEST", "?category= and the body's category differ", {
          issues: [{ path: "query.category", message: "must match json.category" }],
        });
      }
      const result = await putSetVariable(c.var.deps, set, {
        key,
        write,
        actor: actorOf(principal),
        encryptionKey: c.env.ENCRYPTION_KEY,
      });
      const { variable, created } = valueOrThrow(result);
      return created ? c.json(variable, 201) : c.json(variable, 200);
    },
  )
  .openapi(
    createRoute({
      method: "delete",
      operationId: "deleteVariableSetVariable",
      path: "/{varsetId}/vars/{key}",
      tags,
      summary: "Delete a variable of a variable set",
      security,
      middleware: [requirePermission("variable_sets.manage")] as const,
      request: { params: SetVariableParams, query: CategoryQuery },
      responses: {
        200: jsonResponse(VariableSchema, "The deleted variable"),
        ...errorResponses(400, 401, 403, 404),
      },
    }),
    async (c) => {
      const { varsetId, key } = c.req.valid("param");
      const { principal, set } = await setOf(c, varsetId);
      const store = setVariables(c.var.db, set.orgId, set.id);
      const result = await deleteStoredVariable(c.var.deps, store, {
        key,
        category: c.req.valid("query").category,
        actor: actorOf(principal),
      });
      return c.json(valueOrThrow(result), 200);
    },
  );
