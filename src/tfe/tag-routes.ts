/**
 * The TFE API's workspace tags (go-tfe `Workspaces.ListTags/AddTags/RemoveTags`, the `tfe`
 * provider's `tag_names`, and what `terraform init` calls when a tagged workspace lacks the
 * `cloud` block's tags): `/workspaces/{id}/relationships/tags`, and the organization's tags.
 * Reading needs read access to the workspace; adding and removing, the right to update it.
 */
import { createRoute, z } from "@hono/zod-openapi";
import { actorOf } from "../authz/principal.ts";
import { valueOrThrow } from "../errors.ts";
import { requirePerson } from "../middleware/auth.ts";
import { idParam, newRouter } from "../router.ts";
import { changeWorkspaceTags, tagsOfWorkspace, tagsVisibleTo } from "../workspace-tags/service.ts";
import { workspaceOf } from "../workspaces/http.ts";
import {
  documentBody,
  documentResponse,
  errorDocuments,
  pageOf,
  type Resource,
  sendDocument,
  sendEmpty,
  TfePageQuery,
} from "./jsonapi.ts";
import { organizationOf } from "./organization.ts";
import { OrgParams } from "./organization-routes.ts";
import { TagIdentifier } from "./workspace-document.ts";
import { namesOfIdentifiers } from "./workspace-placement.ts";

const tags = ["terraform cli"];
const security = [{ bearer: [] }];

const IdParams = z.strictObject({
  workspaceId: idParam("ws", "workspaceId"),
});

const TagsDocument = z
  .object({ data: z.array(TagIdentifier).min(1).max(50) })
  .openapi("TfeTagsDocument");

function tagResource(tag: { id: string; name: string; count?: number }): Resource {
  return {
    id: tag.id,
    type: "tags",
    attributes: {
      name: tag.name,
      ...(tag.count === undefined ? {} : { "instance-count": tag.count }),
    },
  };
}

const changeRoute = (method: "post" | "delete") =>
  createRoute({
    method,
    operationId: method === "post" ? "tfeAddWorkspaceTags" : "tfeRemoveWorkspaceTags",
    path: "/workspaces/{workspaceId}/relationships/tags",
    tags,
    summary:
      method === "post"
        ? "Add tags to a workspace, by name or tag id (TFE API)"
        : "Take tags off a workspace (TFE API)",
    security,
    middleware: [requirePerson()] as const,
    request: { params: IdParams, body: documentBody(TagsDocument) },
    responses: { 204: { description: "Done" }, ...errorDocuments(400, 401, 403, 404, 415) },
  });

export const tagRoutes = newRouter()
  .openapi(
    createRoute({
      method: "get",
      operationId: "tfeListWorkspaceTags",
      path: "/workspaces/{workspaceId}/relationships/tags",
      tags,
      summary: "The workspace's tags (TFE API)",
      security,
      middleware: [requirePerson()] as const,
      request: { params: IdParams, query: z.object(TfePageQuery) },
      responses: {
        200: documentResponse("A page of tags with meta.pagination"),
        ...errorDocuments(400, 401, 404),
      },
    }),
    async (c) => {
      const { workspaceId } = c.req.valid("param");
      const { principal, workspace } = await workspaceOf(c, workspaceId, "workspace.read");
      const query = c.req.valid("query");
      const all = await tagsOfWorkspace(c.var.db, principal.orgId, workspace.id);
      const { items, meta } = pageOf(all, query);
      return sendDocument(c, { data: items.map(tagResource), meta });
    },
  )
  .openapi(changeRoute("post"), async (c) => {
    const { workspaceId } = c.req.valid("param");
    const { principal, workspace } = await workspaceOf(c, workspaceId, "workspace.update");
    const names = valueOrThrow(
      await namesOfIdentifiers(c.var.db, principal.orgId, c.req.valid("json").data),
    );
    const target = { orgId: principal.orgId, workspaceId: workspace.id, actor: actorOf(principal) };
    valueOrThrow(await changeWorkspaceTags(c.var.deps, target, "add", names));
    return sendEmpty(c);
  })
  .openapi(changeRoute("delete"), async (c) => {
    const { workspaceId } = c.req.valid("param");
    const { principal, workspace } = await workspaceOf(c, workspaceId, "workspace.update");
    const names = valueOrThrow(
      await namesOfIdentifiers(c.var.db, principal.orgId, c.req.valid("json").data),
    );
    const target = { orgId: principal.orgId, workspaceId: workspace.id, actor: actorOf(principal) };
    valueOrThrow(await changeWorkspaceTags(c.var.deps, target, "remove", names));
    return sendEmpty(c);
  })
  .openapi(
    createRoute({
      method: "get",
      operationId: "tfeListOrganizationTags",
      path: "/organizations/{organization}/tags",
      tags,
      summary: "The organization's workspace tags with how many workspaces carry each (TFE API)",
      security,
      middleware: [requirePerson()] as const,
      request: {
        params: OrgParams,
        query: z.object({ ...TfePageQuery, q: z.string().max(255).optional() }),
      },
      responses: {
        200: documentResponse("A page of tags with meta.pagination"),
        ...errorDocuments(400, 401, 404),
      },
    }),
    async (c) => {
      const { principal } = await organizationOf(c, c.req.valid("param").organization);
      const query = c.req.valid("query");
      const search = query.q?.toLowerCase();
      const all = (await tagsVisibleTo(c.var.db, principal)).filter(
        (tag) => search === undefined || tag.name.includes(search),
      );
      const { items, meta } = pageOf(all, query);
      return sendDocument(c, { data: items.map(tagResource), meta });
    },
  );
