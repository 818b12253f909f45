/** `/api/v1/tokens`: org tokens. Owners manage them; secrets appear only in the create response. */
import { createRoute, z } from "@hono/zod-openapi";
import { actorOf } from "../authz/principal.ts";
import { valueOrThrow } from "../errors.ts";
import { personOf, requirePermission } from "../middleware/auth.ts";
import { errorResponses, idParam, jsonBody, jsonResponse, newRouter } from "../router.ts";
import { ROLES } from "./model.ts";
import { createOrgToken, listTokens, revokeOrgToken } from "./service.ts";

export const OrgToken = z
  .object({
    id: z.string(),
    role: z.enum(ROLES),
    description: z.string(),
    createdAt: z.string(),
    lastUsedAt: z.string().nullable(),
    revokedAt: z.string().nullable(),
  })
  .openapi("OrgToken");

const CreatedOrgToken = OrgToken.extend({
  token: z.string().openapi({ description: "The secret. Shown once; store it now." }),
}).openapi("CreatedOrgToken");

const CreateOrgToken = z
  .strictObject({
    role: z.enum(ROLES),
    description: z.string().trim().min(1).max(200),
  })
  .openapi("CreateOrgToken");

const TokenIdParams = z.strictObject({ tokenId: idParam("tok", "tokenId") });

export const tokenRoutes = newRouter()
  .openapi(
    createRoute({
      method: "post",
      operationId: "createOrgToken",
      path: "/",
      tags: ["tokens"],
      summary: "Create an org token",
      security: [{ bearer: [] }],
      middleware: [requirePermission("org_tokens.manage")] as const,
      request: { body: jsonBody(CreateOrgToken) },
      responses: {
        201: jsonResponse(CreatedOrgToken, "The token, with its secret shown this once"),
        ...errorResponses(400, 401, 403, 413, 415),
      },
    }),
    async (c) => {
      const principal = personOf(c);
      const body = c.req.valid("json");
      const created = await createOrgToken(c.var.deps, {
        orgId: principal.orgId,
        role: body.role,
        description: body.description,
        actor: actorOf(principal),
      });
      return c.json(created, 201);
    },
  )
  .openapi(
    createRoute({
      method: "get",
      operationId: "listOrgTokens",
      path: "/",
      tags: ["tokens"],
      summary: "List the org's active tokens (never their secrets)",
      security: [{ bearer: [] }],
      middleware: [requirePermission("org_tokens.manage")] as const,
      responses: {
        200: jsonResponse(z.object({ tokens: z.array(OrgToken) }), "Active tokens"),
        ...errorResponses(401, 403),
      },
    }),
    async (c) => {
      const principal = personOf(c);
      return c.json({ tokens: await listTokens(c.var.db, principal.orgId) }, 200);
    },
  )
  .openapi(
    createRoute({
      method: "delete",
      operationId: "revokeOrgToken",
      path: "/{tokenId}",
      tags: ["tokens"],
      summary: "Revoke an org token; its next request gets 401",
      security: [{ bearer: [] }],
      middleware: [requirePermission("org_tokens.manage")] as const,
      request: { params: TokenIdParams },
      responses: {
        200: jsonResponse(OrgToken, "The revoked token"),
        ...errorResponses(400, 401, 403, 404, 409),
      },
    }),
    async (c) => {
      const principal = personOf(c);
      const { tokenId } = c.req.valid("param");
      const result = await revokeOrgToken(c.var.deps, {
        orgId: principal.orgId,
        id: tokenId,
        actor: actorOf(principal),
      });
      return c.json(valueOrThrow(result), 200);
    },
  );
