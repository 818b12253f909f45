/**
 * Runs for users: `/api/v1/workspaces/{workspaceId}/runs` (queue, list) and `/api/v1/runs/…`
 * (get with why it waits, list by commit, confirm, discard, cancel, force-cancel, logs).
 */
import { createRoute, z } from "@hono/zod-openapi";
import {
  LOG_COMPLETE_HEADER,
  LOG_NEXT_OFFSET_HEADER,
  PlanSummary,
  RUN_OPERATIONS,
} from "@outpost/protocol";
import type { Context } from "hono";
import { ActorSchema } from "../authz/actor.ts";
import { authorizeWorkspace } from "../authz/http.ts";
import type { WorkspaceAction } from "../authz/model.ts";
import { actorOf } from "../authz/principal.ts";
import { readableWorkspaces } from "../authz/queries.ts";
import { runs } from "../db/schema.ts";
import type { AppEnv } from "../env.ts";
import { ApiError, valueOrThrow } from "../errors.ts";
import { PageQuery } from "../lib/paging.ts";
import { personOf, requirePerson } from "../middleware/auth.ts";
import { projectOf } from "../projects/http.ts";
import { ProjectRef } from "../projects/model.ts";
import { errorResponses, idParam, jsonBody, jsonResponse, newRouter } from "../router.ts";
import { presentFeedback } from "../vcs-feedback/present.ts";
import { feedbackOfRun } from "../vcs-feedback/queries.ts";
import { workspaceOf } from "../workspaces/http.ts";
import { WorkspaceRef } from "../workspaces/model.ts";
import type { WorkspaceRow } from "../workspaces/queries.ts";
import { resolveWorkspace } from "../workspaces/service.ts";
import { runLog } from "./blobs.ts";
import { listRunJobs } from "./job-records.ts";
import { listRuns, type RunListFilter } from "./list.ts";
import { isPhaseOver, jobId, RUN_SOURCES, RUN_STATUSES, type RunAction } from "./model.ts";
import { presentRun } from "./present.ts";
import { getRun, type RunRow } from "./queries.ts";
import { cancelRun, confirmRun, createRun, discardRun, forceCancelRun } from "./service.ts";
import { whyWaiting } from "./why.ts";

const RunJob = z
  .object({
    id: z.string().openapi({ description: "<run id>:plan or <run id>:apply" }),
    phase: z.enum(["plan", "apply"]),
    poolId: z.string(),
    agent: z.object({
      id: z.string(),
      name: z.string().nullable(),
      version: z.string(),
      isolation: z.string().openapi({
        description:
          "How the agent confined the job, as it registered: bwrap, none, or unknown when it did not say",
      }),
    }),
    engineVersion: z.string().nullable().openapi({
      description: "The exact engine version the agent ran; null until the job reports it",
    }),
    startedAt: z.string(),
    endedAt: z.string().nullable(),
  })
  .openapi("RunJob");

const Run = z
  .object({
    id: z.string(),
    workspaceId: z.string(),
    status: z.enum(RUN_STATUSES),
    statusReason: z.string().nullable(),
    waitingReason: z.string().nullable().openapi({ description: "Why the run waits, in words" }),
    operation: z.enum(RUN_OPERATIONS),
    isSpeculative: z.boolean(),
    isAutoApply: z.boolean(),
    allowEmptyApply: z.boolean().openapi({
      description: "Queued to apply even a plan that destroys every resource of the state",
    }),
    message: z.string(),
    configurationVersionId: z.string().nullable(),
    planSummary: PlanSummary.nullable(),
    planSha256: z.string().nullable().openapi({
      description:
        "SHA-256 (hex) of the plan file, recorded when the plan finished; the apply refuses any other",
    }),
    source: z.enum(RUN_SOURCES).openapi({
      description:
        "Who queued it: api, cli, ui, github, gitlab, schedule (a schedule's occurrence), assessment (a drift check, or the plan autoRemediate queued) or run-trigger (a source workspace's apply)",
    }),
    triggeringRunId: z.string().nullable().openapi({
      description: "A run trigger's run: the source workspace's applied run that queued it",
    }),
    vcs: z.object({
      commitSha: z.string().nullable(),
      branch: z.string().nullable(),
      pullRequestNumber: z.number().nullable(),
      author: z.string().nullable(),
      commitMessage: z.string().nullable(),
      isFork: z.boolean(),
    }),
    jobs: z.array(RunJob).openapi({
      description: "The run's started jobs: where each phase ran, with which agent and engine",
    }),
    cancelRequestedAt: z.string().nullable(),
    statusTimestamps: z.record(z.string(), z.string().nullable()),
    isTerminal: z.boolean(),
    createdBy: ActorSchema.nullable().openapi({ description: "Who queued the run" }),
    confirmedBy: ActorSchema.nullable().openapi({ description: "Who confirmed its apply" }),
    discardedBy: ActorSchema.nullable(),
    canceledBy: ActorSchema.nullable().openapi({
      description: "Who canceled or force-canceled it",
    }),
    createdAt: z.string().nullable(),
    updatedAt: z.string().nullable(),
    vcsFeedback: z
      .array(
        z.object({
          kind: z.enum(["status", "comment"]),
          runStatus: z.string(),
          state: z.string(),
          description: z.string(),
          posted: z.boolean(),
          error: z.string().nullable(),
          attempts: z.number().int(),
          updatedAt: z.string(),
        }),
      )
      .optional()
      .openapi({
        description:
          "What was posted back to the VCS (commit status, plan comment), or why not; on a single run",
      }),
  })
  .openapi("Run");

