/**
 * `/api/v1/workspaces/{workspaceId}/vars`: admins write, every role reads. A variable is named by
 * its key and category; `?category=` picks one where the same key exists in both categories.
 * Sensitive values are write-only: they read back as `sensitive: true, value: null`.
 */
import { createRoute, z } from "@hono/zod-openapi";
import { actorOf } from "../authz/principal.ts";
import { ApiError, valueOrThrow } from "../errors.ts";
import { requirePerson } from "../middleware/auth.ts";
import { errorResponses, jsonBody, jsonResponse, newRouter } from "../router.ts";
import { workspaceOf } from "../workspaces/http.ts";
import { WorkspaceRef } from "../workspaces/model.ts";
import { ANY_KEY_PATTERN, CATEGORIES, MAX_VALUE_LENGTH } from "./model.ts";
import {
  deleteVariable,
  findVariable,
  listVariables,
  presentVariable,
  putVariable,
} from "./service.ts";

/** The variable routes' shapes, shared by a workspace's and a variable set's variables. */
export const VariableSchema = z
  .object({
    id: z.string(),
    key: z.string(),
    category: z.enum(CATEGORIES),
    value: z.string().nullable().openapi({ description: "Always null for sensitive variables" }),
    hcl: z.boolean(),
    sensitive: z.boolean(),
    description: z.string(),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .openapi("Variable");

export const PutVariable = z
  .strictObject({
    value: z.string().max(MAX_VALUE_LENGTH).optional().openapi({
      description: "Required for a new variable; omitted, the stored value is kept",
    }),
    category: z.enum(CATEGORIES),
    hcl: z.boolean().default(false),
    sensitive: z.boolean().default(false),
    description: z.string().max(500).default(""),
  })
  .openapi("PutVariable");

export const Key = z
  .string()
  .regex(ANY_KEY_PATTERN, "must be a variable name (letters, digits, '_', '-'; at most 128)")
  .openapi({ param: { name: "key", in: "path" }, example: "TF_LOG" });
const WorkspaceParams = z.strictObject({ workspaceId: WorkspaceRef });
const VariableParams = z.strictObject({ workspaceId: WorkspaceRef, key: Key });
export const CategoryQuery = z.strictObject({
  category: z
    .enum(CATEGORIES)
    .optional()
    .openapi({
      param: { name: "category", in: "query" },
      description: "Picks a category; on one variable, needed only when the key exists in both",
    }),
});

const tags = ["variables"];
const security = [{ bearer: [] }];

export const variableRoutes = newRouter()
  .openapi(
    createRoute({
      method: "get",
      operationId: "listVariables",
      path: "/{workspaceId}/vars",
      tags,
      summary: "List a workspace's variables (sensitive values never included)",
      security,
      middleware: [requirePerson()] as const,
      request: { params: WorkspaceParams, query: CategoryQuery },
      responses: {
        200: jsonResponse(z.object({ variables: z.array(VariableSchema) }), "The variables"),
        ...errorResponses(400, 401, 404),
      },
    }),
    async (c) => {
      const { workspace } = await workspaceOf(
        c,
        c.req.valid("param").workspaceId,
        "workspace.read",
      );
      const { category } = c.req.valid("query");
      const variables = await listVariables(c.var.db, workspace.id);
      return c.json(
        { variables: category ? variables.filter((v) => v.category === category) : variables },
        200,
      );
    },
  )
  .openapi(
    createRoute({
      method: "get",
      operationId: "getVariable",
      path: "/{workspaceId}/vars/{key}",
      tags,
      summary: "Get one variable",
      security,
      middleware: [requirePerson()] as const,
      request: { params: VariableParams, query: CategoryQuery },
      responses: {
        200: jsonResponse(VariableSchema, "The variable"),
        ...errorResponses(400, 401, 404),
      },
    }),
    async (c) => {
      const { workspaceId, key } = c.req.valid("param");
      const { workspace } = await workspaceOf(c, workspaceId, "workspace.read");
      const found = await findVariable(c.var.db, workspace.id, key, c.req.valid("query").category);
      return c.json(presentVariable(valueOrThrow(found)), 200);
    },
  )
  .openapi(
    createRoute({
      method: "put",
      operationId: "setVariable",
      path: "/{workspaceId}/vars/{key}",
      tags,
      summary: "Create or replace a variable",
      description:
        "Replace semantics: omitted flags take their defaults; an omitted value keeps the stored one. A sensitive variable becomes non-sensitive only with a new value.",
      security,
      middleware: [requirePerson()] as const,
      request: { params: VariableParams, query: CategoryQuery, body: jsonBody(PutVariable) },
      responses: {
        200: jsonResponse(VariableSchema, "The replaced variable"),
        201: jsonResponse(VariableSchema, "The created variable"),
        ...errorResponses(400, 401, 403, 404, 409, 413, 415),
      },
    }),
    async (c) => {
      const { workspaceId, key } = c.req.valid("param");
      const { principal, workspace } = await workspaceOf(c, workspaceId, "variables.write");
      const write = c.req.valid("json");
      const query = c.req.valid("query");
      if (query.category !== undefined && query.category !== write.category) {
        throw new ApiError("BAD_REQUEST", "?category= and the body's category differ", {
          issues: [{ path: "query.category", message: "must match json.category" }],
        });
      }
      const result = await putVariable(c.var.deps, {
        orgId: principal.orgId,
        workspaceId: workspace.id,
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
      operationId: "deleteVariable",
      path: "/{workspaceId}/vars/{key}",
      tags,
      summary: "Delete a variable",
      security,
      middleware: [requirePerson()] as const,
      request: { params: VariableParams, query: CategoryQuery },
      responses: {
        200: jsonResponse(VariableSchema, "The deleted variable"),
        ...errorResponses(400, 401, 403, 404),
      },
    }),
    async (c) => {
      const { workspaceId, key } = c.req.valid("param");
      const { principal, workspace } = await workspaceOf(c, workspaceId, "variables.write");
      const result = await deleteVariable(c.var.deps, {
        orgId: principal.orgId,
        workspaceId: workspace.id,
        key,
        category: c.req.valid("query").category,
        actor: actorOf(principal),
      });
      return c.json(valueOrThrow(result), 200);
    },
  );
