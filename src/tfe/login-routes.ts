/**
 * login.v1's token endpoint (`POST /auth/terraform/token`): the CLI exchanges the code its
 * loopback listener received, with the PKCE verifier, for a personal token. Form-encoded in,
 * JSON out, as `golang.org/x/oauth2` expects; refusals are OAuth errors, never cached.
 */
import { createRoute, z } from "@hono/zod-openapi";
import { limitBody } from "../middleware/body-limit.ts";
import { jsonResponse, newRouter } from "../router.ts";
import { LOGIN_TOKEN_PATH, redeemLoginCode } from "./login.ts";

const FORM = "application/x-www-form-urlencoded";
/** A token request is a handful of short fields. */
const TOKEN_BODY_LIMIT_BYTES = 16 * 1024;

const TokenForm = z.object({
  grant_type: z.string().optional(),
  code: z.string().optional(),
  redirect_uri: z.string().optional(),
  client_id: z.string().optional(),
  code_verifier: z.string().optional(),
});

const TokenAnswer = z
  .object({ access_token: z.string(), token_type: z.literal("bearer") })
  .openapi("TerraformLoginToken");

const OAuthErrorBody = z
  .object({ error: z.string(), error_description: z.string() })
  .openapi("OAuthError");

const NO_STORE = { "cache-control": "no-store", pragma: "no-cache" };

export const terraformLoginRoutes = newRouter().openapi(
  createRoute({
    method: "post",
    operationId: "terraformLoginToken",
    path: LOGIN_TOKEN_PATH.replace(/^\/auth/, ""),
    tags: ["terraform cli"],
    summary: "terraform login: exchange an authorization code and PKCE verifier for a token",
    middleware: [limitBody(TOKEN_BODY_LIMIT_BYTES)] as const,
    description:
      "The body is application/x-www-form-urlencoded with grant_type=authorization_code, code, " +
      "redirect_uri, client_id=terraform-cli and code_verifier. It is read by the handler, not " +
      "declared, so that every refusal (a JSON body included) is an OAuth error.",
    responses: {
      200: jsonResponse(TokenAnswer, "A personal token (op_user_…) of the person who consented"),
      400: jsonResponse(OAuthErrorBody, "An OAuth error: the code is spent or the request invalid"),
      401: jsonResponse(OAuthErrorBody, "invalid_client"),
    },
  }),
  async (c) => {
    const type = c.req.header("content-type") ?? "";
    if (!type.toLowerCase().startsWith(FORM)) {
      const error = { error: "invalid_request", error_description: `the body must be ${FORM}` };
      return c.json(error, 400, NO_STORE);
    }
    const form = TokenForm.safeParse(await c.req.parseBody());
    if (!form.success) {
      const error = { error: "invalid_request", error_description: "the form could not be read" };
      return c.json(error, 400, NO_STORE);
    }
    const redeemed = await redeemLoginCode(c.var.db, form.data, c.var.deps.now());
    if (!redeemed.ok) {
      const { status, error, description } = redeemed.error;
      return c.json({ error, error_description: description }, status, NO_STORE);
    }
    return c.json(
      { access_token: redeemed.value.token, token_type: "bearer" as const },
      200,
      NO_STORE,
    );
  },
);