const CreateRun = z
  .strictObject({
    operation: z.enum(RUN_OPERATIONS).default("apply").openapi({
      description:
        "apply (plan, then apply when confirmed), plan (speculative), destroy, or refresh (reconcile the state with the real infrastructure and change nothing else)",
    }),
    isSpeculative: z.boolean().default(false),
    message: z.string().max(2000).default(""),
    configurationVersionId: z
      .string()
      .regex(/^cv_[a-z2-7]{26}$/, "must be a cv_ id")
      .optional(),
    allowEmptyApply: z.boolean().default(false).openapi({
      description:
        "Let the run apply a plan that destroys every resource of the state from a configuration that declares none; without it such a run ends errored after its plan (queue a destroy run to destroy everything on purpose)",
    }),
  })
  .openapi("CreateRun");

const WorkspaceParams = z.strictObject({
  workspaceId: WorkspaceRef.openapi({ param: { name: "workspaceId", in: "path" } }),
});
const RunParams = z.strictObject({ runId: idParam("run", "runId") });
const ListQuery = PageQuery.extend({
  status: z
    .enum(RUN_STATUSES)
    .optional()
    .openapi({ param: { name: "status", in: "query" } }),
  commitSha: z
    .string()
    .regex(/^[0-9a-f]{7,64}$/, "must be a hex commit sha")
    .optional()
    .openapi({ param: { name: "commitSha", in: "query" } }),
});
const OrgListQuery = ListQuery.extend({
  workspaceId: WorkspaceRef.optional().openapi({
    param: { name: "workspaceId", in: "query" },
    description: "A workspace's id or name",
  }),
  projectId: ProjectRef.optional().openapi({
    param: { name: "projectId", in: "query" },
    description: "A project's id or name: the runs of the workspaces in it",
  }),
  source: z
    .enum(RUN_SOURCES)
    .optional()
    .openapi({ param: { name: "source", in: "query" } }),
  poolId: idParam("pool", "poolId")
    .optional()
    .openapi({ param: { name: "poolId", in: "query" } }),
  agentId: idParam("agt", "agentId")
    .optional()
    .openapi({ param: { name: "agentId", in: "query" } }),
});
const RunList = z
  .object({ runs: z.array(Run), nextCursor: z.string().nullable() })
  .openapi("RunList");

/**
 * The run and its workspace once `may` allowed `action` there. A run of a workspace the caller
 * cannot see answers 404 like a missing one.
 */
async function loadRun(
  c: Context<AppEnv>,
  runId: string,
  action: WorkspaceAction,
): Promise<{ run: RunRow; workspace: WorkspaceRow }> {
  const principal = personOf(c);
  const run = await getRun(c.var.db, principal.orgId, runId);
  const workspace = run && (await resolveWorkspace(c.var.db, principal.orgId, run.workspaceId));
  if (!run || !workspace) {
    throw new ApiError("NOT_FOUND", `run ${runId} not found`);
  }
  try {
    await authorizeWorkspace(c.var.db, principal, action, workspace);
  } catch (error) {
    if (error instanceof ApiError && error.code === "NOT_FOUND") {
      throw new ApiError("NOT_FOUND", `run ${runId} not found`);
    }
    throw error;
  }
  return { run, workspace };
}

/** A run as the API answers it, with its recorded jobs. */
async function showRun(c: Context<AppEnv>, run: RunRow, waiting: string | null = null) {
  const [jobs, feedback] = await Promise.all([
    listRunJobs(c.var.db, [run.id]),
    feedbackOfRun(c.var.db, run.id),
  ]);
  return { ...presentRun(run, waiting, jobs.get(run.id)), vcsFeedback: presentFeedback(feedback) };
}

