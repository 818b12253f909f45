/**
 * `/api/v1/bootstrap` (first organization, with the deployment's bootstrap secret),
 * `/api/v1/organizations` (further organizations, where allowed), `/api/v1/organization` and
 * its key rotation step, `/api/v1/organization/reencrypt` (owners).
 */
import { createRoute, z } from "@hono/zod-openapi";
import { actorOf } from "../authz/principal.ts";
import { ApiError, valueOrThrow } from "../errors.ts";
import { timingSafeEqualString } from "../lib/crypto.ts";
import { personOf, requirePermission } from "../middleware/auth.ts";
import { errorResponses, jsonBody, jsonResponse, newRouter } from "../router.ts";
import { ROLES } from "../tokens/model.ts";
import { MAX_REENCRYPT_BATCH, reencryptSecrets } from "./reencrypt.ts";
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

const Reencrypted = z.object({
  reencrypted: z.number().int().openapi({ description: "Sealed again with the primary key now" }),
  remaining: z.number().int().openapi({
    description: "Still sealed with another key after this call; 0 when the old key may go",
  }),
});

const Reencryption = z
  .object({ variables: Reencrypted, webhookSecrets: Reencrypted })
  .openapi("Reencryption");

const ReencryptRequest = z
  .strictObject({
    limit: z.int().min(1).max(MAX_REENCRYPT_BATCH).default(100).openapi({
      description: "Most sensitive variables, and most webhooks' secrets, this call re-encrypts",
    }),
  })
  .openapi("ReencryptRequest");

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
    const result = await createOrganization(c.var.deps, {
      name,
      actor: { type: "system", id: "bootstrap", name: "bootstrap" },
      onlyIfNone: true,
    });
    return c.json(valueOrThrow(result), 201);
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
      const result = await createOrganization(c.var.deps, {
        name,
        actor: actorOf(principal),
        onlyIfNone: false,
      });
      return c.json(valueOrThrow(result), 201);
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
  )
  .openapi(
    createRoute({
      method: "post",
      operationId: "reencryptSecrets",
      path: "/organization/reencrypt",
      tags: ["organizations"],
      summary: "Key rotation: seal the organization's secrets again with the first ENCRYPTION_KEY",
      description:
        "Re-encrypts a batch of sensitive variables and webhook secrets sealed with an older key of the ring; call again until both remaining counts are 0, then drop the old key (docs/workspaces.md).",
      security: [{ bearer: [] }],
      middleware: [requirePermission("secrets.reencrypt")] as const,
      request: { body: jsonBody(ReencryptRequest) },
      responses: {
        200: jsonResponse(Reencryption, "What this call re-encrypted, and what remains"),
        ...errorResponses(400, 401, 403, 413, 415, 503),
      },
    }),
    async (c) => {
      const principal = personOf(c);
      const result = await reencryptSecrets(c.var.deps, {
        orgId: principal.orgId,
        actor: actorOf(principal),
        limit: c.req.valid("json").limit,
      });
      return c.json(valueOrThrow(result), 200);
    },
  );
