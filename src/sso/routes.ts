/**
 * `/api/v1/organization/sso`: an organization's OpenID Connect sign-in, for owners. `GET` never
 * shows the client secret; `DELETE` turns sign-in through the provider off.
 */
import { createRoute, z } from "@hono/zod-openapi";
import { actorOf } from "../authz/principal.ts";
import { ApiError, valueOrThrow } from "../errors.ts";
import { personOf, requirePermission } from "../middleware/auth.ts";
import { errorResponses, jsonBody, jsonResponse, newRouter } from "../router.ts";
import { PutSso } from "./model.ts";
import { deleteSso, putSso, showSso } from "./service.ts";

const Sso = z
  .object({
    issuer: z.string(),
    clientId: z.string(),
    groupsClaim: z.string(),
    emailClaim: z.string(),
    hasClientSecret: z.boolean(),
    updatedAt: z.string(),
  })
  .openapi("Sso");

const tags = ["sso"];
const security = [{ bearer: [] }];
const owners = requirePermission("sso.manage");

export const ssoRoutes = newRouter()
  .openapi(
    createRoute({
      method: "put",
      operationId: "putSso",
      path: "/",
      tags,
      summary: "Configure sign-in through an OpenID Connect provider",
      description:
        "The issuer must be https (plain http only for loopback issuers where OIDC_ALLOW_LOOPBACK_ISSUERS is true) and its discovery document must name authorization and token endpoints. Register <origin>/auth/sso/callback as the client's redirect URI.",
      security,
      middleware: [owners] as const,
      request: { body: jsonBody(PutSso) },
      responses: {
        200: jsonResponse(Sso, "The settings, without the secret"),
        ...errorResponses(400, 401, 403, 413, 415, 503),
      },
    }),
    async (c) => {
      const principal = personOf(c);
      const ctx = { orgId: principal.orgId, actor: actorOf(principal), now: c.var.deps.now() };
      return c.json(valueOrThrow(await putSso(c.var.db, c.env, ctx, c.req.valid("json"))), 200);
    },
  )
  .openapi(
    createRoute({
      method: "get",
      operationId: "getSso",
      path: "/",
      tags,
      summary: "The organization's sign-in provider (never its secret)",
      security,
      middleware: [owners] as const,
      responses: {
        200: jsonResponse(Sso, "The settings"),
        ...errorResponses(401, 403, 404),
      },
    }),
    async (c) => {
      const sso = await showSso(c.var.db, personOf(c).orgId);
      if (!sso) {
        throw new ApiError("NOT_FOUND", "this organization has no single sign-on");
      }
      return c.json(sso, 200);
    },
  )
  .openapi(
    createRoute({
      method: "delete",
      operationId: "deleteSso",
      path: "/",
      tags,
      summary: "Turn sign-in through the provider off (sessions already started live on)",
      security,
      middleware: [owners] as const,
      responses: {
        204: { description: "Turned off" },
        ...errorResponses(401, 403, 404),
      },
    }),
    async (c) => {
      const principal = personOf(c);
      const ctx = { orgId: principal.orgId, actor: actorOf(principal), now: c.var.deps.now() };
      valueOrThrow(await deleteSso(c.var.db, ctx));
      return c.body(null, 204);
    },
  );
