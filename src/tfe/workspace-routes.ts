/**
 * The TFE API's workspaces over Outpost's workspace services: list (by name, page numbers),
 * create, read, update and delete by organization and name or by id, and the lock actions the
 * cloud backend's local mode uses (`internal/cloud/state.go`). `may` decides each request as on
 * `/api/v1/workspaces`; a workspace the caller cannot see is 404.
 */
import { createRoute, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { decideWorkspace } from "../authz/model.ts";
import { actorOf, principalId } from "../authz/principal.ts";
import { grantsOn } from "../authz/service.ts";
import type { AppEnv } from "../env.ts";
import { reasonError, valueOrThrow } from "../errors.ts";
import { invalidInput } from "../lib/reason.ts";
import { personOf, requirePermission, requirePerson } from "../middleware/auth.ts";
import { getOrganization } from "../orgs/service.ts";
import { defaultProject } from "../projects/service.ts";
import { idParam, newRouter } from "../router.ts";
import { changeWorkspaceTags } from "../workspace-tags/service.ts";
import { deleteWorkspace } from "../workspaces/delete.ts";
import { workspaceOf } from "../workspaces/http.ts";
import { lockWorkspace, unlockWorkspace } from "../workspaces/lock.ts";
import { WorkspaceRef } from "../workspaces/model.ts";
import {
  createWorkspace,
  presentWorkspace,
  updateWorkspace,
  type Workspace,
} from "../workspaces/service.ts";
import {
  documentBody,
  documentResponse,
  errorDocuments,
  JSONAPI,
  sendDocument,
  sendEmpty,
} from "./jsonapi.ts";
import { organizationOf } from "./organization.ts";
import { OrgParams } from "./organization-routes.ts";
import { latestRunId } from "./run-queries.ts";
import { settingsOf, WorkspaceDocument, workspaceResource } from "./workspace-document.ts";
import {
  documentTagNames,
  projectForCreate,
  projectForUpdate,
  tagNamesOf,
} from "./workspace-placement.ts";

const tags = ["terraform cli"];
const security = [{ bearer: [] }];

const NamedParams = OrgParams.extend({
  workspace: WorkspaceRef.openapi({ param: { name: "workspace", in: "path" } }),
});
const IdParams = z.strictObject({
  workspaceId: idParam("ws", "workspaceId"),
});

const LockReason = z.string().trim().max(500).optional();
/**
 * go-tfe marshals `WorkspaceLockOptions` with jsonapi and no primary tag, so its body is
 * `{"data":{"type":"","attributes":{"reason":…}}}`; a bare `{"reason":…}` is accepted too.
 */
const LockDocument = z
  .object({
    data: z.object({ attributes: z.object({ reason: LockReason }).default({}) }).optional(),
    reason: LockReason,
  })
  .default({});

/** The reason a lock body carries, in either shape. */
function lockReasonOf(body: z.infer<typeof LockDocument> | undefined): string | undefined {
  if (body === undefined) {
    return undefined;
  }
  return body.data?.attributes.reason ?? body.reason;
}

/** The caller's organization name, for documents of workspaces addressed by id. */
async function organizationName(c: Context<AppEnv>): Promise<string> {
  const organization = await getOrganization(c.var.db, personOf(c).orgId);
  if (!organization) {
    throw new Error("a person's organization is missing");
  }
  return organization.name;
}

/** The workspace answered as a document, with what the caller may do there. */
async function sendWorkspace(c: Context<AppEnv>, workspace: Workspace, status: 200 | 201 = 200) {
  const principal = personOf(c);
  const grants = await grantsOn(c.var.db, principal, { ...workspace, orgId: principal.orgId });
  const [latest, tagNames, organization] = await Promise.all([
    latestRunId(c.var.db, workspace.id),
    tagNamesOf(c, workspace),
    organizationName(c),
  ]);
  const data = workspaceResource(workspace, organization, grants, {
    tagNames,
    latestRunId: latest,
  });
  return sendDocument(c, { data }, status);
}

/** The workspace a path names, by organization and name or by id, once `may` allowed `action`. */
async function addressed(
  c: Context<AppEnv>,
  params: { organization?: string; workspace?: string; workspaceId?: string },
  action: Parameters<typeof workspaceOf>[2],
) {
  if (params.organization !== undefined) {
    await organizationOf(c, params.organization);
  }
  return workspaceOf(c, params.workspace ?? params.workspaceId ?? "", action);
}

function read(c: Context<AppEnv>, params: Parameters<typeof addressed>[1]) {
  return addressed(c, params, "workspace.read").then(({ workspace }) =>
    sendWorkspace(c, presentWorkspace(workspace)),
  );
}

async function update(
  c: Context<AppEnv>,
  params: Parameters<typeof addressed>[1],
  document: WorkspaceDocument,
) {
  const { principal, workspace } = await addressed(c, params, "workspace.update");
  const patch = valueOrThrow(settingsOf(document));
  const tagNames = await documentTagNames(c, document);
  const project = await projectForUpdate(c, document, workspace);
  const actor = actorOf(principal);
  const result = await updateWorkspace(c.var.deps, {
    orgId: principal.orgId,
    ref: workspace.id,
    actor,
    patch,
    projectId: project?.id,
  });
  const updated = valueOrThrow(result);
  if (tagNames !== undefined) {
    const target = { orgId: principal.orgId, workspaceId: workspace.id, actor };
    valueOrThrow(await changeWorkspaceTags(c.var.deps, target, "replace", tagNames));
  }
  return sendWorkspace(c, updated);
}

async function remove(c: Context<AppEnv>, params: Parameters<typeof addressed>[1]) {
  const { principal, workspace } = await addressed(c, params, "workspace.delete");
  valueOrThrow(
    await deleteWorkspace(c.var.deps, {
      orgId: principal.orgId,
      ref: workspace.id,
      actor: actorOf(principal),
    }),
  );
  return sendEmpty(c);
}

const readRoute = (
  path: string,
  operationId: string,
  params: typeof NamedParams | typeof IdParams,
) =>
  createRoute({
    method: "get",
    operationId,
    path,
    tags,
    summary: "Read a workspace (TFE API)",
    security,
    middleware: [requirePerson()] as const,
    request: { params },
    responses: { 200: documentResponse("The workspace"), ...errorDocuments(400, 401, 404) },
  });

const updateRoute = (
  path: string,
  operationId: string,
  params: typeof NamedParams | typeof IdParams,
) =>
  createRoute({
    method: "patch",
    operationId,
    path,
    tags,
    summary: "Change a workspace's settings, only the attributes given (TFE API)",
    security,
    middleware: [requirePerson()] as const,
    request: { params, body: documentBody(WorkspaceDocument) },
    responses: {
      200: documentResponse("The workspace"),
      ...errorDocuments(400, 401, 403, 404, 409, 415),
    },
  });

const deleteRoute = (
  path: string,
  operationId: string,
  params: typeof NamedParams | typeof IdParams,
) =>
  createRoute({
    method: "delete",
    operationId,
    path,
    tags,
    summary: "Delete a workspace with its runs and state (TFE API)",
    security,
    middleware: [requirePerson()] as const,
    request: { params },
    responses: {
      204: { description: "Deleted" },
      ...errorDocuments(400, 401, 403, 404, 409),
    },
  });

/** Lock reads a body (its reason). */
const lockRoute = createRoute({
  method: "post",
  operationId: "tfeLockWorkspace",
  path: "/workspaces/{workspaceId}/actions/lock",
  tags,
  summary: "The workspace's lock action (TFE API)",
  security,
  middleware: [requirePerson()] as const,
  request: {
    params: IdParams,
    body: { required: false, content: { [JSONAPI]: { schema: LockDocument } } },
  },
  responses: {
    200: documentResponse("The workspace"),
    ...errorDocuments(400, 401, 403, 404, 409),
  },
});

/**
 * The unlocks declare no body: go-tfe sends them with a JSON:API content type and an empty body,
 * which a declared body would refuse as malformed JSON.
 */
const unlockRoute = (action: "unlock" | "force-unlock") =>
  createRoute({
    method: "post",
    operationId: action === "unlock" ? "tfeUnlockWorkspace" : "tfeForceUnlockWorkspace",
    path: `/workspaces/{workspaceId}/actions/${action}`,
    tags,
    summary: `The workspace's ${action} action (TFE API)`,
    security,
    middleware: [requirePerson()] as const,
    request: { params: IdParams },
    responses: {
      200: documentResponse("The workspace"),
      ...errorDocuments(400, 401, 403, 404, 409),
    },
  });

const NAMED = "/organizations/{organization}/workspaces/{workspace}";
const BY_ID = "/workspaces/{workspaceId}";

export const workspaceRoutes = newRouter()
  .openapi(
    createRoute({
      method: "post",
      operationId: "tfeCreateWorkspace",
      path: "/organizations/{organization}/workspaces",
      tags,
      summary: "Create a workspace (TFE API)",
      security,
      middleware: [requirePermission("workspace.create")] as const,
      request: { params: OrgParams, body: documentBody(WorkspaceDocument) },
      responses: {
        201: documentResponse("The workspace"),
        ...errorDocuments(400, 401, 403, 404, 409, 415),
      },
    }),
    async (c) => {
      const { principal } = await organizationOf(c, c.req.valid("param").organization);
      const document = c.req.valid("json");
      const settings = valueOrThrow(settingsOf(document));
      const { name } = settings;
      if (name === undefined) {
        throw reasonError(
          invalidInput("json.data.attributes.name", "data.attributes.name is required").reason,
        );
      }
      // Tags and project are resolved before anything is written: a bad one creates nothing.
      const tagNames = await documentTagNames(c, document);
      const project =
        (await projectForCreate(c, document)) ??
        (await defaultProject(c.var.deps, principal.orgId));
      const actor = actorOf(principal);
      const created = valueOrThrow(
        await createWorkspace(c.var.deps, {
          orgId: principal.orgId,
          actor,
          projectId: project.id,
          settings: { ...settings, name },
        }),
      );
      if (tagNames !== undefined && tagNames.length > 0) {
        const target = { orgId: principal.orgId, workspaceId: created.id, actor };
        valueOrThrow(await changeWorkspaceTags(c.var.deps, target, "replace", tagNames));
      }
      return sendWorkspace(c, created, 201);
    },
  )
  .openapi(readRoute(NAMED, "tfeReadWorkspace", NamedParams), (c) => read(c, c.req.valid("param")))
  .openapi(readRoute(BY_ID, "tfeReadWorkspaceById", IdParams), (c) => read(c, c.req.valid("param")))
  .openapi(updateRoute(NAMED, "tfeUpdateWorkspace", NamedParams), (c) =>
    update(c, c.req.valid("param"), c.req.valid("json")),
  )
  .openapi(updateRoute(BY_ID, "tfeUpdateWorkspaceById", IdParams), (c) =>
    update(c, c.req.valid("param"), c.req.valid("json")),
  )
  .openapi(deleteRoute(NAMED, "tfeDeleteWorkspace", NamedParams), (c) =>
    remove(c, c.req.valid("param")),
  )
  .openapi(deleteRoute(BY_ID, "tfeDeleteWorkspaceById", IdParams), (c) =>
    remove(c, c.req.valid("param")),
  )
  .openapi(lockRoute, async (c) => {
    const { principal, workspace } = await addressed(c, c.req.valid("param"), "workspace.lock");
    const reason = lockReasonOf(c.req.valid("json")) || "locked through the TFE API";
    // Terraform Cloud refuses a lock already held, even by the caller: a local-mode apply must
    // not take over (and then release) a lock its person set by hand.
    const locked = await lockWorkspace(c.var.deps, {
      orgId: principal.orgId,
      ref: workspace.id,
      holderId: principalId(principal),
      actor: actorOf(principal),
      reason,
      reentrant: false,
    });
    return sendWorkspace(c, valueOrThrow(locked));
  })
  .openapi(unlockRoute("unlock"), async (c) => {
    const { principal, workspace } = await addressed(c, c.req.valid("param"), "workspace.lock");
    const unlocked = await unlockWorkspace(c.var.deps, {
      orgId: principal.orgId,
      ref: workspace.id,
      holderId: principalId(principal),
      actor: actorOf(principal),
      isAdmin: false,
      force: false,
    });
    return sendWorkspace(c, valueOrThrow(unlocked));
  })
  .openapi(unlockRoute("force-unlock"), async (c) => {
    const params = c.req.valid("param");
    const { principal, workspace } = await addressed(c, params, "workspace.force_unlock");
    const unlocked = await unlockWorkspace(c.var.deps, {
      orgId: principal.orgId,
      ref: workspace.id,
      holderId: principalId(principal),
      actor: actorOf(principal),
      isAdmin:
        decideWorkspace({ role: null, teamLevel: "admin" }, "workspace.force_unlock") === "allow",
      force: true,
    });
    return sendWorkspace(c, valueOrThrow(unlocked));
  });
