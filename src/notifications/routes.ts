/**
 * Notification configurations: `/api/v1/workspaces/{workspaceId}/notifications` (create, list)
 * and `/api/v1/notifications/{notificationId}` (read, change, delete, rotate the secret, verify,
 * deliveries). Every route needs admin access to the workspace: a destination URL is itself a
 * credential. docs/notifications.md describes payloads and delivery.
 */
import { createRoute, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { ActorSchema } from "../authz/actor.ts";
import { actorOf } from "../authz/principal.ts";
import type { AppEnv } from "../env.ts";
import { ApiError, valueOrThrow } from "../errors.ts";
import { DESTINATION_TYPES, NOTIFICATION_TRIGGERS } from "../events/model.ts";
import { requirePerson } from "../middleware/auth.ts";
import { errorResponses, idParam, jsonBody, jsonResponse, newRouter } from "../router.ts";
import { workspaceOf } from "../workspaces/http.ts";
import { WorkspaceRef } from "../workspaces/model.ts";
import { listNotifications } from "./queries.ts";
import {
  createNotification,
  deleteNotification,
  findNotification,
  presentDelivery,
  presentNotification,
  recentDeliveries,
  rotateNotificationSecret,
  updateNotification,
  verifyNotification,
} from "./service.ts";

const tags = ["notifications"];
const security = [{ bearer: [] }];

const Notification = z
  .object({
    id: z.string(),
    workspaceId: z.string(),
    name: z.string(),
    destinationType: z.enum(DESTINATION_TYPES),
    url: z.string(),
    enabled: z.boolean(),
    triggers: z.array(z.enum(NOTIFICATION_TRIGGERS)),
    createdBy: ActorSchema.nullable(),
    createdAt: z.string().nullable(),
    updatedAt: z.string().nullable(),
  })
  .openapi("NotificationConfiguration");

const WithSecret = Notification.extend({
  secret: z.string().openapi({
    description:
      "The Standard Webhooks signing secret (whsec_…), shown only in this answer: every delivery is signed with it",
  }),
}).openapi("NotificationConfigurationWithSecret");

const Delivery = z
  .object({
    id: z.string().openapi({ description: "The webhook-id header of every attempt" }),
    trigger: z.string(),
    eventId: z.string().nullable(),
    status: z.enum(["pending", "delivered", "failed"]),
    responseStatus: z.number().nullable(),
    attempts: z.number(),
    error: z.string().nullable(),
    createdAt: z.string().nullable(),
    lastAttemptAt: z.string().nullable(),
    nextAttemptAt: z.string().nullable(),
    completedAt: z.string().nullable(),
  })
  .openapi("NotificationDelivery");

const fields = {
  name: z.string().trim().min(1).max(100),
  destinationType: z.enum(DESTINATION_TYPES),
  url: z.string().max(2000).openapi({
    description: "https (plain http only to loopback on a development deployment)",
  }),
  enabled: z.boolean(),
  triggers: z
    .array(z.enum(NOTIFICATION_TRIGGERS))
    .max(NOTIFICATION_TRIGGERS.length)
    .refine((t) => new Set(t).size === t.length, "must not repeat a trigger"),
};

const CreateNotification = z
  .strictObject({
    ...fields,
    destinationType: fields.destinationType.default("generic"),
    enabled: fields.enabled.default(true),
    triggers: fields.triggers.default([]),
  })
  .openapi("CreateNotificationConfiguration");
const UpdateNotification = z
  .strictObject({
    name: fields.name.optional(),
    destinationType: fields.destinationType.optional(),
    url: fields.url.optional(),
    enabled: fields.enabled.optional(),
    triggers: fields.triggers.optional(),
  })
  .openapi("UpdateNotificationConfiguration");

const WorkspaceParams = z.strictObject({
  workspaceId: WorkspaceRef.openapi({ param: { name: "workspaceId", in: "path" } }),
});
const NotificationParams = z.strictObject({ notificationId: idParam("nc", "notificationId") });
const DeliveriesQuery = z.strictObject({
  limit: z.coerce
    .number()
    .int()
    .min(1)
    .max(100)
    .default(20)
    .openapi({ param: { name: "limit", in: "query" } }),
});

/**
 * The configuration and its workspace once `may` allowed managing notifications there; one of
 * a workspace the caller cannot see is not found, like a missing one.
 */
async function notificationOf(c: Context<AppEnv>, id: string) {
  const principal = c.var.principal;
  const found = await findNotification(c.var.deps, principal.orgId, id);
  const row = valueOrThrow(found);
  try {
    const { workspace } = await workspaceOf(c, row.workspaceId, "notifications.manage");
    return { row, workspace };
  } catch (error) {
    if (error instanceof ApiError && error.code === "NOT_FOUND") {
      throw new ApiError("NOT_FOUND", `notification ${id} not found`);
    }
    throw error;
  }
}

const byId = <M extends "get" | "patch" | "delete" | "post", P extends string>(
  method: M,
  path: P,
  operationId: string,
  summary: string,
) => ({
  method,
  path: `/notifications/{notificationId}${path}` as `/notifications/{notificationId}${P}`,
  operationId,
  tags,
  summary,
  security,
});

export const notificationRoutes = newRouter()
  .openapi(
    createRoute({
      method: "post",
      operationId: "createNotificationConfiguration",
      path: "/workspaces/{workspaceId}/notifications",
      tags,
      summary: "Create a notification configuration; its signing secret is shown once",
      security,
      middleware: [requirePerson()] as const,
      request: { params: WorkspaceParams, body: jsonBody(CreateNotification) },
      responses: {
        201: jsonResponse(WithSecret, "The configuration, with its secret"),
        ...errorResponses(400, 401, 403, 404, 409, 413, 415, 503),
      },
    }),
    async (c) => {
      const { principal, workspace } = await workspaceOf(
        c,
        c.req.valid("param").workspaceId,
        "notifications.manage",
      );
      const created = valueOrThrow(
        await createNotification(c.var.deps, workspace, c.req.valid("json"), actorOf(principal)),
      );
      return c.json({ ...presentNotification(created.row), secret: created.secret }, 201);
    },
  )
  .openapi(
    createRoute({
      method: "get",
      operationId: "listNotificationConfigurations",
      path: "/workspaces/{workspaceId}/notifications",
      tags,
      summary: "List a workspace's notification configurations",
      security,
      middleware: [requirePerson()] as const,
      request: { params: WorkspaceParams },
      responses: {
        200: jsonResponse(z.object({ notifications: z.array(Notification) }), "The configurations"),
        ...errorResponses(400, 401, 403, 404),
      },
    }),
    async (c) => {
      const { workspace } = await workspaceOf(
        c,
        c.req.valid("param").workspaceId,
        "notifications.manage",
      );
      const rows = await listNotifications(c.var.db, workspace.id);
      return c.json({ notifications: rows.map(presentNotification) }, 200);
    },
  )
  .openapi(
    createRoute({
      ...byId("get", "", "getNotificationConfiguration", "A notification configuration"),
      middleware: [requirePerson()] as const,
      request: { params: NotificationParams },
      responses: {
        200: jsonResponse(Notification, "The configuration"),
        ...errorResponses(400, 401, 403, 404),
      },
    }),
    async (c) => {
      const { row } = await notificationOf(c, c.req.valid("param").notificationId);
      return c.json(presentNotification(row), 200);
    },
  )
  .openapi(
    createRoute({
      ...byId(
        "patch",
        "",
        "updateNotificationConfiguration",
        "Change a notification configuration",
      ),
      middleware: [requirePerson()] as const,
      request: { params: NotificationParams, body: jsonBody(UpdateNotification) },
      responses: {
        200: jsonResponse(Notification, "The changed configuration"),
        ...errorResponses(400, 401, 403, 404, 413, 415),
      },
    }),
    async (c) => {
      const { row } = await notificationOf(c, c.req.valid("param").notificationId);
      const patch = Object.fromEntries(
        Object.entries(c.req.valid("json")).filter(([, value]) => value !== undefined),
      );
      const updated = valueOrThrow(
        await updateNotification(c.var.deps, row, patch, actorOf(c.var.principal)),
      );
      return c.json(presentNotification(updated), 200);
    },
  )
  .openapi(
    createRoute({
      ...byId(
        "delete",
        "",
        "deleteNotificationConfiguration",
        "Delete a notification configuration",
      ),
      middleware: [requirePerson()] as const,
      request: { params: NotificationParams },
      responses: { 204: { description: "Deleted" }, ...errorResponses(400, 401, 403, 404) },
    }),
    async (c) => {
      const { row } = await notificationOf(c, c.req.valid("param").notificationId);
      await deleteNotification(c.var.deps, row, actorOf(c.var.principal));
      return c.body(null, 204);
    },
  )
  .openapi(
    createRoute({
      ...byId(
        "post",
        "/rotate-secret",
        "rotateNotificationSecret",
        "Replace the signing secret; the new one is shown once",
      ),
      middleware: [requirePerson()] as const,
      request: { params: NotificationParams },
      responses: {
        200: jsonResponse(WithSecret, "The configuration, with its new secret"),
        ...errorResponses(400, 401, 403, 404, 503),
      },
    }),
    async (c) => {
      const { row } = await notificationOf(c, c.req.valid("param").notificationId);
      const secret = valueOrThrow(
        await rotateNotificationSecret(c.var.deps, row, actorOf(c.var.principal)),
      );
      return c.json({ ...presentNotification(row), secret }, 200);
    },
  )
  .openapi(
    createRoute({
      ...byId(
        "post",
        "/verify",
        "verifyNotificationConfiguration",
        "Send a test delivery now and answer how it went",
      ),
      middleware: [requirePerson()] as const,
      request: { params: NotificationParams },
      responses: {
        200: jsonResponse(Delivery, "The test delivery, delivered or failed"),
        ...errorResponses(400, 401, 403, 404),
      },
    }),
    async (c) => {
      const { row, workspace } = await notificationOf(c, c.req.valid("param").notificationId);
      return c.json(presentDelivery(await verifyNotification(c.var.deps, row, workspace)), 200);
    },
  )
  .openapi(
    createRoute({
      ...byId("get", "/deliveries", "listNotificationDeliveries", "The last deliveries"),
      middleware: [requirePerson()] as const,
      request: { params: NotificationParams, query: DeliveriesQuery },
      responses: {
        200: jsonResponse(z.object({ deliveries: z.array(Delivery) }), "Newest first"),
        ...errorResponses(400, 401, 403, 404),
      },
    }),
    async (c) => {
      const { row } = await notificationOf(c, c.req.valid("param").notificationId);
      const rows = await recentDeliveries(c.var.deps, row, c.req.valid("query").limit);
      return c.json({ deliveries: rows.map(presentDelivery) }, 200);
    },
  );
