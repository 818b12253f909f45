/**
 * The TFE API's workspace variables (go-tfe `variable.go`, the `tfe_variable` resource) over
 * Outpost's variable service: list, create, update and delete by the variable's id, with
 * Terraform Cloud's attribute names. Sensitive values read back as null, as everywhere; the
 * service encrypts them, audits each change and keeps the limits.
 */

import { createRoute, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { actorOf } from "../authz/principal.ts";
import type { AppEnv } from "../env.ts";
import { reasonError, valueOrThrow } from "../errors.ts";
import { invalidInput, refuse } from "../lib/reason.ts";
import { requirePerson } from "../middleware/auth.ts";
import { idParam, newRouter } from "../router.ts";
import type { CATEGORIES } from "../variables/model.ts";
import {
  deleteVariable,
  findVariable,
  listVariables,
  putVariable,
  type Variable,
} from "../variables/service.ts";
import { workspaceOf } from "../workspaces/http.ts";
import {
  documentBody,
  documentResponse,
  errorDocuments,
  type Resource,
  related,
  sendDocument,
  sendEmpty,
} from "./jsonapi.ts";
import {
  type VariableAttributes,
  variableAttributes,
  variableDocument,
  variableWrite,
} from "./variable-document.ts";

const tags = ["terraform cli"];
const security = [{ bearer: [] }];

const WorkspaceId = idParam("ws", "workspaceId");
const WorkspaceParams = z.strictObject({ workspaceId: WorkspaceId });
const VariableParams = z.strictObject({
  workspaceId: WorkspaceId,
  variableId: idParam("var", "variableId"),
});

const VariableDocument = variableDocument("TfeVariableDocument");

function variableResource(variable: Variable, workspaceId: string): Resource {
  return {
    id: variable.id,
    type: "vars",
    attributes: variableAttributes(variable),
    relationships: { configurable: related("workspaces", workspaceId) },
    links: { self: `/api/v2/workspaces/${workspaceId}/vars/${variable.id}` },
  };
}

/** Writes `key` in `category` with the attributes given over `base` (PATCH keeps the rest). */
async function write(
  c: Context<AppEnv>,
  target: { workspaceId: string; key: string; category: (typeof CATEGORIES)[number] },
  attributes: VariableAttributes,
  base: Variable | null,
) {
  const { principal } = await workspaceOf(c, target.workspaceId, "variables.write");
  const result = await putVariable(c.var.deps, {
    orgId: principal.orgId,
    workspaceId: target.workspaceId,
    key: target.key,
    write: variableWrite(target.category, attributes, base),
    actor: actorOf(principal),
    encryptionKey: c.env.ENCRYPTION_KEY,
  });
  return valueOrThrow(result).variable;
}

/** The workspace's variable with this id, once the caller may `action` there. */
async function variableById(
  c: Context<AppEnv>,
  params: { workspaceId: string; variableId: string },
  action: "workspace.read" | "variables.write",
): Promise<Variable> {
  const { workspace } = await workspaceOf(c, params.workspaceId, action);
  const found = (await listVariables(c.var.db, workspace.id)).find(
    (v) => v.id === params.variableId,
  );
  if (!found) {
    throw reasonError(refuse("not_found", `variable ${params.variableId} not found`).reason);
  }
  return found;
}

export const variableRoutes = newRouter()
  .openapi(
    createRoute({
      method: "get",
      operationId: "tfeListVariables",
      path: "/workspaces/{workspaceId}/vars",
      tags,
      summary: "The workspace's variables; sensitive values are null (TFE API)",
      security,
      middleware: [requirePerson()] as const,
      request: { params: WorkspaceParams },
      responses: {
        200: documentResponse("The variables"),
        ...errorDocuments(400, 401, 403, 404),
      },
    }),
    async (c) => {
      const { workspace } = await workspaceOf(
        c,
        c.req.valid("param").workspaceId,
        "workspace.read",
      );
      const variables = await listVariables(c.var.db, workspace.id);
      return sendDocument(c, { data: variables.map((v) => variableResource(v, workspace.id)) });
    },
  )
  .openapi(
    createRoute({
      method: "post",
      operationId: "tfeCreateVariable",
      path: "/workspaces/{workspaceId}/vars",
      tags,
      summary: "Create a variable: key, value, category terraform|env, hcl, sensitive (TFE API)",
      security,
      middleware: [requirePerson()] as const,
      request: { params: WorkspaceParams, body: documentBody(VariableDocument) },
      responses: {
        201: documentResponse("The variable"),
        ...errorDocuments(400, 401, 403, 404, 409, 415),
      },
    }),
    async (c) => {
      const { workspaceId } = c.req.valid("param");
      const attributes = c.req.valid("json").data.attributes;
      const { key, category } = attributes;
      if (key === undefined || category === undefined) {
        const field = key === undefined ? "key" : "category";
        throw reasonError(
          invalidInput(`json.data.attributes.${field}`, `data.attributes.${field} is required`)
            .reason,
        );
      }
      const { workspace } = await workspaceOf(c, workspaceId, "variables.write");
      if ((await findVariable(c.var.db, workspace.id, key, category)).ok) {
        throw reasonError(
          refuse("conflict", `a ${category} variable ${key} already exists in this workspace`)
            .reason,
        );
      }
      const target = { workspaceId: workspace.id, key, category };
      const created = await write(
        c,
        target,
        { ...attributes, value: attributes.value ?? "" },
        null,
      );
      return sendDocument(c, { data: variableResource(created, workspace.id) }, 201);
    },
  )
  .openapi(
    createRoute({
      method: "patch",
      operationId: "tfeUpdateVariable",
      path: "/workspaces/{workspaceId}/vars/{variableId}",
      tags,
      summary: "Change a variable, only the attributes given; key and category stay (TFE API)",
      security,
      middleware: [requirePerson()] as const,
      request: { params: VariableParams, body: documentBody(VariableDocument) },
      responses: {
        200: documentResponse("The variable"),
        ...errorDocuments(400, 401, 403, 404, 409, 415),
      },
    }),
    async (c) => {
      const params = c.req.valid("param");
      const attributes = c.req.valid("json").data.attributes;
      const current = await variableById(c, params, "variables.write");
      for (const field of ["key", "category"] as const) {
        const given = attributes[field];
        if (given !== undefined && given !== current[field]) {
          throw reasonError(
            invalidInput(
              `json.data.attributes.${field}`,
              `a variable's ${field} cannot change: delete it and create a new one`,
            ).reason,
          );
        }
      }
      const target = {
        workspaceId: params.workspaceId,
        key: current.key,
        category: current.category,
      };
      const updated = await write(c, target, attributes, current);
      return sendDocument(c, { data: variableResource(updated, params.workspaceId) });
    },
  )
  .openapi(
    createRoute({
      method: "delete",
      operationId: "tfeDeleteVariable",
      path: "/workspaces/{workspaceId}/vars/{variableId}",
      tags,
      summary: "Delete a variable (TFE API)",
      security,
      middleware: [requirePerson()] as const,
      request: { params: VariableParams },
      responses: { 204: { description: "Deleted" }, ...errorDocuments(400, 401, 403, 404) },
    }),
    async (c) => {
      const params = c.req.valid("param");
      const current = await variableById(c, params, "variables.write");
      const { principal } = await workspaceOf(c, params.workspaceId, "variables.write");
      valueOrThrow(
        await deleteVariable(c.var.deps, {
          orgId: principal.orgId,
          workspaceId: params.workspaceId,
          key: current.key,
          category: current.category,
          actor: actorOf(principal),
        }),
      );
      return sendEmpty(c);
    },
  );
