/**
 * `/ui/terraform-login`: login.v1's authorization endpoint. The dashboard's session middleware
 * sends a browser without a session to sign in first and back here with the query. A signed-in
 * person (not an org-token session: the token is a person's) sees what the CLI asks and
 * consents with a CSRF-protected form; the answer redirects to the CLI's loopback listener with
 * a code, or with `access_denied`. An invalid request is refused with an OAuth JSON error and
 * never redirected.
 */
import { z } from "@hono/zod-openapi";
import { type Context, Hono } from "hono";
import { ApiError } from "../errors.ts";
import { readForm, viewerOf } from "../ui/forms.ts";
import { Csrf, Layout } from "../ui/layout.tsx";
import type { UiEnv } from "../ui/session.ts";
import {
  type AuthorizationRequest,
  authorizationRequest,
  issueLoginCode,
  LOGIN_AUTHZ_PATH,
  type OAuthError,
  redirectWith,
} from "./login.ts";

function personOf(c: Context<UiEnv>) {
  const { principal } = c.var.session;
  if (principal.kind !== "user") {
    throw new ApiError(
      "FORBIDDEN",
      "terraform login makes a personal token: sign in as yourself (SSO), not with an org token",
    );
  }
  return principal;
}

function refuse(c: Context<UiEnv>, error: OAuthError) {
  return c.json({ error: error.error, error_description: error.description }, error.status);
}

const QUERY_FIELDS = [
  "response_type",
  "client_id",
  "redirect_uri",
  "state",
  "code_challenge",
  "code_challenge_method",
] as const;

/** The form repeats the request; it is checked again when posted. */
const ConsentForm = z.object({
  decision: z.enum(["allow", "deny"]),
  ...Object.fromEntries(QUERY_FIELDS.map((name) => [name, z.string().max(2048).optional()])),
});

function HiddenRequest(props: { query: Record<string, string | undefined> }) {
  return (
    <>
      {QUERY_FIELDS.map((name) => (
        <input type="hidden" name={name} value={props.query[name] ?? ""} />
      ))}
    </>
  );
}

function consentPage(
  c: Context<UiEnv>,
  query: Record<string, string | undefined>,
  request: AuthorizationRequest,
) {
  const viewer = viewerOf(c);
  const port = new URL(request.redirectUri).port;
  return c.html(
    <Layout title="Sign in the Terraform CLI" section="account" viewer={viewer}>
      <p>
        <code>terraform login</code> on this computer (listening on port {port}) asks for a personal
        token that acts as you, with your teams' access. Allow it only if you just ran that command.
      </p>
      <form method="post" action={LOGIN_AUTHZ_PATH}>
        <Csrf token={viewer.csrf} />
        <HiddenRequest query={query} />
        <button type="submit" name="decision" value="allow">
          Allow
        </button>{" "}
        <button type="submit" name="decision" value="deny">
          Deny
        </button>
      </form>
    </Layout>,
  );
}

export const terraformLoginPages = new Hono<UiEnv>()
  .get("/", (c) => {
    personOf(c);
    const query = c.req.query();
    const request = authorizationRequest(query);
    return request.ok ? consentPage(c, query, request.value) : refuse(c, request.error);
  })
  .post("/", async (c) => {
    const form = await readForm(c, ConsentForm);
    const me = personOf(c);
    const request = authorizationRequest(form);
    if (!request.ok) {
      return refuse(c, request.error);
    }
    if (form.decision === "deny") {
      return c.redirect(redirectWith(request.value, { error: "access_denied" }), 303);
    }
    const code = await issueLoginCode(c.var.db, {
      orgId: me.orgId,
      userId: me.userId,
      request: request.value,
      now: c.var.deps.now(),
    });
    return c.redirect(redirectWith(request.value, { code }), 303);
  });