async function listPage(
  c: Context<AppEnv>,
  filter: RunListFilter,
  query: { limit: number; cursor?: string | undefined },
) {
  return valueOrThrow(await listRuns(c.var.deps, filter, query));
}

const actionRoute = (action: RunAction, summary: string) =>
  createRoute({
    method: "post",
    operationId: `${action.replace(/-(\w)/g, (_, letter: string) => letter.toUpperCase())}Run`,
    path: `/runs/{runId}/${action}`,
    tags: ["runs"],
    summary,
    security: [{ bearer: [] }],
    middleware: [requirePerson()] as const,
    request: { params: RunParams },
    responses: {
      200: jsonResponse(Run, "The run after the action"),
      ...errorResponses(400, 401, 403, 404, 409),
    },
  });

export const runRoutes = newRouter()
  .openapi(
    createRoute({
      method: "post",
      operationId: "createRun",
      path: "/workspaces/{workspaceId}/runs",
      tags: ["runs"],
      summary: "Queue a run (plan, apply or destroy; speculative plans never wait or apply)",
      security: [{ bearer: [] }],
      middleware: [requirePerson()] as const,
      request: { params: WorkspaceParams, body: jsonBody(CreateRun) },
      responses: {
        201: jsonResponse(Run, "The queued run"),
        ...errorResponses(400, 401, 403, 404, 409, 413, 415, 429),
      },
    }),
    async (c) => {
      const { workspaceId } = c.req.valid("param");
      const body = c.req.valid("json");
      const { principal, workspace } = await workspaceOf(c, workspaceId, "run.queue");
      const speculative = body.isSpeculative || body.operation === "plan";
      if (workspace.autoApply && !speculative) {
        await authorizeWorkspace(c.var.db, principal, "run.queue_auto_apply", workspace);
      }
      const result = await createRun(c.var.deps, workspace, {
        operation: body.operation,
        isSpeculative: body.isSpeculative,
        message: body.message,
        configurationVersionId: body.configurationVersionId,
        allowEmptyApply: body.allowEmptyApply,
        source: c.req.header("user-agent")?.startsWith("outpost-cli") ? "cli" : "api",
        actor: actorOf(principal),
      });
      const { run, wait, poolName } = valueOrThrow(result);
      const waiting = await whyWaiting(c.var.deps, run, { workspace, wait, poolName });
      return c.json(presentRun(run, waiting), 201);
    },
  )
  .openapi(
    createRoute({
      method: "get",
      operationId: "listWorkspaceRuns",
      path: "/workspaces/{workspaceId}/runs",
      tags: ["runs"],
      summary: "List a workspace's runs, newest first",
      security: [{ bearer: [] }],
      middleware: [requirePerson()] as const,
      request: { params: WorkspaceParams, query: ListQuery },
      responses: { 200: jsonResponse(RunList, "A page of runs"), ...errorResponses(400, 401, 404) },
    }),
    async (c) => {
      const { workspaceId } = c.req.valid("param");
      const query = c.req.valid("query");
      const { principal, workspace } = await workspaceOf(c, workspaceId, "workspace.read");
      const filter = {
        orgId: principal.orgId,
        workspaceId: workspace.id,
        ...(query.status ? { status: query.status } : {}),
        ...(query.commitSha ? { commitSha: query.commitSha } : {}),
      };
      return c.json(await listPage(c, filter, query), 200);
    },
  )
  .openapi(
    createRoute({
      method: "get",
      operationId: "listRuns",
      path: "/runs",
      tags: ["runs"],
      summary:
        "List the organization's runs newest first, by status, workspace, project, pool, agent, source or commit",
      description:
        "Every run of the workspaces the caller may read, pending ones with why they wait and each with the agents that ran its phases. A workspace or project filter the caller cannot read answers 404.",
      security: [{ bearer: [] }],
      middleware: [requirePerson()] as const,
      request: { query: OrgListQuery },
      responses: {
        200: jsonResponse(RunList, "A page of runs"),
        ...errorResponses(400, 401, 404),
      },
    }),
    async (c) => {
      const query = c.req.valid("query");
      const principal = personOf(c);
      const workspace = query.workspaceId
        ? (await workspaceOf(c, query.workspaceId, "workspace.read")).workspace
        : undefined;
      const project = query.projectId
        ? (await projectOf(c, query.projectId, "project.read")).project
        : undefined;
      const filter = {
        orgId: principal.orgId,
        visible: readableWorkspaces(c.var.db, principal, runs.workspaceId),
        ...(workspace ? { workspaceId: workspace.id } : {}),
        ...(project ? { projectId: project.id } : {}),
        ...(query.status ? { status: query.status } : {}),
        ...(query.commitSha ? { commitSha: query.commitSha } : {}),
        ...(query.source ? { source: query.source } : {}),
        ...(query.poolId ? { poolId: query.poolId } : {}),
        ...(query.agentId ? { agentId: query.agentId } : {}),
      };
      return c.json(await listPage(c, filter, query), 200);
    },
  )
  .openapi(
    createRoute({
      method: "get",
      operationId: "getRun",
      path: "/runs/{runId}",
      tags: ["runs"],
      summary: "A run: status, timestamps, plan summary, and why it waits",
      security: [{ bearer: [] }],
      middleware: [requirePerson()] as const,
      request: { params: RunParams },
      responses: { 200: jsonResponse(Run, "The run"), ...errorResponses(400, 401, 404) },
    }),
    async (c) => {
      const { run } = await loadRun(c, c.req.valid("param").runId, "workspace.read");
      return c.json(await showRun(c, run, await whyWaiting(c.var.deps, run)), 200);
    },
  )
  .openapi(actionRoute("confirm", "Confirm a planned run: its apply is queued"), async (c) => {
    const { run, workspace } = await loadRun(c, c.req.valid("param").runId, "run.confirm");
    const result = await confirmRun(c.var.deps, run, workspace, actorOf(personOf(c)));
    const confirmed = valueOrThrow(result);
    return c.json(await showRun(c, confirmed, await whyWaiting(c.var.deps, confirmed)), 200);
  })
  .openapi(actionRoute("discard", "Discard a planned run"), async (c) => {
    const { run } = await loadRun(c, c.req.valid("param").runId, "run.discard");
    const result = await discardRun(c.var.deps, run, actorOf(personOf(c)));
    return c.json(await showRun(c, valueOrThrow(result)), 200);
  })
  .openapi(actionRoute("cancel", "Cancel a run (graceful: the engine gets SIGINT)"), async (c) => {
    const { run } = await loadRun(c, c.req.valid("param").runId, "run.cancel");
    const result = await cancelRun(c.var.deps, run, actorOf(personOf(c)));
    return c.json(await showRun(c, valueOrThrow(result)), 200);
  })
  .openapi(
    actionRoute("force-cancel", "Force-cancel a canceling run (10 s after cancel; SIGKILL)"),
    async (c) => {
      const { run } = await loadRun(c, c.req.valid("param").runId, "run.cancel");
      const result = await forceCancelRun(c.var.deps, run, actorOf(personOf(c)));
      return c.json(await showRun(c, valueOrThrow(result)), 200);
    },
  )
  .openapi(
    createRoute({
      method: "get",
      operationId: "getRunLogs",
      path: "/runs/{runId}/logs",
      tags: ["runs"],
      summary: "Log bytes of a phase from an offset (live while the phase runs)",
      description: `Answers text/plain bytes. \`${LOG_NEXT_OFFSET_HEADER}\` says where to continue; \`${LOG_COMPLETE_HEADER}: true\` once the phase ended and everything was read.`,
      security: [{ bearer: [] }],
      middleware: [requirePerson()] as const,
      request: {
        params: RunParams,
        query: z.strictObject({
          phase: z
            .enum(["plan", "apply"])
            .default("plan")
            .openapi({ param: { name: "phase", in: "query" } }),
          offset: z.coerce
            .number()
            .int()
            .min(0)
            .default(0)
            .openapi({ param: { name: "offset", in: "query" } }),
          limit: z.coerce
            .number()
            .int()
            .min(1)
            .max(1024 * 1024)
            .default(1024 * 1024)
            .openapi({ param: { name: "limit", in: "query" } }),
        }),
      },
      responses: {
        200: {
          description: "Log bytes (text/plain; possibly a partial UTF-8 sequence at the end)",
        },
        ...errorResponses(400, 401, 404),
      },
    }),
    async (c) => {
      const { run } = await loadRun(c, c.req.valid("param").runId, "workspace.read");
      const { phase, offset, limit } = c.req.valid("query");
      const id = jobId(run.id, phase);
      const read = await runLog(c.env, run.workspaceId).read(id, offset, limit);
      return c.body(new Uint8Array(read.data), 200, {
        "content-type": "text/plain; charset=utf-8",
        [LOG_NEXT_OFFSET_HEADER]: String(read.nextOffset),
        [LOG_COMPLETE_HEADER]: String(
          read.isComplete || (read.data.byteLength === 0 && isPhaseOver(run.status, phase)),
        ),
      });
    },
  );
