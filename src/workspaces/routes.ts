/**
 * `/api/v1/workspaces`: admins create, update and delete; every role reads; members and up lock
 * and unlock. `{workspaceId}` in a path is the workspace's `ws_…` id or its name.
 */
import { createRoute, z } from "@hono/zod-openapi";
import { reasonError, valueOrThrow } from "../errors.ts";
import { decodeCursor, PageQuery, takePage } from "../lib/paging.ts";
import { orgPrincipal, requireRole } from "../middleware/auth.ts";
import { errorResponses, jsonBody, jsonResponse, newRouter } from "../router.ts";
import { roleAtLeast } from "../tokens/model.ts";
import { deleteWorkspace } from "./delete.ts";
import { lockWorkspace, unlockWorkspace } from "./lock.ts";
import {
  CreateWorkspace,
  LockBody,
  Params,
  UnlockQuery,
  UpdateWorkspace,
  WorkspaceSchema,
} from "./schemas.ts";
import {
  createWorkspace,
  listWorkspaces,
  presentWorkspace,
  resolveWorkspace,
  updateWorkspace,
  workspaceNotFound,
} from "./service.ts";

const tags = ["workspaces"];
const security = [{ bearer: [] }];

export const workspaceRoutes = newRouter()
  .openapi(
    createRoute({
      method: "post",
      operationId: "createWorkspace",
      path: "/",
      tags,
      summary: "Create a workspace",
      security,
      middleware: [requireRole("admin")] as const,
      request: { body: jsonBody(CreateWorkspace) },
      responses: {
        201: jsonResponse(WorkspaceSchema, "The workspace"),
        ...errorResponses(400, 401, 403, 409, 413, 415),
      },
    }),
    async (c) => {
      const principal = orgPrincipal(c);
      const body = c.req.valid("json");
      const result = await createWorkspace(c.var.deps, {
        orgId: principal.orgId,
        actor: principal.tokenId,
        settings: body,
      });
      return c.json(valueOrThrow(result), 201);
    },
  )
  .openapi(
    createRoute({
      method: "get",
      operationId: "listWorkspaces",
      path: "/",
      tags,
      summary: "List workspaces by name, a page at a time, optionally by part of the name",
      security,
      middleware: [requireRole("reader")] as const,
      request: {
        query: PageQuery.extend({
          search: z
            .string()
            .min(1)
            .max(90)
            .optional()
            .openapi({
              param: { name: "search", in: "query" },
              description: "Only workspaces whose name contains this text",
            }),
        }),
      },
      responses: {
        200: jsonResponse(
          z.object({ workspaces: z.array(WorkspaceSchema), nextCursor: z.string().nullable() }),
          "A page of workspaces; pass nextCursor as cursor for the next",
        ),
        ...errorResponses(400, 401),
      },
    }),
    async (c) => {
      const principal = orgPrincipal(c);
      const { limit, cursor, search } = c.req.valid("query");
      const after =
        cursor === undefined ? undefined : valueOrThrow(decodeCursor(cursor, ["string"]))[0];
      const rows = await listWorkspaces(c.var.db, principal.orgId, { limit, after, search });
      const page = takePage(rows, limit, (r) => [r.row.name]);
      return c.json(
        { workspaces: page.items.map((r) => r.workspace), nextCursor: page.nextCursor },
        200,
      );
    },
  )
  .openapi(
    createRoute({
      method: "get",
      operationId: "getWorkspace",
      path: "/{workspaceId}",
      tags,
      summary: "Get a workspace by id or name",
      security,
      middleware: [requireRole("reader")] as const,
      request: { params: Params },
      responses: {
        200: jsonResponse(WorkspaceSchema, "The workspace"),
        ...errorResponses(400, 401, 404),
      },
    }),
    async (c) => {
      const principal = orgPrincipal(c);
      const { workspaceId } = c.req.valid("param");
      const row = await resolveWorkspace(c.var.db, principal.orgId, workspaceId);
      if (!row) {
        throw reasonError(workspaceNotFound(workspaceId).reason);
      }
      return c.json(presentWorkspace(row), 200);
    },
  )
  .openapi(
    createRoute({
      method: "patch",
      operationId: "updateWorkspace",
      path: "/{workspaceId}",
      tags,
      summary: "Change a workspace's settings (only the fields given)",
      description:
        "Switching to local without poolId drops the pool; setting vcsRepoUrl to null drops the branch and trigger paths.",
      security,
      middleware: [requireRole("admin")] as const,
      request: { params: Params, body: jsonBody(UpdateWorkspace) },
      responses: {
        200: jsonResponse(WorkspaceSchema, "The workspace"),
        ...errorResponses(400, 401, 403, 404, 409, 413, 415),
      },
    }),
    async (c) => {
      const principal = orgPrincipal(c);
      const { workspaceId } = c.req.valid("param");
      const result = await updateWorkspace(c.var.deps, {
        orgId: principal.orgId,
        ref: workspaceId,
        actor: principal.tokenId,
        patch: c.req.valid("json"),
      });
      return c.json(valueOrThrow(result), 200);
    },
  )
  .openapi(
    createRoute({
      method: "delete",
      operationId: "deleteWorkspace",
      path: "/{workspaceId}",
      tags,
      summary: "Delete a workspace with its variables, configurations, runs and state",
      description: "Refused (409) while a run is active, the workspace is locked or its state is.",
      security,
      middleware: [requireRole("admin")] as const,
      request: { params: Params },
      responses: {
        200: jsonResponse(WorkspaceSchema, "The deleted workspace"),
        ...errorResponses(400, 401, 403, 404, 409),
      },
    }),
    async (c) => {
      const principal = orgPrincipal(c);
      const { workspaceId } = c.req.valid("param");
      const result = await deleteWorkspace(c.var.deps, {
        orgId: principal.orgId,
        ref: workspaceId,
        actor: principal.tokenId,
      });
      return c.json(valueOrThrow(result), 200);
    },
  )
  .openapi(
    createRoute({
      method: "post",
      operationId: "lockWorkspace",
      path: "/{workspaceId}/lock",
      tags,
      summary: "Lock a workspace: new runs wait until it is unlocked",
      description: "Locking a workspace the calling token already holds succeeds unchanged.",
      security,
      middleware: [requireRole("member")] as const,
      request: { params: Params, body: jsonBody(LockBody) },
      responses: {
        200: jsonResponse(WorkspaceSchema, "The locked workspace"),
        ...errorResponses(400, 401, 403, 404, 409, 413, 415),
      },
    }),
    async (c) => {
      const principal = orgPrincipal(c);
      const { workspaceId } = c.req.valid("param");
      const result = await lockWorkspace(c.var.deps, {
        orgId: principal.orgId,
        ref: workspaceId,
        tokenId: principal.tokenId,
        reason: c.req.valid("json").reason,
      });
      return c.json(valueOrThrow(result), 200);
    },
  )
  .openapi(
    createRoute({
      method: "post",
      operationId: "unlockWorkspace",
      path: "/{workspaceId}/unlock",
      tags,
      summary: "Unlock a workspace (the holder, or an admin with ?force=true)",
      description:
        "Unlocking an unlocked workspace succeeds unchanged. Forced unlocks are audited.",
      security,
      middleware: [requireRole("member")] as const,
      request: { params: Params, query: UnlockQuery },
      responses: {
        200: jsonResponse(WorkspaceSchema, "The unlocked workspace"),
        ...errorResponses(400, 401, 403, 404, 409),
      },
    }),
    async (c) => {
      const principal = orgPrincipal(c);
      const { workspaceId } = c.req.valid("param");
      const result = await unlockWorkspace(c.var.deps, {
        orgId: principal.orgId,
        ref: workspaceId,
        tokenId: principal.tokenId,
        isAdmin: roleAtLeast(principal.role, "admin"),
        force: c.req.valid("query").force === "true",
      });
      return c.json(valueOrThrow(result), 200);
    },
  );
