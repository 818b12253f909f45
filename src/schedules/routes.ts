/**
 * `/api/v1/workspaces/{workspaceId}/schedules`: admins create and delete, every role reads. A
 * schedule is five-field cron in an IANA time zone; each occurrence queues one run of its
 * operation, marked `source: "schedule"` (docs/workspaces.md, "Schedules").
 */
import { createRoute, z } from "@hono/zod-openapi";
import { RUN_OPERATIONS } from "@outpost/protocol";
import { ActorSchema } from "../authz/actor.ts";
import { actorOf } from "../authz/principal.ts";
import { valueOrThrow } from "../errors.ts";
import { requirePerson } from "../middleware/auth.ts";
import { errorResponses, idParam, jsonBody, jsonResponse, newRouter } from "../router.ts";
import { workspaceOf } from "../workspaces/http.ts";
import { WorkspaceRef } from "../workspaces/model.ts";
import { createSchedule, deleteSchedule, listSchedules, type ScheduleView } from "./service.ts";

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

const Occurrence = z
  .object({
    at: z.string().openapi({ description: "The occurrence time the tick handled" }),
    status: z.enum(["queued", "skipped", "failed"]).openapi({
      description:
        "queued: its run was queued; skipped: the schedule's previous run was still active; failed: the run was refused (reason)",
    }),
    runId: z.string().nullable(),
    reason: z.string().nullable(),
  })
  .openapi("ScheduleOccurrence");

const Schedule = z
  .object({
    id: z.string(),
    workspaceId: z.string(),
    cron: z.string(),
    timezone: z.string(),
    operation: z.enum(RUN_OPERATIONS),
    nextRunAt: z.string().nullable().openapi({ description: "The next occurrence" }),
    lastOccurrence: Occurrence.nullable(),
    createdBy: ActorSchema.nullable(),
    createdAt: z.string(),
  })
  .openapi("Schedule");

const CreateSchedule = z
  .strictObject({
    cron: z.string().min(1).max(200).openapi({
      description: "Five fields: minute hour day-of-month month day-of-week",
      example: "0 6 * * 1-5",
    }),
    timezone: z.string().max(64).default("UTC").openapi({ example: "Europe/Berlin" }),
    operation: z.enum(RUN_OPERATIONS).openapi({
      description:
        "The run each occurrence queues: plan (speculative), apply, refresh or destroy; apply, refresh and destroy follow the workspace's autoApply",
    }),
  })
  .openapi("CreateSchedule");

const WorkspaceParams = z.strictObject({
  workspaceId: WorkspaceRef.openapi({ param: { name: "workspaceId", in: "path" } }),
});
const ScheduleParams = WorkspaceParams.extend({ scheduleId: idParam("sch", "scheduleId") });

function presentSchedule(view: ScheduleView) {
  const last = view.lastOccurrence;
  return {
    id: view.id,
    workspaceId: view.workspaceId,
    cron: view.cron,
    timezone: view.timezone,
    operation: view.operation,
    nextRunAt: view.nextRunAt >= Number.MAX_SAFE_INTEGER ? null : iso(view.nextRunAt),
    lastOccurrence: last
      ? {
          at: new Date(last.occurrenceAt).toISOString(),
          status: last.status,
          runId: last.runId,
          reason: last.reason,
        }
      : null,
    createdBy: view.createdBy ?? null,
    createdAt: new Date(view.createdAt).toISOString(),
  };
}

export const scheduleRoutes = newRouter()
  .openapi(
    createRoute({
      method: "post",
      operationId: "createSchedule",
      path: "/{workspaceId}/schedules",
      tags: ["schedules"],
      summary: "Create a cron schedule that queues a run at each occurrence",
      security: [{ bearer: [] }],
      middleware: [requirePerson()] as const,
      request: { params: WorkspaceParams, body: jsonBody(CreateSchedule) },
      responses: {
        201: jsonResponse(Schedule, "The schedule"),
        ...errorResponses(400, 401, 403, 404, 409, 413, 415),
      },
    }),
    async (c) => {
      const body = c.req.valid("json");
      const { principal, workspace } = await workspaceOf(
        c,
        c.req.valid("param").workspaceId,
        "schedule.manage",
      );
      const result = await createSchedule(c.var.deps, workspace, body, actorOf(principal));
      return c.json(presentSchedule(valueOrThrow(result)), 201);
    },
  )
  .openapi(
    createRoute({
      method: "get",
      operationId: "listSchedules",
      path: "/{workspaceId}/schedules",
      tags: ["schedules"],
      summary: "List a workspace's schedules with their latest occurrence",
      security: [{ bearer: [] }],
      middleware: [requirePerson()] as const,
      request: { params: WorkspaceParams },
      responses: {
        200: jsonResponse(z.object({ schedules: z.array(Schedule) }), "The schedules"),
        ...errorResponses(400, 401, 404),
      },
    }),
    async (c) => {
      const { workspace } = await workspaceOf(
        c,
        c.req.valid("param").workspaceId,
        "workspace.read",
      );
      const views = await listSchedules(c.var.deps, workspace.id);
      return c.json({ schedules: views.map(presentSchedule) }, 200);
    },
  )
  .openapi(
    createRoute({
      method: "delete",
      operationId: "deleteSchedule",
      path: "/{workspaceId}/schedules/{scheduleId}",
      tags: ["schedules"],
      summary: "Delete a schedule (runs it queued are left as they are)",
      security: [{ bearer: [] }],
      middleware: [requirePerson()] as const,
      request: { params: ScheduleParams },
      responses: { 204: { description: "Deleted" }, ...errorResponses(400, 401, 403, 404) },
    }),
    async (c) => {
      const { workspaceId, scheduleId } = c.req.valid("param");
      const { principal, workspace } = await workspaceOf(c, workspaceId, "schedule.manage");
      valueOrThrow(await deleteSchedule(c.var.deps, workspace, scheduleId, actorOf(principal)));
      return c.body(null, 204);
    },
  );
