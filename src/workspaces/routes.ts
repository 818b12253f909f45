/**
 * `/api/v1/workspaces`: admins create, update and delete; every role reads; members and up lock
 * and unlock. `{workspaceId}` in a path is the workspace's `ws_…` id or its name.
 */
import { createRoute, z } from "@hono/zod-openapi";
import { ApiError } from "../errors.ts";
import { decodeCursor, PageQuery, takePage } from "../lib/paging.ts";
import { errorResponses, jsonBody, jsonResponse, newRouter } from "../lib/router.ts";
import { orgPrincipal, requireRole } from "../middleware/auth.ts";
import { roleAtLeast } from "../tokens/model.ts";
import { lockWorkspace, unlockWorkspace } from "./lock.ts";
import {
  Branch,
  ENGINES,
  EngineVersion,
  EXECUTION_MODES,
  FORK_PULL_REQUEST_POLICIES,
  RepoUrl,
  TriggerPath,
  WorkingDirectory,
  WorkspaceName,
  WorkspaceRef,
} from "./model.ts";
import {
  createWorkspace,
  deleteWorkspace,
  listWorkspaces,
  presentWorkspace,
  resolveWorkspace,
  updateWorkspace,
  type WorkspaceFailure,
} from "./service.ts";

const PoolId = z.string().regex(/^pool_[a-z2-7]{26}$/, "must be a pool_ id");

export const WorkspaceSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    description: z.string(),
    executionMode: z.enum(EXECUTION_MODES),
    poolId: z.string().nullable(),
    engine: z.enum(ENGINES),
    engineVersion: z.string(),
    workingDirectory: z.string(),
    autoApply: z.boolean(),
    vcsRepoUrl: z.string().nullable(),
    vcsBranch: z.string().nullable(),
    vcsTriggerPaths: z.array(z.string()),
    forkPullRequests: z.enum(FORK_PULL_REQUEST_POLICIES),
    lock: z
      .object({
        lockedBy: z.string().openapi({ description: "A token id (tok_…) or a run id (run_…)" }),
        holderKind: z.enum(["user", "run"]),
        reason: z.string(),
        lockedAt: z.string(),
      })
      .nullable(),
    currentRunId: z.string().nullable(),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .openapi("Workspace");

const settingsFields = {
  description: z.string().max(1000).optional(),
  executionMode: z.enum(EXECUTION_MODES).optional().openapi({
    description: "Defaults to agent when poolId is given, else local; agent needs a pool",
  }),
  poolId: PoolId.nullable().optional(),
  engine: z.enum(ENGINES).optional(),
  workingDirectory: WorkingDirectory.optional(),
  autoApply: z.boolean().optional(),
  vcsRepoUrl: RepoUrl.nullable().optional(),
  vcsBranch: Branch.nullable().optional(),
  vcsTriggerPaths: z.array(TriggerPath).max(100).nullable().optional(),
  forkPullRequests: z.enum(FORK_PULL_REQUEST_POLICIES).optional(),
};

const CreateWorkspace = z
  .strictObject({ name: WorkspaceName, engineVersion: EngineVersion, ...settingsFields })
  .openapi("CreateWorkspace");

const UpdateWorkspace = z
  .strictObject({
    name: WorkspaceName.optional(),
    engineVersion: EngineVersion.optional(),
    ...settingsFields,
  })
  .openapi("UpdateWorkspace");

const Params = z.strictObject({ workspaceId: WorkspaceRef });
const LockBody = z
  .strictObject({ reason: z.string().trim().min(1).max(500) })
  .openapi("LockWorkspace");
const UnlockQuery = z.strictObject({
  force: z
    .enum(["true", "false"])
    .optional()
    .openapi({ description: "Admins: release a lock held by another token or by a run" }),
});

