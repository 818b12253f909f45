/**
 * The TFE API's runs for the cloud backend's remote execution (`internal/cloud/backend_plan.go`,
 * `backend_apply.go`, go-tfe `run.go`): queue a run on an uploaded configuration version, read
 * it (with `include=plan,apply,workspace`), list a workspace's runs, and the apply, discard,
 * cancel and force-cancel actions. Every run is an ordinary Outpost run (`createRun` and the
 * user actions of `src/runs/service.ts`, the roles of `/api/v1`): it queues on the workspace's
 * pool, shows in the dashboard and notifications, and uses the same jobs, agents and state.
 */

import { createRoute, z } from "@hono/zod-openapi";
import { newId } from "@outpost/common";
import type { Context } from "hono";
import { authorizeWorkspace } from "../authz/http.ts";
import { actorOf } from "../authz/principal.ts";
import { grantsOn } from "../authz/service.ts";
import type { AppEnv } from "../env.ts";
import { ApiError, reasonError, valueOrThrow } from "../errors.ts";
import { personOf, requirePerson } from "../middleware/auth.ts";
import { getOrganization } from "../orgs/service.ts";
import { idParam, newRouter } from "../router.ts";
import type { RunRow } from "../runs/queries.ts";
import { sealRunVariables } from "../runs/run-variables.ts";
import { cancelRun, confirmRun, createRun, discardRun, forceCancelRun } from "../runs/service.ts";
import { workspaceTagNames } from "../workspace-tags/service.ts";
import { workspaceOf } from "../workspaces/http.ts";
import type { WorkspaceRow } from "../workspaces/queries.ts";
import { presentWorkspace } from "../workspaces/service.ts";
import { readTfeConfiguration } from "./configuration-versions.ts";
import {
  documentBody,
  documentResponse,
  errorDocuments,
  paginationMeta,
  type Resource,
  sendDocument,
  TfePageQuery,
} from "./jsonapi.ts";
import { phaseResources } from "./plan-apply-routes.ts";
import { loadTfeRun, runResourceFor } from "./run-access.ts";
import { RunDocument, runOptionsOf } from "./run-create.ts";
import { latestRunId, workspaceRunsPage } from "./run-queries.ts";
import { workspaceResource } from "./workspace-document.ts";

const tags = ["terraform cli"];
const security = [{ bearer: [] }];

const RunParams = z.strictObject({
  runId: idParam("run", "runId"),
});
const WorkspaceParams = z.strictObject({
  workspaceId: idParam("ws", "workspaceId"),
});
const IncludeQuery = z.object({
  include: z
    .string()
    .max(200)
    .optional()
    .openapi({ description: "plan, apply and workspace are included; other names are ignored" }),
});

async function sendRun(
  c: Context<AppEnv>,
  run: RunRow,
  workspace: WorkspaceRow,
  options: { include?: string | undefined; status?: 200 | 201 } = {},
) {
  const data = await runResourceFor(c, run, workspace);
  const names = new Set((options.include ?? "").split(",").map((name) => name.trim()));
  const included: Resource[] = [];
  if (names.has("plan") || names.has("apply")) {
    const [plan, apply] = await phaseResources(c, run);
    included.push(...(names.has("plan") ? [plan] : []), ...(names.has("apply") ? [apply] : []));
  }
  if (names.has("workspace")) {
    included.push(await workspaceDocumentOf(c, workspace));
  }
  return sendDocument(
    c,
    { data, ...(included.length > 0 ? { included } : {}) },
    options.status ?? 200,
  );
}

/**
 * Whether the run's configuration version is speculative: Terraform Cloud makes such a run
 * plan-only, and `terraform plan` relies on it (it never sends `plan-only`). An unknown version is
 * left to the run's creation to refuse.
 */
async function onSpeculativeVersion(
  c: Context<AppEnv>,
  orgId: string,
  id: string | undefined,
): Promise<boolean> {
  if (id === undefined) {
    return false;
  }
  const version = await readTfeConfiguration(c.var.deps, orgId, id);
  return version.ok && version.value.speculative;
}

