/**
 * The TFE API's `GET /account/details` (go-tfe `Users.ReadCurrent`): who the bearer is. The
 * Terraform CLI calls it after `terraform login` to check a pasted token and greet its user.
 * A personal token answers its person; an organization or team token answers a service-account
 * user, as Terraform Cloud does for its team and organization tokens.
 */
import { createRoute } from "@hono/zod-openapi";
import type { PersonPrincipal } from "../authz/principal.ts";
import { personOf, requirePerson } from "../middleware/auth.ts";
import { newRouter } from "../router.ts";
import { documentResponse, errorDocuments, type Resource, sendDocument } from "./jsonapi.ts";
import { callerOrganizationName } from "./organization.ts";

/**
 * The `users` resource of a caller. Service-account usernames follow Terraform Cloud's
 * `api-team-…`/`api-org-…` so the CLI's "Retrieved token for user" names the team or the
 * organization whose token it is.
 */
function userResource(principal: PersonPrincipal, organizationName: string): Resource {
  switch (principal.kind) {
    case "user":
      return {
        id: principal.userId,
        type: "users",
        attributes: {
          username: principal.name || principal.email,
          email: principal.email,
          "is-service-account": false,
        },
      };
    case "team":
      return {
        id: principal.teamId,
        type: "users",
        attributes: { username: `api-team-${principal.name}`, "is-service-account": true },
      };
    case "org":
      return {
        id: principal.tokenId,
        type: "users",
        attributes: { username: `api-org-${organizationName}`, "is-service-account": true },
      };
  }
}

export const accountRoutes = newRouter().openapi(
  createRoute({
    method: "get",
    operationId: "tfeReadAccountDetails",
    path: "/account/details",
    tags: ["terraform cli"],
    summary: "The user the bearer acts as (TFE API; terraform login checks a token with it)",
    security: [{ bearer: [] }],
    middleware: [requirePerson()] as const,
    responses: { 200: documentResponse("A users document"), ...errorDocuments(401) },
  }),
  async (c) => {
    const principal = personOf(c);
    return sendDocument(c, { data: userResource(principal, await callerOrganizationName(c)) });
  },
);
