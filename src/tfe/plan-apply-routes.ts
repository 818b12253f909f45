/**
 * A run's plan and apply in the TFE API (go-tfe `plan.go`, `apply.go`, `logreader.go`): their
 * status and resource counts, the `log-read-url` the CLI streams each phase's log from (with
 * `offset`/`limit`, STX/ETX framed, `log-urls.ts`), and the JSON plan the agent stored.
 */
import { createRoute, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { AppEnv } from "../env.ts";
import { ApiError, valueOrThrow } from "../errors.ts";
import { requirePerson } from "../middleware/auth.ts";
import { newRouter } from "../router.ts";
import { artifactKey, runLog } from "../runs/blobs.ts";
import { isPhaseOver, jobId } from "../runs/model.ts";
import { getRunById, type RunRow } from "../runs/queries.ts";
import { documentResponse, errorDocuments, type Resource, sendDocument } from "./jsonapi.ts";
import { logReadToken, openLogReadToken, readFramed } from "./log-urls.ts";
import { loadTfeRun } from "./run-access.ts";
import { ApplyId, applyResource, PlanId, planResource, runIdOf } from "./run-document.ts";

const tags = ["terraform cli"];
const security = [{ bearer: [] }];

const PlanParams = z.strictObject({
  planId: PlanId.openapi({ param: { name: "planId", in: "path" } }),
});
const ApplyParams = z.strictObject({
  applyId: ApplyId.openapi({ param: { name: "applyId", in: "path" } }),
});
const LogParams = z.strictObject({
  token: z
    .string()
    .regex(/^[A-Za-z0-9_-]{20,2000}$/, "must be a log-read token")
    .openapi({ param: { name: "token", in: "path" } }),
});
const LogQuery = z.object({
  offset: z.coerce.number().int().min(0).max(Number.MAX_SAFE_INTEGER).default(0),
  limit: z.coerce
    .number()
    .int()
    .min(1)
    .max(1024 * 1024)
    .default(64 * 1024),
});

/** The log-read URL of a run's phase, fresh for this answer. */
async function logReadUrl(c: Context<AppEnv>, run: RunRow, phase: "plan" | "apply") {
  const token = await logReadToken(c.env, { runId: run.id, phase }, c.var.deps.now());
  return `${new URL(c.req.url).origin}/api/v2/logs/${token}`;
}

/** The run's `plans` and `applies` resources, each with its log-read URL. */
export async function phaseResources(
  c: Context<AppEnv>,
  run: RunRow,
): Promise<[Resource, Resource]> {
  const [planUrl, applyUrl] = await Promise.all([
    logReadUrl(c, run, "plan"),
    logReadUrl(c, run, "apply"),
  ]);
  return [planResource(run, planUrl), applyResource(run, applyUrl)];
}

export const planApplyRoutes = newRouter()
  .openapi(
    createRoute({
      method: "get",
      operationId: "tfeReadPlan",
      path: "/plans/{planId}",
      tags,
      summary: "A run's plan: status, resource counts and its log-read-url (TFE API)",
      security,
      middleware: [requirePerson()] as const,
      request: { params: PlanParams },
      responses: { 200: documentResponse("The plan"), ...errorDocuments(400, 401, 404) },
    }),
    async (c) => {
      const { planId } = c.req.valid("param");
      const { run } = await loadTfeRun(c, runIdOf(planId), "workspace.read", `plan ${planId}`);
      return sendDocument(c, { data: planResource(run, await logReadUrl(c, run, "plan")) });
    },
  )
  .openapi(
    createRoute({
      method: "get",
      operationId: "tfeReadApply",
      path: "/applies/{applyId}",
      tags,
      summary: "A run's apply: status, resource counts and its log-read-url (TFE API)",
      security,
      middleware: [requirePerson()] as const,
      request: { params: ApplyParams },
      responses: { 200: documentResponse("The apply"), ...errorDocuments(400, 401, 404) },
    }),
    async (c) => {
      const { applyId } = c.req.valid("param");
      const { run } = await loadTfeRun(c, runIdOf(applyId), "workspace.read", `apply ${applyId}`);
      return sendDocument(c, { data: applyResource(run, await logReadUrl(c, run, "apply")) });
    },
  )
  .openapi(
    createRoute({
      method: "get",
      operationId: "tfeReadPlanJsonOutput",
      path: "/plans/{planId}/json-output",
      tags,
      summary:
        "The JSON plan (terraform show -json) the agent stored; it holds every variable value, so only callers who may reveal sensitive values read it (TFE API)",
      security,
      middleware: [requirePerson()] as const,
      request: { params: PlanParams },
      responses: {
        200: { description: "The JSON plan (application/json)" },
        ...errorDocuments(400, 401, 403, 404),
      },
    }),
    async (c) => {
      const { planId } = c.req.valid("param");
      const { run } = await loadTfeRun(c, runIdOf(planId), "state.reveal", `plan ${planId}`);
      const object = await c.env.BLOBS.get(
        artifactKey({ orgId: run.orgId, workspaceId: run.workspaceId, runId: run.id }, "plan.json"),
      );
      if (!object) {
        throw new ApiError(
          "NOT_FOUND",
          `plan ${planId} has no JSON plan: it has not finished, or its engine stored none`,
        );
      }
      return new Response(object.body, {
        status: 200,
        headers: { "content-type": "application/json", "content-length": String(object.size) },
      });
    },
  )
  .openapi(
    createRoute({
      method: "get",
      operationId: "tfeReadLog",
      path: "/logs/{token}",
      tags,
      summary:
        "A plan's or an apply's log from a log-read-url: STX, the log as stored from offset, ETX once complete (the URL is the capability; TFE API)",
      request: { params: LogParams, query: LogQuery },
      responses: {
        200: { description: "Log bytes (text/plain)" },
        ...errorDocuments(400, 404),
      },
    }),
    async (c) => {
      const now = c.var.deps.now();
      const target = valueOrThrow(await openLogReadToken(c.env, c.req.valid("param").token, now));
      const run = await getRunById(c.var.db, target.runId);
      if (!run) {
        throw new ApiError("NOT_FOUND", "log not found: its run was deleted");
      }
      const { offset, limit } = c.req.valid("query");
      const log = runLog(c.env, run.workspaceId);
      const id = jobId(run.id, target.phase);
      const body = await readFramed(
        {
          read: async (from, max) => {
            const read = await log.read(id, from, max);
            const over = read.data.byteLength === 0 && isPhaseOver(run.status, target.phase);
            return {
              data: new Uint8Array(read.data),
              nextOffset: read.nextOffset,
              isComplete: read.isComplete || over,
            };
          },
        },
        offset,
        limit,
      );
      return c.body(body, 200, { "content-type": "text/plain; charset=utf-8" });
    },
  );
