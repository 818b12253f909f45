/**
 * Terraform's service discovery (`/.well-known/terraform.json`) and go-tfe's `GET /api/v2/ping`.
 * Both are public as on Terraform Cloud: the CLI reads them before it has a token to send, and
 * they tell nothing but where the API is and which API level it speaks.
 */
import { createRoute, z } from "@hono/zod-openapi";
import type { MiddlewareHandler } from "hono";
import type { AppEnv } from "../env.ts";
import { jsonResponse, newRouter } from "../router.ts";
import { ssoOrganizations } from "../sso/queries.ts";
import { LOGIN_SERVICE } from "./login.ts";

/** Where the TFE API lives; the CLI and the `tfe` provider look for each of these names. */
export const TFE_BASE_PATH = "/api/v2/";

/**
 * The headers go-tfe reads from every answer (`tfe.go`, `getRawAPIMetadata`). The cloud backend
 * needs `TFP-API-Version` ≥ 2.5 (`internal/cloud/backend.go`) and shows `TFP-AppName` in its
 * messages; `X-TFE-Version` is a Terraform Enterprise release name (`v<yyyymm>-<n>`), which
 * `internal/cloud/backend_plan.go` parses to decide on structured run output.
 */
export const TFE_API_HEADERS = {
  "TFP-API-Version": "2.5",
  "TFP-AppName": "Outpost",
  "X-TFE-Version": "v202611-1",
} as const;

/** Adds {@link TFE_API_HEADERS} to every `/api/v2` answer, refusals included. */
export function tfeApiHeaders(): MiddlewareHandler<AppEnv> {
  return async function tfeHeaders(c, next) {
    await next();
    for (const [name, value] of Object.entries(TFE_API_HEADERS)) {
      c.res.headers.set(name, value);
    }
  };
}

const TerraformServices = z
  .object({
    "tfe.v2": z.string(),
    "tfe.v2.1": z.string(),
    "tfe.v2.2": z.string(),
    "login.v1": z
      .object({
        client: z.string(),
        grant_types: z.array(z.string()),
        authz: z.string(),
        token: z.string(),
        ports: z.array(z.number().int()),
      })
      .optional()
      .openapi({ description: "Present when an organization signs people in through SSO" }),
  })
  .openapi("TerraformServices");

/** `/.well-known/terraform.json`: mounted at `/.well-known`. */
export const terraformDiscoveryRoutes = newRouter().openapi(
  createRoute({
    method: "get",
    operationId: "getTerraformServices",
    path: "/terraform.json",
    tags: ["terraform cli"],
    summary: "Terraform service discovery: where the TFE API and terraform login are (no auth)",
    responses: { 200: jsonResponse(TerraformServices, "The services this host offers") },
  }),
  async (c) => {
    // login.v1 needs a person signed in through SSO; without it `terraform login` falls back to
    // the token page, which tfe.v2 alone makes it open.
    const { names } = await ssoOrganizations(c.var.db, 1);
    c.header("cache-control", "public, max-age=300");
    return c.json(
      {
        "tfe.v2": TFE_BASE_PATH,
        "tfe.v2.1": TFE_BASE_PATH,
        "tfe.v2.2": TFE_BASE_PATH,
        ...(names.length > 0 ? { "login.v1": LOGIN_SERVICE } : {}),
      },
      200,
    );
  },
);

/** `GET /api/v2/ping`: 204 with the API headers, which the middleware adds. */
export const pingRoutes = newRouter().openapi(
  createRoute({
    method: "get",
    operationId: "tfePing",
    path: "/ping",
    tags: ["terraform cli"],
    summary: "The TFE API's ping: answers its version headers (no auth)",
    responses: { 204: { description: "Nothing but the TFP-API-Version and related headers" } },
  }),
  (c) => c.body(null, 204),
);
