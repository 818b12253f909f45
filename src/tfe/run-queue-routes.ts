/**
 * What the cloud backend reads while a run waits (`internal/cloud/backend_common.go`
 * `waitForRun`: go-tfe `Organizations.ReadRunQueue` and `ReadCapacity`): the organization's
 * runs waiting in their pools' queues, oldest first with their position, and how many wait and
 * how many run. Only runs of workspaces the caller may read are listed.
 */
import { createRoute, z } from "@hono/zod-openapi";
import { readableWorkspaces } from "../authz/queries.ts";
import { runs } from "../db/schema.ts";
import { requirePerson } from "../middleware/auth.ts";
import { newRouter } from "../router.ts";
import { resolveWorkspace } from "../workspaces/service.ts";
import {
  documentResponse,
  errorDocuments,
  paginationMeta,
  type Resource,
  sendDocument,
  TfePageQuery,
} from "./jsonapi.ts";
import { organizationOf } from "./organization.ts";
import { OrgParams } from "./organization-routes.ts";
import { runResourceFor } from "./run-access.ts";
import { queuedRuns, runCapacity } from "./run-queries.ts";

const tags = ["terraform cli"];
const security = [{ bearer: [] }];

export const runQueueRoutes = newRouter()
  .openapi(
    createRoute({
      method: "get",
      operationId: "tfeReadRunQueue",
      path: "/organizations/{organization}/runs/queue",
      tags,
      summary: "The organization's runs waiting for an agent, oldest first (TFE API)",
      security,
      middleware: [requirePerson()] as const,
      request: { params: OrgParams, query: z.object(TfePageQuery) },
      responses: { 200: documentResponse("A page of runs"), ...errorDocuments(400, 401, 404) },
    }),
    async (c) => {
      const { principal } = await organizationOf(c, c.req.valid("param").organization);
      const query = c.req.valid("query");
      const page = { number: query["page[number]"], size: query["page[size]"] };
      const visible = readableWorkspaces(c.var.db, principal, runs.workspaceId);
      const [rows, [counted]] = await queuedRuns(c.var.db, principal.orgId, visible, page);
      const data: Resource[] = [];
      for (const [index, run] of rows.entries()) {
        const workspace = await resolveWorkspace(c.var.db, principal.orgId, run.workspaceId);
        if (workspace) {
          const resource = await runResourceFor(c, run, workspace);
          const position = (page.number - 1) * page.size + index + 1;
          data.push({
            ...resource,
            attributes: { ...resource.attributes, "position-in-queue": position },
          });
        }
      }
      return sendDocument(c, { data, meta: paginationMeta({ ...page, total: counted?.n ?? 0 }) });
    },
  )
  .openapi(
    createRoute({
      method: "get",
      operationId: "tfeReadCapacity",
      path: "/organizations/{organization}/capacity",
      tags,
      summary: "How many of the organization's runs wait for an agent and how many run (TFE API)",
      security,
      middleware: [requirePerson()] as const,
      request: { params: OrgParams },
      responses: { 200: documentResponse("The capacity"), ...errorDocuments(400, 401, 404) },
    }),
    async (c) => {
      const { principal, organization } = await organizationOf(
        c,
        c.req.valid("param").organization,
      );
      const { pending, running } = await runCapacity(c.var.db, principal.orgId);
      return sendDocument(c, {
        data: {
          id: organization.name,
          type: "organization-capacity",
          attributes: { pending: Number(pending), running: Number(running) },
        },
      });
    },
  );
