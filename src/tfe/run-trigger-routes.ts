/**
 * The TFE API's run triggers over Outpost's (go-tfe `RunTriggers`, the `tfe_run_trigger`
 * resource): a workspace's inbound triggers, create one from a source workspace, read and
 * delete by id. Managing needs `run_triggers.manage` on the target and read access to the
 * source, as on `/api/v1`; a trigger whose target the caller cannot see is 404. Listing the
 * outbound triggers of a source is not offered (it would name targets the caller may not see).
 */
import { createRoute, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { WorkspaceAction } from "../authz/model.ts";
import { actorOf } from "../authz/principal.ts";
import type { AppEnv } from "../env.ts";
import { ApiError, reasonError, valueOrThrow } from "../errors.ts";
import { invalidInput } from "../lib/reason.ts";
import { personOf, requirePerson } from "../middleware/auth.ts";
import { idParam, newRouter } from "../router.ts";
import { getRunTrigger, listTriggersOf, type RunTriggerRow } from "../run-triggers/queries.ts";
import { createRunTrigger, deleteRunTrigger } from "../run-triggers/service.ts";
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

const tags = ["terraform cli"];
const security = [{ bearer: [] }];
const WS = /^ws_[a-z2-7]{26}$/;

const WorkspaceParams = z.strictObject({
  workspaceId: z
    .string()
    .regex(WS, "must be a ws_ id")
    .openapi({ param: { name: "workspaceId", in: "path" } }),
});
const TriggerParams = z.strictObject({
  triggerId: idParam("rt", "triggerId"),
});
const CreateDocument = z
  .object({
    data: z.object({
      type: z.literal("run-triggers"),
      relationships: z.object({
        sourceable: z.object({
          data: z.object({ type: z.literal("workspaces"), id: z.string().regex(WS) }),
        }),
      }),
    }),
  })
  .openapi("TfeRunTriggerDocument");

function triggerResource(row: RunTriggerRow, sourceName: string, targetName: string): Resource {
  return {
    id: row.id,
    type: "run-triggers",
    attributes: {
      "created-at": new Date(row.createdAt).toISOString(),
      "sourceable-name": sourceName,
      "workspace-name": targetName,
    },
    relationships: {
      sourceable: related("workspaces", row.sourceWorkspaceId),
      workspace: related("workspaces", row.workspaceId),
    },
    links: { self: `/api/v2/run-triggers/${row.id}` },
  };
}

/** The trigger an id names, once the caller may `action` on its target (else 404). */
async function triggerOf(c: Context<AppEnv>, triggerId: string, action: WorkspaceAction) {
  const row = await getRunTrigger(c.var.db, personOf(c).orgId, triggerId);
  if (!row) {
    throw new ApiError("NOT_FOUND", `run trigger ${triggerId} not found`);
  }
  try {
    const { principal, workspace } = await workspaceOf(c, row.workspaceId, action);
    const inbound = await listTriggersOf(c.var.db, workspace.id);
    const sourceName = inbound.find((t) => t.trigger.id === row.id)?.sourceName ?? "";
    return { principal, row, target: workspace, sourceName };
  } catch (error) {
    if (error instanceof ApiError && error.code === "NOT_FOUND") {
      throw new ApiError("NOT_FOUND", `run trigger ${triggerId} not found`);
    }
    throw error;
  }
}

export const runTriggerRoutes = newRouter()
  .openapi(
    createRoute({
      method: "get",
      operationId: "tfeListRunTriggers",
      path: "/workspaces/{workspaceId}/run-triggers",
      tags,
      summary: "A workspace's inbound run triggers: filter[run-trigger][type]=inbound (TFE API)",
      security,
      middleware: [requirePerson()] as const,
      request: {
        params: WorkspaceParams,
        query: z.object({ "filter[run-trigger][type]": z.enum(["inbound", "outbound"]) }),
      },
      responses: {
        200: documentResponse("The triggers"),
        ...errorDocuments(400, 401, 404),
      },
    }),
    async (c) => {
      if (c.req.valid("query")["filter[run-trigger][type]"] === "outbound") {
        throw reasonError(
          invalidInput(
            "query.filter[run-trigger][type]",
            "outbound run triggers are not listed: list the inbound triggers of a target workspace",
          ).reason,
        );
      }
      const { workspace } = await workspaceOf(
        c,
        c.req.valid("param").workspaceId,
        "workspace.read",
      );
      const rows = await listTriggersOf(c.var.db, workspace.id);
      return sendDocument(c, {
        data: rows.map((r) => triggerResource(r.trigger, r.sourceName, workspace.name)),
      });
    },
  )
  .openapi(
    createRoute({
      method: "post",
      operationId: "tfeCreateRunTrigger",
      path: "/workspaces/{workspaceId}/run-triggers",
      tags,
      summary: "Queue plans on this workspace when the source's runs apply (TFE API)",
      security,
      middleware: [requirePerson()] as const,
      request: { params: WorkspaceParams, body: documentBody(CreateDocument) },
      responses: {
        201: documentResponse("The trigger"),
        ...errorDocuments(400, 401, 403, 404, 409, 415),
      },
    }),
    async (c) => {
      const { principal, workspace } = await workspaceOf(
        c,
        c.req.valid("param").workspaceId,
        "run_triggers.manage",
      );
      const sourceId = c.req.valid("json").data.relationships.sourceable.data.id;
      const { workspace: source } = await workspaceOf(c, sourceId, "workspace.read");
      const row = valueOrThrow(
        await createRunTrigger(c.var.deps, workspace, source, actorOf(principal)),
      );
      return sendDocument(c, { data: triggerResource(row, source.name, workspace.name) }, 201);
    },
  )
  .openapi(
    createRoute({
      method: "get",
      operationId: "tfeReadRunTrigger",
      path: "/run-triggers/{triggerId}",
      tags,
      summary: "A run trigger (TFE API)",
      security,
      middleware: [requirePerson()] as const,
      request: { params: TriggerParams },
      responses: { 200: documentResponse("The trigger"), ...errorDocuments(400, 401, 404) },
    }),
    async (c) => {
      const found = await triggerOf(c, c.req.valid("param").triggerId, "workspace.read");
      const data = triggerResource(found.row, found.sourceName, found.target.name);
      return sendDocument(c, { data });
    },
  )
  .openapi(
    createRoute({
      method: "delete",
      operationId: "tfeDeleteRunTrigger",
      path: "/run-triggers/{triggerId}",
      tags,
      summary: "Delete a run trigger (TFE API)",
      security,
      middleware: [requirePerson()] as const,
      request: { params: TriggerParams },
      responses: { 204: { description: "Deleted" }, ...errorDocuments(400, 401, 403, 404) },
    }),
    async (c) => {
      const found = await triggerOf(c, c.req.valid("param").triggerId, "run_triggers.manage");
      await deleteRunTrigger(c.var.deps, found.row, actorOf(found.principal));
      return sendEmpty(c);
    },
  );
