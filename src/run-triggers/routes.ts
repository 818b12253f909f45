/**
 * Run triggers: `/api/v1/workspaces/{workspaceId}/run-triggers` (create, list) and
 * `/api/v1/run-triggers/{triggerId}` (delete). Managing them needs admin access to the target
 * workspace and read access to the source (one the caller cannot see is not found).
 */
import { createRoute, z } from "@hono/zod-openapi";
import { ActorSchema } from "../authz/actor.ts";
import { actorOf } from "../authz/principal.ts";
import { ApiError, valueOrThrow } from "../errors.ts";
import { requirePerson } from "../middleware/auth.ts";
import { errorResponses, idParam, jsonBody, jsonResponse, newRouter } from "../router.ts";
import { workspaceOf } from "../workspaces/http.ts";
import { WorkspaceRef } from "../workspaces/model.ts";
import { getWorkspaceById } from "../workspaces/queries.ts";
import { getRunTrigger, listTriggersOf } from "./queries.ts";
import { createRunTrigger, deleteRunTrigger, presentRunTrigger } from "./service.ts";

const tags = ["run-triggers"];
const security = [{ bearer: [] }];

const RunTrigger = z
  .object({
    id: z.string(),
    workspaceId: z.string().openapi({ description: "The target: where runs are queued" }),
    sourceWorkspaceId: z.string(),
    sourceWorkspaceName: z.string(),
    createdBy: ActorSchema.nullable(),
    createdAt: z.string(),
  })
  .openapi("RunTrigger");
const CreateRunTrigger = z
  .strictObject({
    sourceWorkspaceId: WorkspaceRef.openapi({
      description: "The workspace whose applied runs queue plans on this one (id or name)",
    }),
  })
  .openapi("CreateRunTrigger");
const WorkspaceParams = z.strictObject({
  workspaceId: WorkspaceRef.openapi({ param: { name: "workspaceId", in: "path" } }),
});
const TriggerParams = z.strictObject({ triggerId: idParam("rt", "triggerId") });

export const runTriggerRoutes = newRouter()
  .openapi(
    createRoute({
      method: "post",
      operationId: "createRunTrigger",
      path: "/workspaces/{workspaceId}/run-triggers",
      tags,
      summary: "Queue plans on this workspace when a source workspace's run is applied",
      security,
      middleware: [requirePerson()] as const,
      request: { params: WorkspaceParams, body: jsonBody(CreateRunTrigger) },
      responses: {
        201: jsonResponse(RunTrigger, "The trigger"),
        ...errorResponses(400, 401, 403, 404, 409, 413, 415),
      },
    }),
    async (c) => {
      const { principal, workspace } = await workspaceOf(
        c,
        c.req.valid("param").workspaceId,
        "run_triggers.manage",
      );
      const { workspace: source } = await workspaceOf(
        c,
        c.req.valid("json").sourceWorkspaceId,
        "workspace.read",
      );
      const row = valueOrThrow(
        await createRunTrigger(c.var.deps, workspace, source, actorOf(principal)),
      );
      return c.json(presentRunTrigger(row, source.name), 201);
    },
  )
  .openapi(
    createRoute({
      method: "get",
      operationId: "listRunTriggers",
      path: "/workspaces/{workspaceId}/run-triggers",
      tags,
      summary: "List the run triggers that queue runs on this workspace",
      security,
      middleware: [requirePerson()] as const,
      request: { params: WorkspaceParams },
      responses: {
        200: jsonResponse(z.object({ runTriggers: z.array(RunTrigger) }), "The triggers"),
        ...errorResponses(400, 401, 404),
      },
    }),
    async (c) => {
      const { workspace } = await workspaceOf(
        c,
        c.req.valid("param").workspaceId,
        "workspace.read",
      );
      const rows = await listTriggersOf(c.var.db, workspace.id);
      return c.json(
        { runTriggers: rows.map((r) => presentRunTrigger(r.trigger, r.sourceName)) },
        200,
      );
    },
  )
  .openapi(
    createRoute({
      method: "delete",
      operationId: "deleteRunTrigger",
      path: "/run-triggers/{triggerId}",
      tags,
      summary: "Delete a run trigger",
      security,
      middleware: [requirePerson()] as const,
      request: { params: TriggerParams },
      responses: { 204: { description: "Deleted" }, ...errorResponses(400, 401, 403, 404) },
    }),
    async (c) => {
      const { triggerId } = c.req.valid("param");
      const row = await getRunTrigger(c.var.db, c.var.principal.orgId, triggerId);
      const target = row && (await getWorkspaceById(c.var.db, row.workspaceId));
      if (!row || !target) {
        throw new ApiError("NOT_FOUND", `run trigger ${triggerId} not found`);
      }
      try {
        await workspaceOf(c, target.id, "run_triggers.manage");
      } catch (error) {
        if (error instanceof ApiError && error.code === "NOT_FOUND") {
          throw new ApiError("NOT_FOUND", `run trigger ${triggerId} not found`);
        }
        throw error;
      }
      await deleteRunTrigger(c.var.deps, row, actorOf(c.var.principal));
      return c.body(null, 204);
    },
  );