/** Maps a refused workspace operation to the HTTP error a client sees. */
export function workspaceError(failure: WorkspaceFailure, ref: string): ApiError {
  switch (failure.reason) {
    case "not_found":
      return new ApiError("NOT_FOUND", `workspace ${ref} not found`);
    case "name_taken":
      return new ApiError("CONFLICT", `a workspace named ${failure.name} exists`);
    case "invalid":
      return new ApiError("BAD_REQUEST", `invalid request: ${failure.message}`, {
        issues: [{ path: `json.${failure.field}`, message: failure.message }],
      });
    case "active_runs":
      return new ApiError("CONFLICT", `workspace ${ref} has active runs; cancel them first`, {
        details: { runIds: failure.runIds },
      });
    case "locked":
      return new ApiError("CONFLICT", `workspace ${ref} is locked by ${failure.lockedBy}`, {
        details: { lockedBy: failure.lockedBy },
      });
    case "state_locked":
      return new ApiError("CONFLICT", `the state of workspace ${ref} is locked`);
    case "not_lock_holder":
      return new ApiError(
        "FORBIDDEN",
        `workspace ${ref} is locked by ${failure.lockedBy}; only the holder or an admin may unlock`,
        { details: { lockedBy: failure.lockedBy } },
      );
    case "needs_force":
      return new ApiError(
        "CONFLICT",
        `workspace ${ref} is locked by ${failure.lockedBy}; add ?force=true to force-unlock`,
        { details: { lockedBy: failure.lockedBy } },
      );
  }
}

const tags = ["workspaces"];
const security = [{ bearer: [] }];

export const workspaceRoutes = newRouter()
  .openapi(
    createRoute({
      method: "post",
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
      const result = await createWorkspace(c.var.db, {
        orgId: principal.orgId,
        actor: principal.tokenId,
        settings: body,
      });
      if (!result.ok) {
        throw workspaceError(result, body.name);
      }
      return c.json(result.value, 201);
    },
  )
  .openapi(
    createRoute({
      method: "get",
      path: "/",
      tags,
      summary: "List workspaces by name, a page at a time",
      security,
      middleware: [requireRole("reader")] as const,
      request: { query: PageQuery },
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
      const { limit, cursor } = c.req.valid("query");
      const after = cursor === undefined ? undefined : decodeCursor(cursor, ["string"])[0];
      const rows = await listWorkspaces(c.var.db, principal.orgId, { limit, after });
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
        throw workspaceError({ reason: "not_found" }, workspaceId);
      }
      return c.json(presentWorkspace(row), 200);
    },
  )
  .openapi(
    createRoute({
      method: "patch",
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
      const result = await updateWorkspace(c.var.db, {
        orgId: principal.orgId,
        ref: workspaceId,
        actor: principal.tokenId,
        patch: c.req.valid("json"),
      });
      if (!result.ok) {
        throw workspaceError(result, workspaceId);
      }
      return c.json(result.value, 200);
    },
  )
  .openapi(
    createRoute({
      method: "delete",
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
      const result = await deleteWorkspace(c.var.db, c.env.BLOBS, {
        orgId: principal.orgId,
        ref: workspaceId,
        actor: principal.tokenId,
      });
      if (!result.ok) {
        throw workspaceError(result, workspaceId);
      }
      return c.json(result.value, 200);
    },
  )
  .openapi(
    createRoute({
      method: "post",
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
      const result = await lockWorkspace(c.var.db, {
        orgId: principal.orgId,
        ref: workspaceId,
        tokenId: principal.tokenId,
        reason: c.req.valid("json").reason,
      });
      if (!result.ok) {
        throw workspaceError(result, workspaceId);
      }
      return c.json(result.value, 200);
    },
  )
  .openapi(
    createRoute({
      method: "post",
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
      const result = await unlockWorkspace(c.var.db, {
        orgId: principal.orgId,
        ref: workspaceId,
        tokenId: principal.tokenId,
        isAdmin: roleAtLeast(principal.role, "admin"),
        force: c.req.valid("query").force === "true",
      });
      if (!result.ok) {
        throw workspaceError(result, workspaceId);
      }
      return c.json(result.value, 200);
    },
  );
