/**
 * `/api/v1/bootstrap` (first organization, with the deployment's bootstrap secret),
 * `/api/v1/organizations` (further organizations, where allowed) and `/api/v1/organization`.
 */
import { createRoute, z } from "@hono/zod-openapi";
import { actorOf } from "../authz/principal.ts";
import { ApiError } from "../errors.ts";
import { timingSafeEqualString } from "../lib/crypto.ts";
import { errorResponses, jsonBody, jsonResponse, newRouter } from "../lib/router.ts";
import { personOf, requirePermission } from "../middleware/auth.ts";
import { ROLES } from "../tokens/model.ts";
import { createOrganization, getOrganization } from "./service.ts";

const Organization = z
  .object({ id: z.string(), name: z.string(), createdAt: z.string() })
  .openapi("Organization");

const CreatedOrganization = z
  .object({
    organization: Organization,
    token: z.object({
      id: z.string(),
      role: z.literal("owner"),
      description: z.string(),
      token: z.string().openapi({ description: "The owner token's secret. Shown once." }),
    }),
  })
  .openapi("CreatedOrganization");

const CreateOrganization = z
  .strictObject({
    name: z
      .string()
      .regex(/^[a-z0-9][a-z0-9-]{0,62}$/, "lowercase letters, digits and dashes, at most 63"),
  })
  .openapi("CreateOrganization");

function checkBootstrapSecret(header: string | undefined, expected: string | undefined): void {
  const match = /^Bearer\s+(\S+)$/i.exec(header?.trim() ?? "");
  // An unset or short secret means bootstrap is disabled, not open.
  if (!expected || expected.length < 16 || !match?.[1]) {
    throw new ApiError(
      "UNAUTHORIZED",
      "bootstrap needs the deployment's BOOTSTRAP_TOKEN as bearer",
    );
  }
  if (!timingSafeEqualString(match[1], expected)) {
    throw new ApiError("UNAUTHORIZED", "wrong bootstrap token");
  }
}

export const bootstrapRoutes = newRouter().openapi(
  createRoute({
    method: "post",
    operationId: "bootstrap",
    path: "/",
    tags: ["organizations"],
    summary: "Create the first organization and its owner token (once per deployment)",
    description:
      "Authorized by the Worker secret BOOTSTRAP_TOKEN as bearer; 409 once any organization exists.",
    security: [{ bootstrap: [] }],
    middleware: [
      async (c, next) => {
        checkBootstrapSecret(c.req.header("authorization"), c.env.BOOTSTRAP_TOKEN);
        await next();
      },
    ] as const,
    request: { body: jsonBody(CreateOrganization) },
    responses: {
      201: jsonResponse(CreatedOrganization, "The organization and its owner token"),
      ...errorResponses(400, 401, 409, 413, 415),
    },
  }),
  async (c) => {
    const { name } = c.req.valid("json");
    const result = await createOrganization(c.var.db, {
      name,
      actor: { type: "system", id: "bootstrap", name: "bootstrap" },
      onlyIfNone: true,
    });
    if (!result.ok) {
      throw new ApiError("CONFLICT", "this deployment is already bootstrapped");
    }
    return c.json(result.value, 201);
  },
);

export const organizationRoutes = newRouter()
  .openapi(
    createRoute({
      method: "post",
      operationId: "createOrganization",
      path: "/organizations",
      tags: ["organizations"],
      summary: "Create a further organization (only where ALLOW_MULTIPLE_ORGS is true)",
      security: [{ bearer: [] }],
      middleware: [requirePermission("organization.create")] as const,
      request: { body: jsonBody(CreateOrganization) },
      responses: {
        201: jsonResponse(CreatedOrganization, "The organization and its owner token"),
        ...errorResponses(400, 401, 403, 409, 413, 415),
      },
    }),
    async (c) => {
      const principal = personOf(c);
      if (c.env.ALLOW_MULTIPLE_ORGS !== "true") {
        throw new ApiError(
          "FORBIDDEN",
          "this deployment allows one organization (set ALLOW_MULTIPLE_ORGS to allow more)",
        );
      }
      const { name } = c.req.valid("json");
      const result = await createOrganization(c.var.db, {
        name,
        actor: actorOf(principal),
        onlyIfNone: false,
      });
      if (!result.ok) {
        throw new ApiError("CONFLICT", `an organization named ${name} exists`);
      }
      return c.json(result.value, 201);
    },
  )
  .openapi(
    createRoute({
      method: "get",
      operationId: "getOrganization",
      path: "/organization",
      tags: ["organizations"],
      summary: "The organization of the caller, and the caller's organization role",
      security: [{ bearer: [] }],
      middleware: [requirePermission("organization.read")] as const,
      responses: {
        200: jsonResponse(
          Organization.extend({
            role: z.enum(ROLES).nullable().openapi({
              description: "The caller's organization role; null for a person or team without one",
            }),
          }),
          "The organization and the caller's role",
        ),
        ...errorResponses(401),
      },
    }),
    async (c) => {
      const principal = personOf(c);
      const org = await getOrganization(c.var.db, principal.orgId);
      if (!org) {
        throw new ApiError("NOT_FOUND", "organization not found");
      }
      return c.json(
        {
          id: org.id,
          name: org.name,
          createdAt: new Date(org.createdAt).toISOString(),
          role: principal.role,
        },
        200,
      );
    },
  );
