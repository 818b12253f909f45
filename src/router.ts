/** The one way feature routers are made, so every router validates and fails the same way. */
import { OpenAPIHono, z } from "@hono/zod-openapi";
import type { AppEnv } from "./env.ts";
import { ApiError, describeIssues, ErrorEnvelope, zodIssues } from "./errors.ts";

/** A feature sub-app whose zod failures become 400 BAD_REQUEST with field-level issues. */
export function newRouter(): OpenAPIHono<AppEnv> {
  return new OpenAPIHono<AppEnv>({
    defaultHook: (result) => {
      if (!result.success) {
        const issues = zodIssues(result.error, result.target);
        throw new ApiError("BAD_REQUEST", describeIssues(issues), { issues });
      }
    },
  });
}

/** OpenAPI response entries for the errors a route can answer. */
export function errorResponses(...statuses: number[]) {
  const descriptions: Record<number, string> = {
    400: "Invalid input",
    401: "Missing, unknown or revoked token",
    403: "The token's role may not do this",
    404: "Not found in this organization",
    409: "Conflicts with the current state",
    410: "Gone: the agent pool of this token was deleted",
    411: "Content-Length required",
    413: "Body too large",
    415: "Wrong content type",
    416: "Offset does not match",
    423: "Locked",
    429: "Too many queued runs; retry after Retry-After seconds",
    503: "Unavailable",
  };
  return Object.fromEntries(
    statuses.map((status) => [
      status,
      {
        description: descriptions[status] ?? "Error",
        content: { "application/json": { schema: ErrorEnvelope } },
      },
    ]),
  );
}

/** A JSON request body that must be present and must be JSON (else 415). */
export function jsonBody<T extends z.ZodType>(schema: T) {
  return { required: true, content: { "application/json": { schema } } } as const;
}

/** A JSON response entry. */
export function jsonResponse<T extends z.ZodType>(schema: T, description: string) {
  return { description, content: { "application/json": { schema } } } as const;
}

/** A path parameter that must be an id with the given prefix. */
export function idParam(prefix: string, name: string) {
  return z
    .string()
    .regex(new RegExp(`^${prefix}_[a-z2-7]{26}$`), `must be a ${prefix}_ id`)
    .openapi({ param: { name, in: "path" }, example: `${prefix}_${"a".repeat(26)}` });
}
