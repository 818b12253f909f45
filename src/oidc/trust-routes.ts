/**
 * `/api/v1/pools/{poolId}/oidc-trusts`: the OIDC issuers whose tokens a pool's agents may
 * exchange for agent tokens. Owners manage them, like agent tokens.
 */
import { createRoute, z } from "@hono/zod-openapi";
import { actorOf } from "../authz/principal.ts";
import { valueOrThrow } from "../errors.ts";
import { personOf, requirePermission } from "../middleware/auth.ts";
import { idOf } from "../names/http.ts";
import { PoolRef } from "../pools/model.ts";
import { errorResponses, idParam, jsonBody, jsonResponse, newRouter } from "../router.ts";
import { ClaimConditions } from "./trust-model.ts";
import { createTrust, deleteTrust, listTrusts } from "./trust-service.ts";

const OidcTrust = z
  .object({
    id: z.string(),
    poolId: z.string(),
    issuer: z.string(),
    audience: z.string(),
    claims: z.record(z.string(), z.string()),
    description: z.string(),
    createdAt: z.string(),
  })
  .openapi("OidcTrust");

const CreateOidcTrust = z
  .strictObject({
    issuer: z.string().min(1).max(500).openapi({
      example: "https://token.actions.githubusercontent.com",
      description: "Exactly the tokens' iss: https (loopback http only on development deployments)",
    }),
    audience: z.string().trim().min(1).max(500).openapi({
      example: "outpost",
      description: "A value the tokens' aud must contain",
    }),
    claims: ClaimConditions,
    description: z.string().max(200).optional(),
  })
  .openapi("CreateOidcTrust");

const PoolParams = z.strictObject({ poolId: PoolRef });
const TrustParams = PoolParams.extend({ trustId: idParam("otr", "trustId") });

export const oidcTrustRoutes = newRouter()
  .openapi(
    createRoute({
      method: "post",
      operationId: "createOidcTrust",
      path: "/{poolId}/oidc-trusts",
      tags: ["pools"],
      summary: "Trust an OIDC issuer: its tokens that meet every condition log agents in",
      security: [{ bearer: [] }],
      middleware: [requirePermission("oidc_trusts.manage")] as const,
      request: { params: PoolParams, body: jsonBody(CreateOidcTrust) },
      responses: {
        201: jsonResponse(OidcTrust, "The trust"),
        ...errorResponses(400, 401, 403, 404, 409, 413, 415),
      },
    }),
    async (c) => {
      const principal = personOf(c);
      const poolId = await idOf(c, "pool", c.req.valid("param").poolId);
      const result = await createTrust(c.var.deps, {
        ...c.req.valid("json"),
        orgId: principal.orgId,
        poolId,
        actor: actorOf(principal),
      });
      return c.json(valueOrThrow(result), 201);
    },
  )
  .openapi(
    createRoute({
      method: "get",
      operationId: "listOidcTrusts",
      path: "/{poolId}/oidc-trusts",
      tags: ["pools"],
      summary: "List the pool's OIDC trusts",
      security: [{ bearer: [] }],
      middleware: [requirePermission("oidc_trusts.manage")] as const,
      request: { params: PoolParams },
      responses: {
        200: jsonResponse(z.object({ trusts: z.array(OidcTrust) }), "Trusts, oldest first"),
        ...errorResponses(400, 401, 403, 404),
      },
    }),
    async (c) => {
      const principal = personOf(c);
      const poolId = await idOf(c, "pool", c.req.valid("param").poolId);
      const result = await listTrusts(c.var.db, principal.orgId, poolId);
      return c.json({ trusts: valueOrThrow(result) }, 200);
    },
  )
  .openapi(
    createRoute({
      method: "delete",
      operationId: "deleteOidcTrust",
      path: "/{poolId}/oidc-trusts/{trustId}",
      tags: ["pools"],
      summary: "Remove a trust; the agent tokens issued under it are revoked and their agents exit",
      security: [{ bearer: [] }],
      middleware: [requirePermission("oidc_trusts.manage")] as const,
      request: { params: TrustParams },
      responses: {
        200: jsonResponse(
          z.object({ revokedTokenIds: z.array(z.string()) }),
          "Removed; the tokens it had issued are revoked",
        ),
        ...errorResponses(400, 401, 403, 404),
      },
    }),
    async (c) => {
      const principal = personOf(c);
      const { trustId } = c.req.valid("param");
      const poolId = await idOf(c, "pool", c.req.valid("param").poolId);
      const result = await deleteTrust(c.var.deps, {
        orgId: principal.orgId,
        poolId,
        id: trustId,
        actor: actorOf(principal),
      });
      return c.json(valueOrThrow(result), 200);
    },
  );
