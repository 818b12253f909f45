/**
 * `/api/v1/pools/{poolId}/tokens`: agent tokens. Owners manage them; a secret appears only in the
 * create response. Revoking one makes its agents exit.
 */
import { createRoute, z } from "@hono/zod-openapi";
import { actorOf } from "../authz/principal.ts";
import { valueOrThrow } from "../errors.ts";
import { personOf, requirePermission } from "../middleware/auth.ts";
import { idOf } from "../names/http.ts";
import { refParam } from "../names/model.ts";
import { errorResponses, jsonBody, jsonResponse, newRouter } from "../router.ts";
import { PoolRef } from "./model.ts";
import { createAgentToken, listAgentTokens, revokeAgentToken } from "./service.ts";

const AgentToken = z
  .object({
    id: z.string(),
    poolId: z.string(),
    description: z.string(),
    createdAt: z.string(),
    lastUsedAt: z.string().nullable().openapi({
      description:
        "The latest use by any of its agents: their last contact with the pool (polls, heartbeats), or their last other call, to the minute",
    }),
    revokedAt: z.string().nullable(),
    expiresAt: z.string().nullable().openapi({
      description: "Tokens issued by an OIDC exchange expire; static tokens (null) do not",
    }),
    oidc: z
      .object({
        trustId: z.string(),
        issuer: z.string(),
        subject: z.string().nullable(),
        chainId: z.string().openapi({
          description:
            "The first token of this agent's chain of renewals; the pool lists the agent under it",
        }),
      })
      .nullable()
      .openapi({ description: "Set when the token was issued by an OIDC exchange" }),
  })
  .openapi("AgentToken");

const CreatedAgentToken = AgentToken.extend({
  token: z.string().openapi({ description: "The secret. Shown once; store it now." }),
}).openapi("CreatedAgentToken");

const RevokedAgentToken = AgentToken.extend({
  exitedAgentIds: z.array(z.string()).openapi({ description: "Agents told to exit" }),
}).openapi("RevokedAgentToken");

const CreateAgentToken = z
  .strictObject({ description: z.string().trim().min(1).max(200) })
  .openapi("CreateAgentToken");

const PoolParams = z.strictObject({ poolId: PoolRef });
const TokenParams = PoolParams.extend({ tokenId: refParam("agentToken", "tokenId") });

export const poolTokenRoutes = newRouter()
  .openapi(
    createRoute({
      method: "post",
      operationId: "createAgentToken",
      path: "/{poolId}/tokens",
      tags: ["pools"],
      summary: "Create an agent token for the pool",
      security: [{ bearer: [] }],
      middleware: [requirePermission("pools.manage")] as const,
      request: { params: PoolParams, body: jsonBody(CreateAgentToken) },
      responses: {
        201: jsonResponse(CreatedAgentToken, "The token, with its secret shown this once"),
        ...errorResponses(400, 401, 403, 404, 413, 415),
      },
    }),
    async (c) => {
      const principal = personOf(c);
      const poolId = await idOf(c, "pool", c.req.valid("param").poolId);
      const result = await createAgentToken(c.var.deps, {
        orgId: principal.orgId,
        poolId,
        description: c.req.valid("json").description,
        actor: actorOf(principal),
      });
      return c.json(valueOrThrow(result), 201);
    },
  )
  .openapi(
    createRoute({
      method: "get",
      operationId: "listAgentTokens",
      path: "/{poolId}/tokens",
      tags: ["pools"],
      summary: "List the pool's active agent tokens with created and last-used times",
      security: [{ bearer: [] }],
      middleware: [requirePermission("pools.manage")] as const,
      request: { params: PoolParams },
      responses: {
        200: jsonResponse(z.object({ tokens: z.array(AgentToken) }), "Active tokens"),
        ...errorResponses(400, 401, 403, 404),
      },
    }),
    async (c) => {
      const principal = personOf(c);
      const poolId = await idOf(c, "pool", c.req.valid("param").poolId);
      const result = await listAgentTokens(c.var.deps, principal.orgId, poolId);
      return c.json({ tokens: valueOrThrow(result) }, 200);
    },
  )
  .openapi(
    createRoute({
      method: "delete",
      operationId: "revokeAgentToken",
      path: "/{poolId}/tokens/{tokenId}",
      tags: ["pools"],
      summary: "Revoke an agent token: its next request gets 401 and its agents are told to exit",
      security: [{ bearer: [] }],
      middleware: [requirePermission("pools.manage")] as const,
      request: { params: TokenParams },
      responses: {
        200: jsonResponse(RevokedAgentToken, "The revoked token"),
        ...errorResponses(400, 401, 403, 404, 409),
      },
    }),
    async (c) => {
      const principal = personOf(c);
      const params = c.req.valid("param");
      const poolId = await idOf(c, "pool", params.poolId);
      const result = await revokeAgentToken(c.var.deps, {
        orgId: principal.orgId,
        poolId,
        id: await idOf(c, "agentToken", params.tokenId, poolId),
        actor: actorOf(principal),
      });
      return c.json(valueOrThrow(result), 200);
    },
  );
