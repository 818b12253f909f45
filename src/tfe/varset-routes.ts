/**
 * The TFE API's variable sets over Outpost's (go-tfe `VariableSets`, the `tfe_variable_set`,
 * `tfe_workspace_variable_set` and `tfe_project_variable_set` resources): list, create, read,
 * update and delete, and applying a set to workspaces and projects through its relationships.
 * Organization readers and up read; admins change (`variable_sets.read`/`.manage`, as on
 * `/api/v1/variable-sets`). A set addressed by an id of another organization is 404.
 */
import { createRoute, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { actorOf } from "../authz/principal.ts";
import type { AppEnv } from "../env.ts";
import { reasonError, valueOrThrow } from "../errors.ts";
import { invalidInput } from "../lib/reason.ts";
import { requirePermission } from "../middleware/auth.ts";
import { idParam, newRouter } from "../router.ts";
import { linkTargetOf, setOf } from "../varsets/http.ts";
import { applySet, unapplySet } from "../varsets/links.ts";
import { type VariableSet, VariableSetName } from "../varsets/model.ts";
import {
  createVariableSet,
  deleteVariableSet,
  listVariableSets,
  showVariableSet,
  updateVariableSet,
} from "../varsets/service.ts";
import {
  documentBody,
  documentResponse,
  errorDocuments,
  pageOf,
  type Resource,
  related,
  sendDocument,
  sendEmpty,
  TfePageQuery,
} from "./jsonapi.ts";
import { callerOrganizationName, organizationOf } from "./organization.ts";
import { OrgParams } from "./organization-routes.ts";

const tags = ["terraform cli"];
const security = [{ bearer: [] }];
const MAX_LISTED = 1000;

export const VarsetParams = z.strictObject({
  varsetId: idParam("varset", "varsetId"),
});

const Attributes = z.object({
  name: VariableSetName.optional(),
  description: z.string().max(1000).optional(),
  global: z.boolean().optional(),
  priority: z.boolean().optional(),
});
const VarsetDocument = z
  .object({ data: z.object({ type: z.literal("varsets"), attributes: Attributes }) })
  .openapi("TfeVarsetDocument");

const linkDocument = (type: "workspaces" | "projects") =>
  z
    .object({
      data: z
        .array(
          z.object({
            type: z.literal(type),
            id: z
              .string()
              .regex(
                type === "workspaces" ? /^ws_[a-z2-7]{26}$/ : /^prj_[a-z2-7]{26}$/,
                `must be a ${type === "workspaces" ? "ws" : "prj"}_ id`,
              ),
          }),
        )
        .min(1)
        .max(100),
    })
    .openapi(type === "workspaces" ? "TfeVarsetWorkspaces" : "TfeVarsetProjects");

/** The set as a `varsets` resource: where it applies, and how many variables it holds. */
function varsetResource(set: VariableSet, organizationName: string): Resource {
  return {
    id: set.id,
    type: "varsets",
    attributes: {
      name: set.name,
      description: set.description,
      global: set.global,
      priority: set.priority,
      "updated-at": set.updatedAt,
      "var-count": set.variableCount,
      "workspace-count": set.workspaces.length,
      "project-count": set.projects.length,
    },
    relationships: {
      organization: related("organizations", organizationName),
      workspaces: { data: set.workspaces.map((w) => ({ id: w.id, type: "workspaces" })) },
      projects: { data: set.projects.map((p) => ({ id: p.id, type: "projects" })) },
    },
    links: { self: `/api/v2/varsets/${set.id}` },
  };
}

async function sendSet(c: Context<AppEnv>, set: VariableSet, status: 200 | 201 = 200) {
  return sendDocument(c, { data: varsetResource(set, await callerOrganizationName(c)) }, status);
}

const linkRoute = (method: "post" | "delete", type: "workspaces" | "projects") =>
  createRoute({
    method,
    operationId: `tfe${method === "post" ? "Apply" : "Remove"}Varset${type === "workspaces" ? "Workspaces" : "Projects"}`,
    path: `/varsets/{varsetId}/relationships/${type}`,
    tags,
    summary: `${method === "post" ? "Apply a variable set to" : "Stop applying a variable set to"} ${type} (TFE API)`,
    security,
    middleware: [requirePermission("variable_sets.manage")] as const,
    request: { params: VarsetParams, body: documentBody(linkDocument(type)) },
    responses: {
      204: { description: "Done" },
      ...errorDocuments(400, 401, 403, 404, 409, 415),
    },
  });

/** Applies or unapplies the set for every target named; the first refusal stops the rest. */
async function link(
  c: Context<AppEnv>,
  varsetId: string,
  type: "workspace" | "project",
  ids: string[],
  apply: boolean,
) {
  const { set, ctx } = await setOf(c, varsetId);
  // Every target is resolved before anything changes: an unknown one changes nothing.
  const targets = await Promise.all(ids.map((id) => linkTargetOf(c, type, id)));
  for (const target of targets) {
    valueOrThrow(
      apply
        ? await applySet(c.var.db, ctx, set, target)
        : await unapplySet(c.var.db, ctx, set, target),
    );
  }
  return sendEmpty(c);
}

export const varsetRoutes = newRouter()
  .openapi(
    createRoute({
      method: "get",
      operationId: "tfeListVarsets",
      path: "/organizations/{organization}/varsets",
      tags,
      summary: "The organization's variable sets, by name; q filters by name (TFE API)",
      security,
      middleware: [requirePermission("variable_sets.read")] as const,
      request: {
        params: OrgParams,
        query: z.object({ ...TfePageQuery, q: z.string().max(100).optional() }),
      },
      responses: {
        200: documentResponse("A page of variable sets with meta.pagination"),
        ...errorDocuments(400, 401, 403, 404),
      },
    }),
    async (c) => {
      const { principal, organization } = await organizationOf(
        c,
        c.req.valid("param").organization,
      );
      const query = c.req.valid("query");
      const search = query.q?.toLowerCase();
      const all = (await listVariableSets(c.var.db, principal.orgId, { limit: MAX_LISTED }))
        .map(({ set }) => set)
        .filter((set) => search === undefined || set.name.toLowerCase().includes(search));
      const { items, meta } = pageOf(all, query);
      return sendDocument(c, {
        data: items.map((set) => varsetResource(set, organization.name)),
        meta,
      });
    },
  )
  .openapi(
    createRoute({
      method: "post",
      operationId: "tfeCreateVarset",
      path: "/organizations/{organization}/varsets",
      tags,
      summary: "Create a variable set: name, description, global, priority (TFE API)",
      security,
      middleware: [requirePermission("variable_sets.manage")] as const,
      request: { params: OrgParams, body: documentBody(VarsetDocument) },
      responses: {
        201: documentResponse("The variable set"),
        ...errorDocuments(400, 401, 403, 404, 409, 415),
      },
    }),
    async (c) => {
      const { principal } = await organizationOf(c, c.req.valid("param").organization);
      const { name, ...rest } = c.req.valid("json").data.attributes;
      if (name === undefined) {
        throw reasonError(
          invalidInput("json.data.attributes.name", "data.attributes.name is required").reason,
        );
      }
      const ctx = { orgId: principal.orgId, actor: actorOf(principal), now: c.var.deps.now() };
      const created = await createVariableSet(c.var.db, ctx, { name, ...rest });
      return sendSet(c, valueOrThrow(created), 201);
    },
  )
  .openapi(
    createRoute({
      method: "get",
      operationId: "tfeReadVarset",
      path: "/varsets/{varsetId}",
      tags,
      summary: "A variable set with where it applies (TFE API)",
      security,
      middleware: [requirePermission("variable_sets.read")] as const,
      request: { params: VarsetParams },
      responses: {
        200: documentResponse("The variable set"),
        ...errorDocuments(400, 401, 403, 404),
      },
    }),
    async (c) => {
      const { set } = await setOf(c, c.req.valid("param").varsetId);
      return sendSet(c, await showVariableSet(c.var.db, set));
    },
  )
  .openapi(
    createRoute({
      method: "patch",
      operationId: "tfeUpdateVarset",
      path: "/varsets/{varsetId}",
      tags,
      summary: "Change a variable set, only the attributes given (TFE API)",
      security,
      middleware: [requirePermission("variable_sets.manage")] as const,
      request: { params: VarsetParams, body: documentBody(VarsetDocument) },
      responses: {
        200: documentResponse("The variable set"),
        ...errorDocuments(400, 401, 403, 404, 409, 415),
      },
    }),
    async (c) => {
      const { set, ctx } = await setOf(c, c.req.valid("param").varsetId);
      const patch = c.req.valid("json").data.attributes;
      return sendSet(c, valueOrThrow(await updateVariableSet(c.var.db, ctx, set, patch)));
    },
  )
  .openapi(
    createRoute({
      method: "delete",
      operationId: "tfeDeleteVarset",
      path: "/varsets/{varsetId}",
      tags,
      summary: "Delete a variable set with its variables (TFE API)",
      security,
      middleware: [requirePermission("variable_sets.manage")] as const,
      request: { params: VarsetParams },
      responses: { 204: { description: "Deleted" }, ...errorDocuments(400, 401, 403, 404) },
    }),
    async (c) => {
      const { set, ctx } = await setOf(c, c.req.valid("param").varsetId);
      await deleteVariableSet(c.var.db, ctx, set);
      return sendEmpty(c);
    },
  )
  .openapi(linkRoute("post", "workspaces"), (c) =>
    link(c, c.req.valid("param").varsetId, "workspace", ids(c.req.valid("json")), true),
  )
  .openapi(linkRoute("delete", "workspaces"), (c) =>
    link(c, c.req.valid("param").varsetId, "workspace", ids(c.req.valid("json")), false),
  )
  .openapi(linkRoute("post", "projects"), (c) =>
    link(c, c.req.valid("param").varsetId, "project", ids(c.req.valid("json")), true),
  )
  .openapi(linkRoute("delete", "projects"), (c) =>
    link(c, c.req.valid("param").varsetId, "project", ids(c.req.valid("json")), false),
  );

function ids(document: { data: { id: string }[] }): string[] {
  return [...new Set(document.data.map((item) => item.id))];
}