/** The workspace as the `workspaces` resource, for `include=workspace`. */
async function workspaceDocumentOf(c: Context<AppEnv>, workspace: WorkspaceRow) {
  const principal = personOf(c);
  const [grants, organization, latest, tagNames] = await Promise.all([
    grantsOn(c.var.db, principal, workspace),
    getOrganization(c.var.db, principal.orgId),
    latestRunId(c.var.db, workspace.id),
    workspaceTagNames(c.var.db, principal.orgId, workspace.id),
  ]);
  return workspaceResource(presentWorkspace(workspace), organization?.name ?? "", grants, {
    tagNames,
    latestRunId: latest,
  });
}

/**
 * A configuration version still waiting for (or refused) its archive cannot be run: `409` in
 * words, before `createRun` would call it missing.
 */
async function requireUploaded(
  c: Context<AppEnv>,
  workspace: WorkspaceRow,
  id: string | undefined,
) {
  const version =
    id === undefined ? null : await readTfeConfiguration(c.var.deps, workspace.orgId, id);
  // Another workspace's version stays "not found in this workspace" (`createRun`).
  const ours = version?.ok && version.value.workspaceId === workspace.id ? version.value : null;
  if (ours !== null && ours.status !== "uploaded") {
    throw new ApiError(
      "CONFLICT",
      `configuration version ${id} is ${ours.status}: upload its archive to its upload-url first`,
    );
  }
}

type ActionName = "apply" | "discard" | "cancel" | "force-cancel";

const actionRoute = (action: ActionName, summary: string) =>
  createRoute({
    method: "post",
    operationId: `tfe${action === "force-cancel" ? "ForceCancel" : action[0]?.toUpperCase() + action.slice(1)}Run`,
    path: `/runs/{runId}/actions/${action}`,
    tags,
    summary,
    security,
    middleware: [requirePerson()] as const,
    // No body is declared: go-tfe posts `{}`, a `comment` (not kept) or nothing at all.
    request: { params: RunParams },
    responses: {
      202: { description: "Accepted: the run moves on (read it to follow)" },
      ...errorDocuments(400, 401, 403, 404, 409),
    },
  });

function accepted(c: Context<AppEnv>): Response {
  return c.body(null, 202);
}

