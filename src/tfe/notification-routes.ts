/**
 * The TFE API's notification configurations over Outpost's (go-tfe
 * `NotificationConfigurations`, the `tfe_notification_configuration` resource): a workspace's
 * list and create, read, update and delete by id, all with admin access to the workspace
 * (`notifications.manage`, as on `/api/v1`). The trigger names and the `generic`, `slack` and
 * `microsoft-teams` destinations are Terraform Cloud's; `email` has no Outpost counterpart and a
 * `token` cannot be chosen (Outpost makes the signing secret and answers it once, on create, in
 * `token`): both are refused.
 */
import { createRoute, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { actorOf } from "../authz/principal.ts";
import type { AppEnv } from "../env.ts";
import { ApiError, reasonError, valueOrThrow } from "../errors.ts";
import { DESTINATION_TYPES, NOTIFICATION_TRIGGERS } from "../events/model.ts";
import { invalidInput } from "../lib/reason.ts";
import { personOf, requirePerson } from "../middleware/auth.ts";
import { listNotifications, type NotificationRow } from "../notifications/queries.ts";
import {
  createNotification,
  deleteNotification,
  findNotification,
  updateNotification,
} from "../notifications/service.ts";
import { idParam, newRouter } from "../router.ts";
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

const WorkspaceParams = z.strictObject({
  workspaceId: idParam("ws", "workspaceId"),
});
const NotificationParams = z.strictObject({
  notificationId: idParam("nc", "notificationId"),
});

const Attributes = z.object({
  name: z.string().trim().min(1).max(100).optional(),
  "destination-type": z
    .enum([...DESTINATION_TYPES, "email"])
    .refine((type) => type !== "email", {
      message: "email destinations are not supported: use generic, slack or microsoft-teams",
    })
    .optional(),
  url: z.string().max(2000).optional(),
  enabled: z.boolean().optional(),
  triggers: z
    .array(z.enum(NOTIFICATION_TRIGGERS))
    .max(NOTIFICATION_TRIGGERS.length)
    .refine((t) => new Set(t).size === t.length, "must not repeat a trigger")
    .optional(),
  token: z
    .string()
    .max(0, "token is not supported: Outpost makes the signing secret and answers it on create")
    .nullable()
    .optional(),
});
const NotificationDocument = z
  .object({
    data: z.object({ type: z.literal("notification-configurations"), attributes: Attributes }),
  })
  .openapi("TfeNotificationDocument");

/** The destination a document names (the schema has refused email already). */
function destinationOf(type: string | undefined) {
  return DESTINATION_TYPES.find((known) => known === type);
}

function notificationResource(row: NotificationRow, secret?: string): Resource {
  return {
    id: row.id,
    type: "notification-configurations",
    attributes: {
      name: row.name,
      "destination-type": row.destinationType,
      url: row.url,
      enabled: row.enabled,
      triggers: row.triggers,
      "created-at": new Date(row.createdAt).toISOString(),
      "updated-at": new Date(row.updatedAt).toISOString(),
      // The Standard Webhooks secret every delivery is signed with: in the create answer only.
      token: secret ?? null,
    },
    relationships: { subscribable: related("workspaces", row.workspaceId) },
  };
}

/** The configuration an id names, once the caller may manage notifications there (else 404). */
async function notificationOf(c: Context<AppEnv>, id: string) {
  const row = valueOrThrow(await findNotification(c.var.deps, personOf(c).orgId, id));
  try {
    await workspaceOf(c, row.workspaceId, "notifications.manage");
    return row;
  } catch (error) {
    if (error instanceof ApiError && error.code === "NOT_FOUND") {
      throw new ApiError("NOT_FOUND", `notification ${id} not found`);
    }
    throw error;
  }
}

const byId = (method: "get" | "delete", operationId: string, summary: string) =>
  createRoute({
    method,
    operationId,
    path: "/notification-configurations/{notificationId}",
    tags,
    summary,
    security,
    middleware: [requirePerson()] as const,
    request: { params: NotificationParams },
    responses: {
      ...(method === "get"
        ? { 200: documentResponse("The configuration") }
        : { 204: { description: "Deleted" } }),
      ...errorDocuments(400, 401, 403, 404),
    },
  });

export const notificationRoutes = newRouter()
  .openapi(
    createRoute({
      method: "get",
      operationId: "tfeListNotifications",
      path: "/workspaces/{workspaceId}/notification-configurations",
      tags,
      summary: "A workspace's notification configurations (TFE API)",
      security,
      middleware: [requirePerson()] as const,
      request: { params: WorkspaceParams },
      responses: {
        200: documentResponse("The configurations"),
        ...errorDocuments(400, 401, 403, 404),
      },
    }),
    async (c) => {
      const { workspaceId } = c.req.valid("param");
      const { workspace } = await workspaceOf(c, workspaceId, "notifications.manage");
      const rows = await listNotifications(c.var.db, workspace.id);
      return sendDocument(c, { data: rows.map((row) => notificationResource(row)) });
    },
  )
  .openapi(
    createRoute({
      method: "post",
      operationId: "tfeCreateNotification",
      path: "/workspaces/{workspaceId}/notification-configurations",
      tags,
      summary: "Create a notification configuration; its signing secret is in token, once",
      security,
      middleware: [requirePerson()] as const,
      request: { params: WorkspaceParams, body: documentBody(NotificationDocument) },
      responses: {
        201: documentResponse("The configuration"),
        ...errorDocuments(400, 401, 403, 404, 409, 415),
      },
    }),
    async (c) => {
      const { principal, workspace } = await workspaceOf(
        c,
        c.req.valid("param").workspaceId,
        "notifications.manage",
      );
      const attributes = c.req.valid("json").data.attributes;
      const { name, url } = attributes;
      if (name === undefined || url === undefined) {
        const field = name === undefined ? "name" : "url";
        throw reasonError(
          invalidInput(`json.data.attributes.${field}`, `data.attributes.${field} is required`)
            .reason,
        );
      }
      const input = {
        name,
        url,
        destinationType: destinationOf(attributes["destination-type"]) ?? "generic",
        enabled: attributes.enabled ?? true,
        triggers: attributes.triggers ?? [],
      };
      const created = valueOrThrow(
        await createNotification(c.var.deps, workspace, input, actorOf(principal)),
      );
      c.header("cache-control", "no-store");
      return sendDocument(c, { data: notificationResource(created.row, created.secret) }, 201);
    },
  )
  .openapi(
    byId("get", "tfeReadNotification", "A notification configuration (TFE API)"),
    async (c) => {
      const row = await notificationOf(c, c.req.valid("param").notificationId);
      return sendDocument(c, { data: notificationResource(row) });
    },
  )
  .openapi(
    createRoute({
      method: "patch",
      operationId: "tfeUpdateNotification",
      path: "/notification-configurations/{notificationId}",
      tags,
      summary: "Change a notification configuration, only the attributes given (TFE API)",
      security,
      middleware: [requirePerson()] as const,
      request: { params: NotificationParams, body: documentBody(NotificationDocument) },
      responses: {
        200: documentResponse("The configuration"),
        ...errorDocuments(400, 401, 403, 404, 415),
      },
    }),
    async (c) => {
      const row = await notificationOf(c, c.req.valid("param").notificationId);
      const attributes = c.req.valid("json").data.attributes;
      const patch = {
        ...(attributes.name === undefined ? {} : { name: attributes.name }),
        ...(attributes.url === undefined ? {} : { url: attributes.url }),
        ...(attributes.enabled === undefined ? {} : { enabled: attributes.enabled }),
        ...(attributes.triggers === undefined ? {} : { triggers: attributes.triggers }),
        ...(destinationOf(attributes["destination-type"]) === undefined
          ? {}
          : { destinationType: destinationOf(attributes["destination-type"]) }),
      };
      const updated = valueOrThrow(
        await updateNotification(c.var.deps, row, patch, actorOf(personOf(c))),
      );
      return sendDocument(c, { data: notificationResource(updated) });
    },
  )
  .openapi(
    byId("delete", "tfeDeleteNotification", "Delete a notification configuration (TFE API)"),
    async (c) => {
      const row = await notificationOf(c, c.req.valid("param").notificationId);
      await deleteNotification(c.var.deps, row, actorOf(personOf(c)));
      return sendEmpty(c);
    },
  );
