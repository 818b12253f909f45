/**
 * `/api/v1/workspaces/{workspaceId}/assessments`: start a drift check now (plan access, like a
 * speculative plan) and list the results (read access). docs/workspaces.md, "Assessments".
 */
import { createRoute, z } from "@hono/zod-openapi";
import { ActorSchema } from "../authz/actor.ts";
import { actorOf } from "../authz/principal.ts";
import { valueOrThrow } from "../errors.ts";
import { PageQuery } from "../lib/paging.ts";
import { requirePerson } from "../middleware/auth.ts";
import { errorResponses, jsonResponse, newRouter } from "../router.ts";
import { workspaceOf } from "../workspaces/http.ts";
import { WorkspaceRef } from "../workspaces/model.ts";
import { ASSESSMENT_STATUSES } from "./model.ts";
import type { AssessmentRow } from "./queries.ts";
import { listAssessments, startAssessment } from "./service.ts";

const Assessment = z
  .object({
    id: z.string(),
    workspaceId: z.string(),
    status: z.enum(ASSESSMENT_STATUSES).openapi({
      description:
        "pending while its run plans; then no_drift, drifted (driftedResources names them) or errored (reason)",
    }),
    driftedResources: z.array(z.string()).openapi({
      description: "Addresses (Terraform, OpenTofu) or URNs (Pulumi) changed outside the engine",
    }),
    reason: z.string().nullable(),
    runId: z.string().openapi({ description: "The refresh-only speculative run that checked" }),
    remediationRunId: z.string().nullable().openapi({
      description: "The plan autoRemediate queued when drift was found",
    }),
    createdBy: ActorSchema.nullable(),
    createdAt: z.string(),
    finishedAt: z.string().nullable(),
  })
  .openapi("Assessment");

const WorkspaceParams = z.strictObject({
  workspaceId: WorkspaceRef.openapi({ param: { name: "workspaceId", in: "path" } }),
});

function presentAssessment(row: AssessmentRow) {
  return {
    id: row.id,
    workspaceId: row.workspaceId,
    status: row.status,
    driftedResources: row.driftedResources ?? [],
    reason: row.reason,
    runId: row.runId,
    remediationRunId: row.remediationRunId,
    createdBy: row.createdBy ?? null,
    createdAt: new Date(row.createdAt).toISOString(),
    finishedAt: row.finishedAt === null ? null : new Date(row.finishedAt).toISOString(),
  };
}

export const assessmentRoutes = newRouter()
  .openapi(
    createRoute({
      method: "post",
      operationId: "startAssessment",
      path: "/{workspaceId}/assessments",
      tags: ["assessments"],
      summary: "Start a drift check now: a refresh-only plan that applies and writes nothing",
      security: [{ bearer: [] }],
      middleware: [requirePerson()] as const,
      request: { params: WorkspaceParams },
      responses: {
        201: jsonResponse(Assessment, "The pending assessment"),
        ...errorResponses(400, 401, 403, 404, 409, 429),
      },
    }),
    async (c) => {
      const { principal, workspace } = await workspaceOf(
        c,
        c.req.valid("param").workspaceId,
        "assessment.start",
      );
      const result = await startAssessment(c.var.deps, workspace, actorOf(principal));
      return c.json(presentAssessment(valueOrThrow(result)), 201);
    },
  )
  .openapi(
    createRoute({
      method: "get",
      operationId: "listAssessments",
      path: "/{workspaceId}/assessments",
      tags: ["assessments"],
      summary: "List a workspace's assessments, newest first",
      security: [{ bearer: [] }],
      middleware: [requirePerson()] as const,
      request: { params: WorkspaceParams, query: PageQuery },
      responses: {
        200: jsonResponse(
          z.object({ assessments: z.array(Assessment), nextCursor: z.string().nullable() }),
          "A page of assessments",
        ),
        ...errorResponses(400, 401, 404),
      },
    }),
    async (c) => {
      const { workspace } = await workspaceOf(
        c,
        c.req.valid("param").workspaceId,
        "workspace.read",
      );
      const page = valueOrThrow(
        await listAssessments(c.var.deps, workspace.id, c.req.valid("query")),
      );
      return c.json(
        { assessments: page.items.map(presentAssessment), nextCursor: page.nextCursor },
        200,
      );
    },
  );
