/**
 * `POST /agent/v1/oidc/exchange`: an OIDC token for a short-lived agent token of the pool. No
 * Outpost credential is needed; a renewing agent may send its current agent token as bearer to
 * keep its registration. Refusals are 401 `OIDC_REJECTED` saying only "rejected" with the request
 * id (the check that failed is audited in the pool's organization for its owners), or 401
 * `TOKEN_REVOKED` when the renewed chain was revoked; none echoes the token.
 */
import { createRoute, z } from "@hono/zod-openapi";
import { ApiError, valueOrThrow } from "../errors.ts";
import { credentialFromHeader } from "../middleware/auth.ts";
import { errorResponses, jsonBody, jsonResponse, newRouter } from "../router.ts";
import { tokenKind } from "../tokens/model.ts";
import { exchangeOidcToken } from "./exchange.ts";

/** Longer than any JWT an issuer hands out, short enough to refuse junk before parsing it. */
const MAX_OIDC_TOKEN_CHARS = 16_384;

const ExchangeRequest = z
  .strictObject({
    poolId: z.string().regex(/^pool_[a-z2-7]{26}$/, "must be a pool_ id"),
    oidcToken: z.string().min(1).max(MAX_OIDC_TOKEN_CHARS).openapi({
      description: "A JWT from an issuer the pool trusts",
    }),
    tokenExpirationSeconds: z.int().min(10).max(86_400).default(3600).openapi({
      description: "Lifetime of the agent token, capped by the pool's maxTokenExpirationSeconds",
    }),
  })
  .openapi("OidcExchangeRequest");

const ExchangeResponse = z
  .object({
    token: z.string().openapi({ description: "An agent token (op_agent_…) of the pool" }),
    expiresAt: z.string(),
    tokenId: z.string(),
    poolId: z.string(),
  })
  .openapi("OidcExchangeResponse");

export const exchangeRoutes = newRouter().openapi(
  createRoute({
    method: "post",
    operationId: "exchangeOidcToken",
    path: "/oidc/exchange",
    tags: ["agent"],
    summary: "Exchange an OIDC token trusted by the pool for a short-lived agent token",
    description:
      "Optionally authenticated with the agent token being renewed (Bearer op_agent_…), which keeps the agent's registration.",
    request: { body: jsonBody(ExchangeRequest) },
    responses: {
      200: jsonResponse(ExchangeResponse, "The agent token"),
      ...errorResponses(400, 401, 413, 415, 429),
    },
  }),
  async (c) => {
    const header = c.req.header("authorization");
    const previous = header === undefined ? null : credentialFromHeader(header, false);
    if (previous !== null && tokenKind(previous) !== "agent") {
      throw new ApiError(
        "UNAUTHORIZED",
        "only the agent token being renewed may be sent as bearer",
      );
    }
    const body = c.req.valid("json");
    const result = await exchangeOidcToken(c.var.deps, {
      ...body,
      previousToken: previous,
      requestId: c.get("requestId"),
    });
    return c.json(valueOrThrow(result), 200);
  },
);