export const runRoutes = newRouter()
  .openapi(
    createRoute({
      method: "post",
      operationId: "tfeCreateRun",
      path: "/runs",
      tags,
      summary:
        "Queue a run on a workspace's configuration version: plan-only, destroy, refresh-only, targets, replacements and -var values (TFE API)",
      security,
      middleware: [requirePerson()] as const,
      request: { body: documentBody(RunDocument) },
      responses: {
        201: documentResponse("The queued run"),
        ...errorDocuments(400, 401, 403, 404, 409, 415, 429, 503),
      },
    }),
    async (c) => {
      const document = c.req.valid("json");
      const options = valueOrThrow(runOptionsOf(document));
      const { principal, workspace } = await workspaceOf(c, options.workspaceId, "run.queue");
      const isSpeculative =
        options.isSpeculative ||
        (await onSpeculativeVersion(c, principal.orgId, options.configurationVersionId));
      const autoApply = options.autoApply ?? workspace.autoApply;
      if (autoApply && !isSpeculative) {
        await authorizeWorkspace(c.var.db, principal, "run.queue_auto_apply", workspace);
      }
      await requireUploaded(c, workspace, options.configurationVersionId);
      const id = newId("run");
      const sealed = await sealRunVariables(c.env, id, options.variables);
      if (!sealed.ok) {
        throw reasonError(sealed.reason);
      }
      const created = await createRun(c.var.deps, workspace, {
        operation: options.operation,
        isSpeculative,
        message: options.message,
        configurationVersionId: options.configurationVersionId,
        allowEmptyApply: options.allowEmptyApply,
        autoApply,
        planOptions: options.planOptions,
        sealedVariables: { id, sealed: sealed.value },
        source: "cli",
        actor: actorOf(principal),
      });
      const { run } = valueOrThrow(created);
      return sendRun(c, run, workspace, { status: 201 });
    },
  )
  .openapi(
    createRoute({
      method: "get",
      operationId: "tfeReadRun",
      path: "/runs/{runId}",
      tags,
      summary: "A run with its status, actions and permissions (TFE API)",
      security,
      middleware: [requirePerson()] as const,
      request: { params: RunParams, query: IncludeQuery },
      responses: { 200: documentResponse("The run"), ...errorDocuments(400, 401, 404) },
    }),
    async (c) => {
      const { run, workspace } = await loadTfeRun(c, c.req.valid("param").runId, "workspace.read");
      return sendRun(c, run, workspace, { include: c.req.valid("query").include });
    },
  )
  .openapi(
    createRoute({
      method: "get",
      operationId: "tfeListRunEvents",
      path: "/runs/{runId}/run-events",
      tags,
      summary: "A run's policy and task warnings: always none, since Outpost has neither (TFE API)",
      security,
      middleware: [requirePerson()] as const,
      request: { params: RunParams },
      responses: { 200: documentResponse("An empty list"), ...errorDocuments(400, 401, 404) },
    }),
    async (c) => {
      await loadTfeRun(c, c.req.valid("param").runId, "workspace.read");
      return sendDocument(c, { data: [] });
    },
  )
  .openapi(
    createRoute({
      method: "get",
      operationId: "tfeListWorkspaceRuns",
      path: "/workspaces/{workspaceId}/runs",
      tags,
      summary: "A workspace's runs, newest first, by page (TFE API)",
      security,
      middleware: [requirePerson()] as const,
      request: { params: WorkspaceParams, query: z.object(TfePageQuery) },
      responses: { 200: documentResponse("A page of runs"), ...errorDocuments(400, 401, 404) },
    }),
    async (c) => {
      const { workspace } = await workspaceOf(
        c,
        c.req.valid("param").workspaceId,
        "workspace.read",
      );
      const query = c.req.valid("query");
      const page = { number: query["page[number]"], size: query["page[size]"] };
      const { rows, total } = await workspaceRunsPage(c.var.db, workspace.id, page);
      const data = await Promise.all(rows.map((run) => runResourceFor(c, run, workspace)));
      return sendDocument(c, { data, meta: paginationMeta({ ...page, total }) });
    },
  )
  .openapi(
    actionRoute("apply", "Confirm a planned run: its apply is queued (TFE API)"),
    async (c) => {
      const { run, workspace } = await loadTfeRun(c, c.req.valid("param").runId, "run.confirm");
      valueOrThrow(await confirmRun(c.var.deps, run, workspace, actorOf(personOf(c))));
      return accepted(c);
    },
  )
  .openapi(actionRoute("discard", "Discard a planned run (TFE API)"), async (c) => {
    const { run } = await loadTfeRun(c, c.req.valid("param").runId, "run.discard");
    valueOrThrow(await discardRun(c.var.deps, run, actorOf(personOf(c))));
    return accepted(c);
  })
  .openapi(
    actionRoute("cancel", "Cancel a run: a running engine gets SIGINT (TFE API)"),
    async (c) => {
      const { run } = await loadTfeRun(c, c.req.valid("param").runId, "run.cancel");
      valueOrThrow(await cancelRun(c.var.deps, run, actorOf(personOf(c))));
      return accepted(c);
    },
  )
  .openapi(
    actionRoute("force-cancel", "Force-cancel a canceling run, 10 s after cancel (TFE API)"),
    async (c) => {
      const { run } = await loadTfeRun(c, c.req.valid("param").runId, "run.cancel");
      valueOrThrow(await forceCancelRun(c.var.deps, run, actorOf(personOf(c))));
      return accepted(c);
    },
  );
