/**
 * Dashboard pages for a workspace's schedules, through the same services and the same
 * permission (`schedule.manage`, admin access) as `/api/v1/workspaces/{id}/schedules`.
 */
import { z } from "@hono/zod-openapi";
import { RUN_OPERATIONS } from "@outpost/protocol";
import { type Context, Hono } from "hono";
import { actorOf } from "../authz/principal.ts";
import { valueOrThrow } from "../errors.ts";
import { createSchedule, deleteSchedule, listSchedules } from "../schedules/service.ts";
import { idOf, noticeText, readForm, redirectWithNotice, viewerOf } from "./forms.ts";
import { SchedulesPage } from "./pages/schedules.tsx";
import type { UiEnv } from "./session.ts";
import { workspaceOf } from "./workspace-routes.tsx";

const NOTICES = { created: "Schedule created.", deleted: "Schedule deleted." };

const CreateForm = z.strictObject({
  cron: z.string().trim().min(1).max(200),
  timezone: z.string().trim().min(1).max(64).default("UTC"),
  operation: z.enum(RUN_OPERATIONS),
});

const pagePath = (workspaceId: string) => `/ui/workspaces/${workspaceId}/schedules`;
const actor = (c: Context<UiEnv>) => actorOf(c.var.session.principal);

export const schedulePages = new Hono<UiEnv>()
  .get("/:workspaceId/schedules", async (c) => {
    const { row } = await workspaceOf(c, "schedule.manage");
    return c.html(
      <SchedulesPage
        viewer={viewerOf(c)}
        workspace={{ id: row.id, name: row.name }}
        schedules={await listSchedules(c.var.deps, row.id)}
        notice={noticeText(c, NOTICES)}
      />,
    );
  })
  .post("/:workspaceId/schedules", async (c) => {
    const { row } = await workspaceOf(c, "schedule.manage");
    const form = await readForm(c, CreateForm);
    valueOrThrow(await createSchedule(c.var.deps, row, form, actor(c)));
    return redirectWithNotice(c, pagePath(row.id), "created");
  })
  .post("/:workspaceId/schedules/:scheduleId/delete", async (c) => {
    const { row } = await workspaceOf(c, "schedule.manage");
    const scheduleId = idOf(c, "scheduleId", "sch");
    await readForm(c, z.strictObject({}));
    valueOrThrow(await deleteSchedule(c.var.deps, row, scheduleId, actor(c)));
    return redirectWithNotice(c, pagePath(row.id), "deleted");
  });
