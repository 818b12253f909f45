/**
 * Dashboard pages for a workspace's notification configurations, through the same services and
 * the same permission (`notifications.manage`, admin access) as `/api/v1/…/notifications`.
 */
import { z } from "@hono/zod-openapi";
import { type Context, Hono } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { actorOf } from "../authz/principal.ts";
import { ApiError, valueOrThrow } from "../errors.ts";
import { DESTINATION_TYPES, NOTIFICATION_TRIGGERS } from "../events/model.ts";
import { listNotifications } from "../notifications/queries.ts";
import {
  createNotification,
  deleteNotification,
  findNotification,
  presentDelivery,
  presentNotification,
  recentDeliveries,
  updateNotification,
  verifyNotification,
} from "../notifications/service.ts";
import { idOf, noticeText, readForm, redirectWithNotice, viewerOf } from "./forms.ts";
import { NotificationsPage, triggerField } from "./pages/notifications.tsx";
import type { UiEnv } from "./session.ts";
import { workspaceOf } from "./workspace-routes.tsx";

/** How many deliveries the page shows per configuration. */
const SHOWN_DELIVERIES = 10;

const NOTICES = {
  enabled: "Notification enabled.",
  disabled: "Notification disabled.",
  deleted: "Notification deleted.",
};

const BASE_FIELDS = {
  name: z.string().trim().min(1).max(100),
  url: z.string().trim().min(1).max(2000),
  destinationType: z.enum(DESTINATION_TYPES),
};

/** The form's fields, and one checkbox per trigger (`trigger:run:errored=on`); nothing else. */
const CreateForm = z
  .object(BASE_FIELDS)
  .catchall(z.literal("on"))
  .superRefine((form, ctx) => {
    const known = new Set<string>([
      ...Object.keys(BASE_FIELDS),
      ...NOTIFICATION_TRIGGERS.map(triggerField),
    ]);
    for (const key of Object.keys(form).filter((k) => !known.has(k))) {
      ctx.addIssue({ code: "custom", path: [key], message: "is not a field of this form" });
    }
  })
  .transform((form) => ({
    name: form.name,
    url: form.url,
    destinationType: form.destinationType,
    triggers: NOTIFICATION_TRIGGERS.filter((t) => form[triggerField(t)] === "on"),
  }));

const Empty = z.strictObject({});

async function render(
  c: Context<UiEnv>,
  extra: {
    created?: { name: string; secret: string };
    verified?: ReturnType<typeof presentDelivery>;
    status?: ContentfulStatusCode;
  } = {},
) {
  const { row } = await workspaceOf(c, "notifications.manage");
  const rows = await listNotifications(c.var.db, row.id);
  const configs = await Promise.all(
    rows.map(async (config) => ({
      config: presentNotification(config),
      deliveries: (await recentDeliveries(c.var.deps, config, SHOWN_DELIVERIES)).map(
        presentDelivery,
      ),
    })),
  );
  return c.html(
    <NotificationsPage
      viewer={viewerOf(c)}
      workspace={{ id: row.id, name: row.name }}
      configs={configs}
      created={extra.created}
      verified={extra.verified}
      notice={noticeText(c, NOTICES)}
    />,
    extra.status ?? 200,
  );
}

/** The workspace's configuration of the path; one of another workspace is not found. */
async function configOf(c: Context<UiEnv>) {
  const { row: workspace } = await workspaceOf(c, "notifications.manage");
  const id = idOf(c, "notificationId", "nc");
  const config = valueOrThrow(await findNotification(c.var.deps, c.var.session.orgId, id));
  if (config.workspaceId !== workspace.id) {
    throw new ApiError("NOT_FOUND", `notification ${id} not found`);
  }
  return { workspace, config };
}

const pagePath = (workspaceId: string) => `/ui/workspaces/${workspaceId}/notifications`;
const actor = (c: Context<UiEnv>) => actorOf(c.var.session.principal);

export const notificationPages = new Hono<UiEnv>()
  .get("/:workspaceId/notifications", (c) => render(c))
  .post("/:workspaceId/notifications", async (c) => {
    const { row: workspace } = await workspaceOf(c, "notifications.manage");
    const form = await readForm(c, CreateForm);
    const created = valueOrThrow(
      await createNotification(c.var.deps, workspace, { ...form, enabled: true }, actor(c)),
    );
    return render(c, { created: { name: created.row.name, secret: created.secret }, status: 201 });
  })
  .post("/:workspaceId/notifications/:notificationId/:toggle{enable|disable}", async (c) => {
    const { workspace, config } = await configOf(c);
    await readForm(c, Empty);
    const enabled = c.req.param("toggle") === "enable";
    valueOrThrow(await updateNotification(c.var.deps, config, { enabled }, actor(c)));
    return redirectWithNotice(c, pagePath(workspace.id), enabled ? "enabled" : "disabled");
  })
  .post("/:workspaceId/notifications/:notificationId/verify", async (c) => {
    const { workspace, config } = await configOf(c);
    await readForm(c, Empty);
    const delivery = await verifyNotification(c.var.deps, config, workspace);
    return render(c, { verified: presentDelivery(delivery) });
  })
  .post("/:workspaceId/notifications/:notificationId/delete", async (c) => {
    const { workspace, config } = await configOf(c);
    await readForm(c, Empty);
    await deleteNotification(c.var.deps, config, actor(c));
    return redirectWithNotice(c, pagePath(workspace.id), "deleted");
  });
