/**
 * A variable set's variables in the TFE API (go-tfe `VariableSetVariables`, the `tfe_variable`
 * resource with `variable_set_id`): `/varsets/{id}/relationships/vars`, by the variable's id,
 * with Terraform Cloud's attribute names. Sensitive values read back as null; the set's service
 * keeps the global sets from sharing a variable, encrypts and audits.
 */

import { createRoute } from "@hono/zod-openapi";
import type { Context } from "hono";
import { actorOf } from "../authz/principal.ts";
import type { AppEnv } from "../env.ts";
import { reasonError, valueOrThrow } from "../errors.ts";
import { invalidInput, refuse } from "../lib/reason.ts";
import { requirePermission } from "../middleware/auth.ts";
import { idParam, newRouter } from "../router.ts";
import type { CATEGORIES } from "../variables/model.ts";
import { deleteStoredVariable, listStoredVariables, type Variable } from "../variables/service.ts";
import { setOf } from "../varsets/http.ts";
import { setVariables } from "../varsets/queries.ts";
import { putSetVariable } from "../varsets/service.ts";
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
import { VarsetParams } from "./varset-routes.ts";

const tags = ["terraform cli"];
const security = [{ bearer: [] }];

const VariableParams = VarsetParams.extend({
  variableId: idParam("var", "variableId"),
});

const VariableDocument = variableDocument("TfeVarsetVariableDocument");

function variableResource(variable: Variable, varsetId: string): Resource {
  return {
    id: variable.id,
    type: "vars",
    attributes: variableAttributes(variable),
    relationships: { varset: related("varsets", varsetId) },
  };
}

/** The set and, with `variableId`, its variable of that id (else 404). */
async function setAndVariable(c: Context<AppEnv>, varsetId: string, variableId?: string) {
  const found = await setOf(c, varsetId);
  const store = setVariables(c.var.db, found.set.orgId, found.set.id);
  const variables = await listStoredVariables(store);
  const variable = variableId === undefined ? null : variables.find((v) => v.id === variableId);
  if (variable === undefined) {
    throw reasonError(refuse("not_found", `variable ${variableId} not found`).reason);
  }
  return { ...found, store, variables, variable };
}

async function write(
  c: Context<AppEnv>,
  found: Awaited<ReturnType<typeof setAndVariable>>,
  target: { key: string; category: (typeof CATEGORIES)[number] },
  attributes: VariableAttributes,
  base: Variable | null,
) {
  const result = await putSetVariable(c.var.deps, found.set, {
    key: target.key,
    write: variableWrite(target.category, attributes, base),
    actor: actorOf(found.principal),
    encryptionKey: c.env.ENCRYPTION_KEY,
  });
  return valueOrThrow(result).variable;
}

const PATH = "/varsets/{varsetId}/relationships/vars";

export const varsetVariableRoutes = newRouter()
  .openapi(
    createRoute({
      method: "get",
      operationId: "tfeListVarsetVariables",
      path: PATH,
      tags,
      summary: "A variable set's variables; sensitive values are null (TFE API)",
      security,
      middleware: [requirePermission("variable_sets.read")] as const,
      request: { params: VarsetParams },
      responses: { 200: documentResponse("The variables"), ...errorDocuments(400, 401, 403, 404) },
    }),
    async (c) => {
      const { set, variables } = await setAndVariable(c, c.req.valid("param").varsetId);
      return sendDocument(c, { data: variables.map((v) => variableResource(v, set.id)) });
    },
  )
  .openapi(
    createRoute({
      method: "post",
      operationId: "tfeCreateVarsetVariable",
      path: PATH,
      tags,
      summary: "Add a variable to a set: key, value, category, hcl, sensitive (TFE API)",
      security,
      middleware: [requirePermission("variable_sets.manage")] as const,
      request: { params: VarsetParams, body: documentBody(VariableDocument) },
      responses: {
        201: documentResponse("The variable"),
        ...errorDocuments(400, 401, 403, 404, 409, 415),
      },
    }),
    async (c) => {
      const attributes = c.req.valid("json").data.attributes;
      const { key, category } = attributes;
      if (key === undefined || category === undefined) {
        const field = key === undefined ? "key" : "category";
        throw reasonError(
          invalidInput(`json.data.attributes.${field}`, `data.attributes.${field} is required`)
            .reason,
        );
      }
      const found = await setAndVariable(c, c.req.valid("param").varsetId);
      if (found.variables.some((v) => v.key === key && v.category === category)) {
        throw reasonError(
          refuse("conflict", `a ${category} variable ${key} already exists in this set`).reason,
        );
      }
      const created = await write(
        c,
        found,
        { key, category },
        { ...attributes, value: attributes.value ?? "" },
        null,
      );
      return sendDocument(c, { data: variableResource(created, found.set.id) }, 201);
    },
  )
  .openapi(
    createRoute({
      method: "get",
      operationId: "tfeReadVarsetVariable",
      path: `${PATH}/{variableId}`,
      tags,
      summary: "One variable of a set (TFE API)",
      security,
      middleware: [requirePermission("variable_sets.read")] as const,
      request: { params: VariableParams },
      responses: { 200: documentResponse("The variable"), ...errorDocuments(400, 401, 403, 404) },
    }),
    async (c) => {
      const { varsetId, variableId } = c.req.valid("param");
      const { set, variable } = await setAndVariable(c, varsetId, variableId);
      return sendDocument(c, { data: variable ? variableResource(variable, set.id) : null });
    },
  )
  .openapi(
    createRoute({
      method: "patch",
      operationId: "tfeUpdateVarsetVariable",
      path: `${PATH}/{variableId}`,
      tags,
      summary: "Change a set's variable, only the attributes given; key and category stay",
      security,
      middleware: [requirePermission("variable_sets.manage")] as const,
      request: { params: VariableParams, body: documentBody(VariableDocument) },
      responses: {
        200: documentResponse("The variable"),
        ...errorDocuments(400, 401, 403, 404, 409, 415),
      },
    }),
    async (c) => {
      const { varsetId, variableId } = c.req.valid("param");
      const attributes = c.req.valid("json").data.attributes;
      const found = await setAndVariable(c, varsetId, variableId);
      const current = found.variable;
      if (!current) {
        throw new Error("setAndVariable answered no variable for an id");
      }
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
      const updated = await write(c, found, current, attributes, current);
      return sendDocument(c, { data: variableResource(updated, found.set.id) });
    },
  )
  .openapi(
    createRoute({
      method: "delete",
      operationId: "tfeDeleteVarsetVariable",
      path: `${PATH}/{variableId}`,
      tags,
      summary: "Delete a set's variable (TFE API)",
      security,
      middleware: [requirePermission("variable_sets.manage")] as const,
      request: { params: VariableParams },
      responses: { 204: { description: "Deleted" }, ...errorDocuments(400, 401, 403, 404) },
    }),
    async (c) => {
      const { varsetId, variableId } = c.req.valid("param");
      const found = await setAndVariable(c, varsetId, variableId);
      if (!found.variable) {
        throw new Error("setAndVariable answered no variable for an id");
      }
      const { key, category } = found.variable;
      valueOrThrow(
        await deleteStoredVariable(c.var.deps, found.store, {
          key,
          category,
          actor: actorOf(found.principal),
        }),
      );
      return sendEmpty(c);
    },
  );
