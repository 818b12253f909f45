/**
 * The TFE API's projects over Outpost's projects (go-tfe `Projects`, the `tfe_project` resource,
 * and the `cloud` block's `project`, which `terraform init` lists by name and creates when
 * missing): list by name (`filter[names]`, `q`), create, read, update and delete. Terraform
 * Cloud's project settings Outpost has no counterpart for (default execution mode and agent
 * pool, auto-destroy, tag bindings) are not answered and are ignored when sent.
 */
import { createRoute, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { decideProject, type Grants, type ProjectAction } from "../authz/model.ts";
import { actorOf } from "../authz/principal.ts";
import { grantsOnProject } from "../authz/service.ts";
import type { AppEnv } from "../env.ts";
import { valueOrThrow } from "../errors.ts";
import { personOf, requirePermission, requirePerson } from "../middleware/auth.ts";
import { projectOf } from "../projects/http.ts";
import { type Project, ProjectDescription, ProjectName } from "../projects/model.ts";
import {
  createProject,
  deleteProject,
  listProjects,
  showProject,
  updateProject,
} from "../projects/service.ts";
import { idParam, newRouter } from "../router.ts";
import {
  documentBody,
  documentResponse,
  errorDocuments,
  pageOf,
  type Resource,
  related,
  sendDocument,
  sendEmpty,
  TfePageQuery,
} from "./jsonapi.ts";
import { callerOrganizationName, organizationOf } from "./organization.ts";
import { OrgParams } from "./organization-routes.ts";

const tags = ["terraform cli"];
const security = [{ bearer: [] }];
/** Projects listed at most: an organization has a handful, pages are cut from these. */
const MAX_LISTED = 1000;

const IdParams = z.strictObject({
  projectId: idParam("prj", "projectId"),
});

const Attributes = z.object({
  name: ProjectName.optional(),
  description: ProjectDescription.optional(),
});
const CreateDocument = z
  .object({
    data: z.object({
      type: z.literal("projects"),
      attributes: Attributes.extend({ name: ProjectName }),
    }),
  })
  .openapi("TfeProjectCreateDocument");
const UpdateDocument = z
  .object({ data: z.object({ type: z.literal("projects"), attributes: Attributes }) })
  .openapi("TfeProjectUpdateDocument");

const PERMISSIONS: Record<string, ProjectAction> = {
  "can-read": "project.read",
  "can-update": "project.update",
  "can-destroy": "project.delete",
  "can-create-workspace": "project.add_workspace",
  "can-move-workspace": "project.add_workspace",
};

/** The project as a `projects` resource, with what `grants` let its caller do there. */
function projectResource(project: Project, organizationName: string, grants: Grants): Resource {
  return {
    id: project.id,
    type: "projects",
    attributes: {
      name: project.name,
      description: project.description,
      "created-at": project.createdAt,
      "workspace-count": project.workspaceCount,
      permissions: Object.fromEntries(
        Object.entries(PERMISSIONS).map(([name, action]) => [
          name,
          decideProject(grants, action) === "allow",
        ]),
      ),
    },
    relationships: { organization: related("organizations", organizationName) },
    links: { self: `/api/v2/projects/${project.id}` },
  };
}

async function sendProject(
  c: Context<AppEnv>,
  project: Project,
  row: { id: string; orgId: string },
  status: 200 | 201 = 200,
) {
  const grants = await grantsOnProject(c.var.db, personOf(c), row);
  const data = projectResource(project, await callerOrganizationName(c), grants);
  return sendDocument(c, { data }, status);
}

const ListQuery = z.object({
  ...TfePageQuery,
  "filter[names]": z.string().max(2000).optional(),
  q: z.string().max(100).optional(),
});

const byId = (method: "get" | "delete", operationId: string, summary: string, statuses: number[]) =>
  createRoute({
    method,
    operationId,
    path: "/projects/{projectId}",
    tags,
    summary,
    security,
    middleware: [requirePerson()] as const,
    request: { params: IdParams },
    responses: {
      ...(method === "delete"
        ? { 204: { description: "Deleted" } }
        : { 200: documentResponse("The project") }),
      ...errorDocuments(...statuses),
    },
  });

export const projectRoutes = newRouter()
  .openapi(
    createRoute({
      method: "get",
      operationId: "tfeListProjects",
      path: "/organizations/{organization}/projects",
      tags,
      summary: "The projects the caller may see, by name (TFE API)",
      security,
      middleware: [requirePerson()] as const,
      request: { params: OrgParams, query: ListQuery },
      responses: {
        200: documentResponse("A page of projects with meta.pagination"),
        ...errorDocuments(400, 401, 404),
      },
    }),
    async (c) => {
      const { principal, organization } = await organizationOf(
        c,
        c.req.valid("param").organization,
      );
      const query = c.req.valid("query");
      const names = query["filter[names]"]?.split(",").map((name) => name.trim());
      const search = query.q?.toLowerCase();
      const all = (await listProjects(c.var.db, principal, { limit: MAX_LISTED })).filter(
        ({ project }) =>
          (names === undefined || names.includes(project.name)) &&
          (search === undefined || project.name.toLowerCase().includes(search)),
      );
      const { items, meta } = pageOf(all, query);
      const data = await Promise.all(
        items.map(async ({ row, project }) =>
          projectResource(
            project,
            organization.name,
            await grantsOnProject(c.var.db, principal, row),
          ),
        ),
      );
      return sendDocument(c, { data, meta });
    },
  )
  .openapi(
    createRoute({
      method: "post",
      operationId: "tfeCreateProject",
      path: "/organizations/{organization}/projects",
      tags,
      summary: "Create a project (TFE API)",
      security,
      middleware: [requirePermission("projects.create")] as const,
      request: { params: OrgParams, body: documentBody(CreateDocument) },
      responses: {
        201: documentResponse("The project"),
        ...errorDocuments(400, 401, 403, 404, 409, 415),
      },
    }),
    async (c) => {
      const { principal } = await organizationOf(c, c.req.valid("param").organization);
      const { name, description } = c.req.valid("json").data.attributes;
      const ctx = { orgId: principal.orgId, actor: actorOf(principal), now: c.var.deps.now() };
      const created = valueOrThrow(await createProject(c.var.db, ctx, { name, description }));
      return sendProject(c, created, { id: created.id, orgId: principal.orgId }, 201);
    },
  )
  .openapi(byId("get", "tfeReadProject", "A project (TFE API)", [400, 401, 404]), async (c) => {
    const { project } = await projectOf(c, c.req.valid("param").projectId, "project.read");
    return sendProject(c, await showProject(c.var.db, project), project);
  })
  .openapi(
    createRoute({
      method: "patch",
      operationId: "tfeUpdateProject",
      path: "/projects/{projectId}",
      tags,
      summary: "Rename or redescribe a project (TFE API)",
      security,
      middleware: [requirePerson()] as const,
      request: { params: IdParams, body: documentBody(UpdateDocument) },
      responses: {
        200: documentResponse("The project"),
        ...errorDocuments(400, 401, 403, 404, 409, 415),
      },
    }),
    async (c) => {
      const { principal, project } = await projectOf(
        c,
        c.req.valid("param").projectId,
        "project.update",
      );
      const ctx = { orgId: principal.orgId, actor: actorOf(principal), now: c.var.deps.now() };
      const patch = c.req.valid("json").data.attributes;
      const updated = valueOrThrow(await updateProject(c.var.db, ctx, project, patch));
      return sendProject(c, updated, project);
    },
  )
  .openapi(
    byId(
      "delete",
      "tfeDeleteProject",
      "Delete an empty project (TFE API)",
      [400, 401, 403, 404, 409],
    ),
    async (c) => {
      const { principal, project } = await projectOf(
        c,
        c.req.valid("param").projectId,
        "project.delete",
      );
      const ctx = { orgId: principal.orgId, actor: actorOf(principal), now: c.var.deps.now() };
      valueOrThrow(await deleteProject(c.var.db, ctx, project));
      return sendEmpty(c);
    },
  );
