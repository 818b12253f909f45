/**
 * `/api/v1/projects`: organization admins create projects; what a caller may do to one is
 * `may`'s (read to see it, admin to rename or delete it). `{projectId}` in a path is the
 * project's `prj_…` id or its name.
 */
import { createRoute, z } from "@hono/zod-openapi";
import { actorOf } from "../authz/principal.ts";
import { valueOrThrow } from "../errors.ts";
import { decodeCursor, PageQuery, takePage } from "../lib/paging.ts";
import { personOf, requirePermission, requirePerson } from "../middleware/auth.ts";
import { errorResponses, jsonBody, jsonResponse, newRouter } from "../router.ts";
import { projectOf } from "./http.ts";
import { CreateProject, ProjectParams, ProjectSchema, UpdateProject } from "./schemas.ts";
import {
  createProject,
  deleteProject,
  listProjects,
  showProject,
  updateProject,
} from "./service.ts";

const tags = ["projects"];
const security = [{ bearer: [] }];

export const projectRoutes = newRouter()
  .openapi(
    createRoute({
      method: "post",
      operationId: "createProject",
      path: "/",
      tags,
      summary: "Create a project",
      security,
      middleware: [requirePermission("projects.create")] as const,
      request: { body: jsonBody(CreateProject) },
      responses: {
        201: jsonResponse(ProjectSchema, "The project"),
        ...errorResponses(400, 401, 403, 409, 413, 415),
      },
    }),
    async (c) => {
      const principal = personOf(c);
      const ctx = { orgId: principal.orgId, actor: actorOf(principal), now: c.var.deps.now() };
      const project = valueOrThrow(await createProject(c.var.db, ctx, c.req.valid("json")));
      return c.json(project, 201);
    },
  )
  .openapi(
    createRoute({
      method: "get",
      operationId: "listProjects",
      path: "/",
      tags,
      summary: "List the projects the caller may see by name, a page at a time",
      security,
      middleware: [requirePerson()] as const,
      request: { query: PageQuery },
      responses: {
        200: jsonResponse(
          z.object({ projects: z.array(ProjectSchema), nextCursor: z.string().nullable() }),
          "A page of projects; pass nextCursor as cursor for the next",
        ),
        ...errorResponses(400, 401),
      },
    }),
    async (c) => {
      const { limit, cursor } = c.req.valid("query");
      const after =
        cursor === undefined ? undefined : valueOrThrow(decodeCursor(cursor, ["string"]))[0];
      const rows = await listProjects(c.var.db, personOf(c), { limit, after });
      const page = takePage(rows, limit, (r) => [r.row.name]);
      return c.json(
        { projects: page.items.map((r) => r.project), nextCursor: page.nextCursor },
        200,
      );
    },
  )
  .openapi(
    createRoute({
      method: "get",
      operationId: "getProject",
      path: "/{projectId}",
      tags,
      summary: "Get a project by id or name",
      security,
      middleware: [requirePerson()] as const,
      request: { params: ProjectParams },
      responses: {
        200: jsonResponse(ProjectSchema, "The project"),
        ...errorResponses(400, 401, 404),
      },
    }),
    async (c) => {
      const { project } = await projectOf(c, c.req.valid("param").projectId, "project.read");
      return c.json(await showProject(c.var.db, project), 200);
    },
  )
  .openapi(
    createRoute({
      method: "patch",
      operationId: "updateProject",
      path: "/{projectId}",
      tags,
      summary: "Rename or redescribe a project",
      security,
      middleware: [requirePerson()] as const,
      request: { params: ProjectParams, body: jsonBody(UpdateProject) },
      responses: {
        200: jsonResponse(ProjectSchema, "The project"),
        ...errorResponses(400, 401, 403, 404, 409, 413, 415),
      },
    }),
    async (c) => {
      const { principal, project } = await projectOf(
        c,
        c.req.valid("param").projectId,
        "project.update",
      );
      const ctx = { orgId: principal.orgId, actor: actorOf(principal), now: c.var.deps.now() };
      const updated = await updateProject(c.var.db, ctx, project, c.req.valid("json"));
      return c.json(valueOrThrow(updated), 200);
    },
  )
  .openapi(
    createRoute({
      method: "delete",
      operationId: "deleteProject",
      path: "/{projectId}",
      tags,
      summary: "Delete an empty project",
      description:
        "Refused (409, saying how many) while the project holds workspaces, and for the organization's default project. Its team access and variable set links go with it.",
      security,
      middleware: [requirePerson()] as const,
      request: { params: ProjectParams },
      responses: {
        200: jsonResponse(ProjectSchema, "The deleted project"),
        ...errorResponses(400, 401, 403, 404, 409),
      },
    }),
    async (c) => {
      const { principal, project } = await projectOf(
        c,
        c.req.valid("param").projectId,
        "project.delete",
      );
      const ctx = { orgId: principal.orgId, actor: actorOf(principal), now: c.var.deps.now() };
      return c.json(valueOrThrow(await deleteProject(c.var.db, ctx, project)), 200);
    },
  );
