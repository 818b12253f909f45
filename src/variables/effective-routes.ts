/**
 * `GET /api/v1/workspaces/{workspaceId}/effective-variables`: what a run of the workspace would
 * get, each variable with its source, computed by the same merge the job lease uses.
 */
import { createRoute, z } from "@hono/zod-openapi";
import { requirePerson } from "../middleware/auth.ts";
import { errorResponses, jsonResponse, newRouter } from "../router.ts";
import { workspaceOf } from "../workspaces/http.ts";
import { WorkspaceRef } from "../workspaces/model.ts";
import { showEffectiveVariables } from "./effective.ts";
import { CATEGORIES } from "./model.ts";
import { SET_SCOPES } from "./precedence.ts";

const Source = z
  .discriminatedUnion("type", [
    z.object({ type: z.literal("workspace") }),
    z.object({
      type: z.literal("variable_set"),
      id: z.string(),
      name: z.string(),
      scope: z.enum(SET_SCOPES).openapi({
        description: "How the set reaches the workspace: global, through its project, or by name",
      }),
      priority: z.boolean(),
    }),
  ])
  .openapi("VariableSource");

const EffectiveVariable = z
  .object({
    key: z.string(),
    category: z.enum(CATEGORIES),
    value: z.string().nullable().openapi({ description: "Always null for sensitive variables" }),
    hcl: z.boolean(),
    sensitive: z.boolean(),
    description: z.string(),
    source: Source,
  })
  .openapi("EffectiveVariable");

const EffectiveVariables = z
  .object({
    variables: z.array(EffectiveVariable).openapi({ description: "What a run gets" }),
    overridden: z
      .array(EffectiveVariable.extend({ overriddenBy: Source }))
      .openapi({ description: "Values a run does not get, and the source whose value wins" }),
  })
  .openapi("EffectiveVariables");

export const effectiveVariableRoutes = newRouter().openapi(
  createRoute({
    method: "get",
    operationId: "getEffectiveVariables",
    path: "/{workspaceId}/effective-variables",
    tags: ["variables"],
    summary: "The variables a run of the workspace would get, each with its source",
    description:
      "The workspace's own variables merged with the variable sets that reach it (global, through its project, by name), by Terraform Cloud's precedence: priority sets, then the workspace's variables, then workspace-scoped, project-scoped and global sets; between sets of the same rank the name first in Unicode code point order wins. Sensitive values are never included.",
    security: [{ bearer: [] }],
    middleware: [requirePerson()] as const,
    request: { params: z.strictObject({ workspaceId: WorkspaceRef }) },
    responses: {
      200: jsonResponse(EffectiveVariables, "The effective variables"),
      ...errorResponses(400, 401, 404),
    },
  }),
  async (c) => {
    const { workspace } = await workspaceOf(c, c.req.valid("param").workspaceId, "workspace.read");
    return c.json(await showEffectiveVariables(c.var.db, workspace), 200);
  },
);
