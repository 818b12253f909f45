/**
 * `/api/v1/workspaces`: organization admins create; what a caller may do to a workspace is
 * `may`'s (read to see it, write to lock and unlock, admin to change settings, delete or
 * force-unlock). `{workspaceId}` in a path is the workspace's `ws_…` id or its name.
 */
import { createRoute, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { authorizeProject } from "../authz/http.ts";
import { decideWorkspace } from "../authz/model.ts";
import { actorOf, principalId } from "../authz/principal.ts";
import type { AppEnv } from "../env.ts";
import { valueOrThrow } from "../errors.ts";
import { decodeCursor, PageQuery, takePage } from "../lib/paging.ts";
import { personOf, requirePermission, requirePerson } from "../middleware/auth.ts";
import { namedProject } from "../projects/http.ts";
import { ProjectRef } from "../projects/model.ts";
import { defaultProject } from "../projects/service.ts";
import { errorResponses, jsonBody, jsonResponse, newRouter } from "../router.ts";
import {
  changeWorkspaceTags,
  tagsOfWorkspaces,
  workspaceTagNames,
} from "../workspace-tags/service.ts";
import { deleteWorkspace } from "./delete.ts";
import { workspaceOf } from "./http.ts";
import { lockWorkspace, unlockWorkspace } from "./lock.ts";
import {
  CreateWorkspace,
  LockBody,
  Params,
  UnlockQuery,
  UpdateWorkspace,
  WorkspaceSchema,
} from "./schemas.ts";
import { createWorkspace, listWorkspaces, presentWorkspace, updateWorkspace } from "./service.ts";

const tags = ["workspaces"];
const security = [{ bearer: [] }];

/** Gives the workspace exactly `names` when given; answers the tags it then carries. */
async function setTags(c: Context<AppEnv>, workspaceId: string, names: string[] | undefined) {
  const principal = personOf(c);
  if (names === undefined) {
    return workspaceTagNames(c.var.db, principal.orgId, workspaceId);
  }
  const target = { orgId: principal.orgId, workspaceId, actor: actorOf(principal) };
  return valueOrThrow(await changeWorkspaceTags(c.var.deps, target, "replace", names));
}

export const workspaceRoutes = newRouter()
  .openapi(
    createRoute({
      method: "post",
      operationId: "createWorkspace",
      path: "/",
      tags,
      summary: "Create a workspace",
      security,
      middleware: [requirePermission("workspace.create")] as const,
      request: { body: jsonBody(CreateWorkspace) },
      responses: {
        201: jsonResponse(WorkspaceSchema, "The workspace"),
        ...errorResponses(400, 401, 403, 409, 413, 415),
      },
    }),
    async (c) => {
      const principal = personOf(c);
      const { projectId: projectRef, tags: tagNames, ...settings } = c.req.valid("json");
      const project =
        projectRef === undefined
          ? await defaultProject(c.var.deps, principal.orgId)
          : await namedProject(c, projectRef, "json.projectId", "project.add_workspace");
      const result = await createWorkspace(c.var.deps, {
        orgId: principal.orgId,
        actor: actorOf(principal),
        projectId: project.id,
        settings,
      });
      const created = valueOrThrow(result);
      const tags = await setTags(c, created.id, tagNames);
      return c.json({ ...created, tags }, 201);
    },
  )
  .openapi(
    createRoute({
      method: "get",
      operationId: "listWorkspaces",
      path: "/",
      tags,
      summary:
        "List the workspaces the caller may see by name, a page at a time, optionally by part of the name",
      security,
      middleware: [requirePerson()] as const,
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
          projectId: ProjectRef.optional().openapi({
            param: { name: "projectId", in: "query" },
            description: "Only the workspaces of this project (its prj_ id or its name)",
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
      const principal = personOf(c);
      const { limit, cursor, search, projectId: projectRef } = c.req.valid("query");
      const after =
        cursor === undefined ? undefined : valueOrThrow(decodeCursor(cursor, ["string"]))[0];
      const projectId =
        projectRef === undefined
          ? undefined
          : (await namedProject(c, projectRef, "query.projectId")).id;
      const rows = await listWorkspaces(c.var.db, principal, { limit, after, search, projectId });
      const page = takePage(rows, limit, (r) => [r.row.name]);
      const tags = await tagsOfWorkspaces(
        c.var.db,
        principal.orgId,
        page.items.map((r) => r.row.id),
      );
      const workspaces = page.items.map((r) => ({
        ...r.workspace,
        tags: tags.get(r.row.id) ?? [],
      }));
      return c.json({ workspaces, nextCursor: page.nextCursor }, 200);
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
      middleware: [requirePerson()] as const,
      request: { params: Params },
      responses: {
        200: jsonResponse(WorkspaceSchema, "The workspace"),
        ...errorResponses(400, 401, 404),
      },
    }),
    async (c) => {
      const { workspace, principal } = await workspaceOf(
        c,
        c.req.valid("param").workspaceId,
        "workspace.read",
      );
      const tags = await workspaceTagNames(c.var.db, principal.orgId, workspace.id);
      return c.json({ ...presentWorkspace(workspace), tags }, 200);
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
      middleware: [requirePerson()] as const,
      request: { params: Params, body: jsonBody(UpdateWorkspace) },
      responses: {
        200: jsonResponse(WorkspaceSchema, "The workspace"),
        ...errorResponses(400, 401, 403, 404, 409, 413, 415),
      },
    }),
    async (c) => {
      const { workspaceId } = c.req.valid("param");
      const { principal, workspace } = await workspaceOf(c, workspaceId, "workspace.update");
      const { projectId: projectRef, tags: tagNames, ...patch } = c.req.valid("json");
      const project =
        projectRef === undefined ? undefined : await namedProject(c, projectRef, "json.projectId");
      if (project && project.id !== workspace.projectId) {
        await authorizeProject(c.var.db, principal, "project.add_workspace", project);
      }
      const result = await updateWorkspace(c.var.deps, {
        orgId: principal.orgId,
        ref: workspace.id,
        actor: actorOf(principal),
        patch,
        projectId: project?.id,
      });
      const updated = valueOrThrow(result);
      return c.json({ ...updated, tags: await setTags(c, updated.id, tagNames) }, 200);
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
      middleware: [requirePerson()] as const,
      request: { params: Params },
      responses: {
        200: jsonResponse(WorkspaceSchema, "The deleted workspace"),
        ...errorResponses(400, 401, 403, 404, 409),
      },
    }),
    async (c) => {
      const { workspaceId } = c.req.valid("param");
      const { principal, workspace } = await workspaceOf(c, workspaceId, "workspace.delete");
      const result = await deleteWorkspace(c.var.deps, {
        orgId: principal.orgId,
        ref: workspace.id,
        actor: actorOf(principal),
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
      middleware: [requirePerson()] as const,
      request: { params: Params, body: jsonBody(LockBody) },
      responses: {
        200: jsonResponse(WorkspaceSchema, "The locked workspace"),
        ...errorResponses(400, 401, 403, 404, 409, 413, 415),
      },
    }),
    async (c) => {
      const { workspaceId } = c.req.valid("param");
      const { principal, workspace } = await workspaceOf(c, workspaceId, "workspace.lock");
      const result = await lockWorkspace(c.var.deps, {
        orgId: principal.orgId,
        ref: workspace.id,
        holderId: principalId(principal),
        actor: actorOf(principal),
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
      middleware: [requirePerson()] as const,
      request: { params: Params, query: UnlockQuery },
      responses: {
        200: jsonResponse(WorkspaceSchema, "The unlocked workspace"),
        ...errorResponses(400, 401, 403, 404, 409),
      },
    }),
    async (c) => {
      const { workspaceId } = c.req.valid("param");
      const { principal, workspace, grants } = await workspaceOf(c, workspaceId, "workspace.lock");
      const result = await unlockWorkspace(c.var.deps, {
        orgId: principal.orgId,
        ref: workspace.id,
        holderId: principalId(principal),
        actor: actorOf(principal),
        isAdmin: decideWorkspace(grants, "workspace.force_unlock") === "allow",
        force: c.req.valid("query").force === "true",
      });
      return c.json(valueOrThrow(result), 200);
    },
  );
