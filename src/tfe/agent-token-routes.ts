/**
 * The TFE API's agent tokens over Outpost's (go-tfe `AgentTokens`, the `tfe_agent_token`
 * resource): list and create a pool's tokens, read and delete one by id. Owners only
 * (`pools.manage`, as on `/api/v1/pools`); the secret is answered once, on create. Deleting
 * revokes: the token's agents are told to exit, as on `/api/v1`.
 */
import { createRoute, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { actorOf } from "../authz/principal.ts";
import type { AppEnv } from "../env.ts";
import { reasonError, valueOrThrow } from "../errors.ts";
import { refuse } from "../lib/reason.ts";
import { personOf, requirePermission } from "../middleware/auth.ts";
import {
  agentTokenPoolId,
  createAgentToken,
  listAgentTokens,
  revokeAgentToken,
} from "../pools/service.ts";
import { idParam, newRouter } from "../router.ts";
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

const tags = ["terraform cli"];
const security = [{ bearer: [] }];

const PoolParams = z.strictObject({
  poolId: idParam("pool", "poolId"),
});
const TokenParams = z.strictObject({
  tokenId: idParam("atok", "tokenId"),
});

const TokenDocument = z
  .object({
    data: z.object({
      type: z.literal("authentication-tokens"),
      attributes: z.object({ description: z.string().trim().min(1).max(200) }),
    }),
  })
  .openapi("TfeAgentTokenDocument");

type Token = {
  id: string;
  description: string;
  createdAt: string;
  lastUsedAt: string | null;
  token?: string;
};

function tokenResource(token: Token): Resource {
  return {
    id: token.id,
    type: "authentication-tokens",
    attributes: {
      description: token.description,
      "created-at": token.createdAt,
      "last-used-at": token.lastUsedAt,
      // The secret exists once, in the answer to its creation.
      token: token.token ?? null,
    },
  };
}

/** The token an id names in the caller's org, with its pool (else 404). */
async function tokenOf(c: Context<AppEnv>, tokenId: string) {
  const orgId = personOf(c).orgId;
  const poolId = await agentTokenPoolId(c.var.db, orgId, tokenId);
  const tokens = poolId ? valueOrThrow(await listAgentTokens(c.var.deps, orgId, poolId)) : [];
  const token = tokens.find((t) => t.id === tokenId);
  if (!poolId || !token) {
    throw reasonError(refuse("not_found", `agent token ${tokenId} not found`).reason);
  }
  return { poolId, token };
}

export const agentTokenRoutes = newRouter()
  .openapi(
    createRoute({
      method: "get",
      operationId: "tfeListAgentTokens",
      path: "/agent-pools/{poolId}/authentication-tokens",
      tags,
      summary: "An agent pool's active tokens, without their secrets (TFE API)",
      security,
      middleware: [requirePermission("pools.manage")] as const,
      request: { params: PoolParams, query: z.object(TfePageQuery) },
      responses: {
        200: documentResponse("A page of agent tokens with meta.pagination"),
        ...errorDocuments(400, 401, 403, 404),
      },
    }),
    async (c) => {
      const { poolId } = c.req.valid("param");
      const query = c.req.valid("query");
      const all = valueOrThrow(await listAgentTokens(c.var.deps, personOf(c).orgId, poolId));
      const { items, meta } = pageOf(all, query);
      return sendDocument(c, { data: items.map(tokenResource), meta });
    },
  )
  .openapi(
    createRoute({
      method: "post",
      operationId: "tfeCreateAgentToken",
      path: "/agent-pools/{poolId}/authentication-tokens",
      tags,
      summary: "Create an agent token; its secret is in this answer only (TFE API)",
      security,
      middleware: [requirePermission("pools.manage")] as const,
      request: { params: PoolParams, body: documentBody(TokenDocument) },
      responses: {
        201: documentResponse("The token with its secret"),
        ...errorDocuments(400, 401, 403, 404, 415),
      },
    }),
    async (c) => {
      const principal = personOf(c);
      const created = await createAgentToken(c.var.deps, {
        orgId: principal.orgId,
        poolId: c.req.valid("param").poolId,
        description: c.req.valid("json").data.attributes.description,
        actor: actorOf(principal),
      });
      c.header("cache-control", "no-store");
      return sendDocument(c, { data: tokenResource(valueOrThrow(created)) }, 201);
    },
  )
  .openapi(
    createRoute({
      method: "get",
      operationId: "tfeReadAgentToken",
      path: "/authentication-tokens/{tokenId}",
      tags,
      summary: "An agent token, without its secret (TFE API)",
      security,
      middleware: [requirePermission("pools.manage")] as const,
      request: { params: TokenParams },
      responses: {
        200: documentResponse("The token"),
        ...errorDocuments(400, 401, 403, 404),
      },
    }),
    async (c) => {
      const { token } = await tokenOf(c, c.req.valid("param").tokenId);
      return sendDocument(c, { data: tokenResource(token) });
    },
  )
  .openapi(
    createRoute({
      method: "delete",
      operationId: "tfeDeleteAgentToken",
      path: "/authentication-tokens/{tokenId}",
      tags,
      summary: "Revoke an agent token; its agents are told to exit (TFE API)",
      security,
      middleware: [requirePermission("pools.manage")] as const,
      request: { params: TokenParams },
      responses: { 204: { description: "Revoked" }, ...errorDocuments(400, 401, 403, 404) },
    }),
    async (c) => {
      const { tokenId } = c.req.valid("param");
      const { poolId } = await tokenOf(c, tokenId);
      const principal = personOf(c);
      valueOrThrow(
        await revokeAgentToken(c.var.deps, {
          orgId: principal.orgId,
          poolId,
          id: tokenId,
          actor: actorOf(principal),
        }),
      );
      return sendEmpty(c);
    },
  );
