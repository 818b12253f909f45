/**
 * `/.well-known/openid-configuration` and `/.well-known/jwks`: public by design (clouds fetch
 * them without credentials to verify runs' workload identity tokens). 503 with the reason when
 * the deployment has no `PUBLIC_URL` or no usable `OIDC_SIGNING_KEYS`.
 */
import { createRoute, z } from "@hono/zod-openapi";
import { valueOrThrow } from "../errors.ts";
import { errorResponses, jsonResponse, newRouter } from "../router.ts";
import { discoveryDocument, publishedKeys } from "./issuer.ts";

/** Clouds cache these; five minutes keeps a rotation's new key visible soon. */
const CACHE_CONTROL = "public, max-age=300";

const Discovery = z
  .object({
    issuer: z.string(),
    jwks_uri: z.string(),
    response_types_supported: z.array(z.string()),
    subject_types_supported: z.array(z.string()),
    id_token_signing_alg_values_supported: z.array(z.string()),
    claims_supported: z.array(z.string()),
  })
  .openapi("OpenIdConfiguration");

const Jwks = z
  .object({
    keys: z.array(
      z.object({
        kty: z.literal("RSA"),
        kid: z.string(),
        alg: z.literal("RS256"),
        use: z.literal("sig"),
        n: z.string(),
        e: z.string(),
      }),
    ),
  })
  .openapi("Jwks");

export const issuerRoutes = newRouter()
  .openapi(
    createRoute({
      method: "get",
      operationId: "getOpenIdConfiguration",
      path: "/openid-configuration",
      tags: ["workload identity"],
      summary: "OpenID discovery document of the workload identity issuer (no auth)",
      responses: {
        200: jsonResponse(Discovery, "The issuer's metadata"),
        ...errorResponses(503),
      },
    }),
    async (c) => {
      const document = valueOrThrow(await discoveryDocument(c.env));
      c.header("cache-control", CACHE_CONTROL);
      return c.json(document, 200);
    },
  )
  .openapi(
    createRoute({
      method: "get",
      operationId: "getJwks",
      path: "/jwks",
      tags: ["workload identity"],
      summary: "Public keys that verify workload identity tokens, the signing key first (no auth)",
      responses: {
        200: jsonResponse(Jwks, "The JSON Web Key Set"),
        ...errorResponses(503),
      },
    }),
    async (c) => {
      const keys = valueOrThrow(await publishedKeys(c.env));
      c.header("cache-control", CACHE_CONTROL);
      return c.json({ keys }, 200);
    },
  );
