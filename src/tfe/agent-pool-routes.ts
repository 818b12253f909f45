/**
 * The TFE API's agent pools, read only (go-tfe `agent_pool.go`, the `tfe_agent_pool` data
 * source): the organization's pools by name and one by id, over Outpost's pool service and its
 * `pools.read` permission. Creating pools and agent tokens stays on `/api/v1`.
 */
import { createRoute, z } from "@hono/zod-openapi";
import { valueOrThrow } from "../errors.ts";
import { personOf, requirePermission } from "../middleware/auth.ts";
import { getOrganization } from "../orgs/service.ts";
import { getPoolDetail, listPools } from "../pools/service.ts";
import { idParam, newRouter } from "../router.ts";
import {
  documentResponse,
  errorDocuments,
  pageOf,
  type Resource,
  related,
  sendDocument,
  TfePageQuery,
} from "./jsonapi.ts";
import { organizationOf } from "./organization.ts";
import { OrgParams } from "./organization-routes.ts";

const tags = ["terraform cli"];
const security = [{ bearer: [] }];

type Pool = Awaited<ReturnType<typeof listPools>>[number];

/** The pool as an `agent-pools` resource; `agentCount` when the pool object was asked. */
function poolResource(pool: Pool, organizationName: string, agentCount: number | null): Resource {
  return {
    id: pool.id,
    type: "agent-pools",
    attributes: {
      name: pool.name,
      "created-at": pool.createdAt,
      "organization-scoped": pool.organizationScoped,
      // Counting agents asks each pool's Durable Object: a read of one pool does, a list not.
      "agent-count": agentCount,
    },
    relationships: { organization: related("organizations", organizationName) },
    links: { self: `/api/v2/agent-pools/${pool.id}` },
  };
}

const ListQuery = z.object({
  ...TfePageQuery,
  q: z.string().max(100).optional(),
  "filter[allowed_workspaces][name]": z.string().max(100).optional(),
});

export const agentPoolRoutes = newRouter()
  .openapi(
    createRoute({
      method: "get",
      operationId: "tfeListAgentPools",
      path: "/organizations/{organization}/agent-pools",
      tags,
      summary: "The organization's agent pools, by name; `q` filters by part of the name (TFE API)",
      security,
      middleware: [requirePermission("pools.read")] as const,
      request: { params: OrgParams, query: ListQuery },
      responses: {
        200: documentResponse("A page of agent pools with meta.pagination"),
        ...errorDocuments(400, 401, 403, 404),
      },
    }),
    async (c) => {
      const { principal, organization } = await organizationOf(
        c,
        c.req.valid("param").organization,
      );
      const query = c.req.valid("query");
      const search = query.q?.toLowerCase();
      const pools = (await listPools(c.var.db, principal.orgId))
        .filter((pool) => search === undefined || pool.name.toLowerCase().includes(search))
        .sort((a, b) => a.name.localeCompare(b.name));
      const { items, meta } = pageOf(pools, query);
      return sendDocument(c, {
        data: items.map((pool) => poolResource(pool, organization.name, null)),
        meta,
      });
    },
  )
  .openapi(
    createRoute({
      method: "get",
      operationId: "tfeReadAgentPool",
      path: "/agent-pools/{poolId}",
      tags,
      summary: "An agent pool (TFE API)",
      security,
      middleware: [requirePermission("pools.read")] as const,
      request: {
        params: z.strictObject({
          poolId: idParam("pool", "poolId"),
        }),
      },
      responses: {
        200: documentResponse("The agent pool"),
        ...errorDocuments(400, 401, 403, 404),
      },
    }),
    async (c) => {
      const principal = personOf(c);
      const { poolId } = c.req.valid("param");
      const detail = valueOrThrow(
        await getPoolDetail(c.var.db, c.env, principal.orgId, poolId, false),
      );
      const organization = await getOrganization(c.var.db, principal.orgId);
      if (!organization) {
        throw new Error("a person's organization is missing");
      }
      return sendDocument(c, {
        data: poolResource(detail, organization.name, detail.agents.length),
      });
    },
  );
