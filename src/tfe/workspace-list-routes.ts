/**
 * The TFE API's workspace list (go-tfe `Workspaces.List`, what `terraform workspace list` and the
 * `cloud` block's tags use): the workspaces the caller may see, by name, a numbered page at a
 * time, by part of the name, by tags (every tag must match) or by project.
 */
import { createRoute, z } from "@hono/zod-openapi";
import { grantsOn } from "../authz/service.ts";
import { reasonError } from "../errors.ts";
import { invalidInput } from "../lib/reason.ts";
import { requirePerson } from "../middleware/auth.ts";
import { newRouter } from "../router.ts";
import { searchedTags } from "../workspace-tags/model.ts";
import { tagsOfWorkspaces } from "../workspace-tags/service.ts";
import { countWorkspaces, listWorkspaces } from "../workspaces/service.ts";
import {
  documentResponse,
  errorDocuments,
  paginationMeta,
  sendDocument,
  TfePageQuery,
} from "./jsonapi.ts";
import { organizationOf } from "./organization.ts";
import { OrgParams } from "./organization-routes.ts";
import { workspaceResource } from "./workspace-document.ts";

const tags = ["terraform cli"];
const security = [{ bearer: [] }];

const ListQuery = z.object({
  ...TfePageQuery,
  "search[name]": z.string().min(1).max(90).optional(),
  "search[tags]": z.string().max(2000).optional(),
  "filter[project][id]": z
    .string()
    .regex(/^prj_[a-z2-7]{26}$/, "must be a prj_ id")
    .optional(),
});

export const workspaceListRoutes = newRouter().openapi(
  createRoute({
    method: "get",
    operationId: "tfeListWorkspaces",
    path: "/organizations/{organization}/workspaces",
    tags,
    summary: "The workspaces the caller may see, by name, a numbered page at a time (TFE API)",
    security,
    middleware: [requirePerson()] as const,
    request: { params: OrgParams, query: ListQuery },
    responses: {
      200: documentResponse("A page of workspaces with meta.pagination"),
      ...errorDocuments(400, 401, 404),
    },
  }),
  async (c) => {
    const { principal, organization } = await organizationOf(c, c.req.valid("param").organization);
    const query = c.req.valid("query");
    const searched = searchedTags(query["search[tags]"] ?? "");
    if (!searched.ok) {
      throw reasonError(
        invalidInput(
          "query.search[tags]",
          "search[tags] is a comma-separated list of at most 50 tags (letters, digits, ':', '_', '-')",
        ).reason,
      );
    }
    const number = query["page[number]"];
    const size = query["page[size]"];
    const filter = {
      search: query["search[name]"],
      tags: searched.names,
      projectId: query["filter[project][id]"],
    };
    const rows = (
      await listWorkspaces(c.var.db, principal, {
        limit: size,
        offset: (number - 1) * size,
        ...filter,
      })
    ).slice(0, size);
    const tagNames = await tagsOfWorkspaces(
      c.var.db,
      principal.orgId,
      rows.map(({ row }) => row.id),
    );
    const data = await Promise.all(
      rows.map(async ({ row, workspace }) =>
        workspaceResource(workspace, organization.name, await grantsOn(c.var.db, principal, row), {
          tagNames: tagNames.get(row.id) ?? [],
        }),
      ),
    );
    const total = await countWorkspaces(c.var.db, principal, filter);
    return sendDocument(c, { data, meta: paginationMeta({ number, size, total }) });
  },
);
