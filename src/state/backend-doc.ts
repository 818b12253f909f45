/**
 * The Terraform `http` state backend (`/state/v1/{workspaceId}`) as the OpenAPI document
 * describes it. The backend itself is a plain Hono router (`routes.ts`) because its shape is
 * fixed by the terraform and tofu clients; this module only registers its description, so the
 * document and the handlers are kept in step by the OpenAPI test, not by shared code.
 *
 * OpenAPI 3.1 has no place for custom methods; LOCK and UNLOCK are described on the POST
 * `/lock` and `/unlock` paths the backend also serves, and under the path item's
 * `x-additional-operations` (the shape OpenAPI 3.2 calls `additionalOperations`).
 */
import { type OpenAPIHono, z } from "@hono/zod-openapi";
import type { AppEnv } from "../env.ts";
import { errorResponses } from "../router.ts";
import { LockInfo } from "./model.ts";

const Params = z.object({
  workspaceId: z.string().openapi({
    param: { name: "workspaceId", in: "path" },
    description: "The workspace's id (ws_…) or its name",
    example: "network-prod",
  }),
});
const WriteQuery = z.object({
  ID: z
    .string()
    .optional()
    .openapi({
      param: { name: "ID", in: "query" },
      description: "The lock id the client holds (Terraform sends it on every write)",
    }),
});
const LockInfoSchema = LockInfo.openapi("LockInfo", {
  description: "Terraform's lock info, exactly as the client sends it",
});
const StateFile = z
  .looseObject({ version: z.number(), serial: z.number(), lineage: z.string() })
  .openapi("StateFile", { description: "A Terraform or OpenTofu state file" });
const WriteResult = z
  .object({ stateVersionId: z.string(), serial: z.number().int(), isNoop: z.boolean() })
  .openapi("StateWriteResult");

const tags = ["state-backend"];
const security: Array<Record<string, string[]>> = [{ basic: [] }, { bearer: [] }];
const lockBody = {
  required: false,
  content: { "application/json": { schema: LockInfoSchema } },
} as const;
const lockHeld = {
  description: "Held by someone else: the body is the holder's lock info",
  content: { "application/json": { schema: LockInfoSchema } },
} as const;

/** The LOCK and UNLOCK operations, as written into the path item of `/state/v1/{workspaceId}`. */
export const STATE_CUSTOM_METHODS = {
  LOCK: {
    operationId: "lockStateBackend",
    summary: "Take the state lock (Terraform's LOCK); same as POST …/lock",
    tags,
  },
  UNLOCK: {
    operationId: "unlockStateBackend",
    summary:
      "Release the state lock (Terraform's UNLOCK); an empty body is force-unlock (admins, audited); same as POST …/unlock",
    tags,
  },
} as const;

/** Registers the backend's operations in `app`'s OpenAPI registry (no handlers). */
export function describeStateBackend(app: OpenAPIHono<AppEnv>): void {
  const registry = app.openAPIRegistry;
  registry.registerComponent("securitySchemes", "basic", {
    type: "http",
    scheme: "basic",
    description:
      "Any user name; an org token or run token as the password (Terraform's http backend)",
  });
  const path = "/state/v1/{workspaceId}";
  registry.registerPath({
    method: "get",
    path,
    operationId: "readStateBackend",
    summary: "The current state file, byte for byte (Content-MD5); 204 when there is none",
    tags,
    security,
    request: { params: Params },
    responses: {
      200: { description: "The state", content: { "application/json": { schema: StateFile } } },
      204: { description: "No state yet" },
      ...errorResponses(400, 401, 403, 404),
    },
  });
  registry.registerPath({
    method: "post",
    path,
    operationId: "writeStateBackend",
    summary:
      "Write a new state version (also PUT); a lower serial, another lineage or a changed body at the same serial is 409",
    tags,
    security,
    request: {
      params: Params,
      query: WriteQuery,
      body: { required: true, content: { "application/json": { schema: StateFile } } },
    },
    responses: {
      200: { description: "Stored", content: { "application/json": { schema: WriteResult } } },
      ...errorResponses(400, 401, 403, 404, 409, 413),
      423: lockHeld,
    },
  });
  registry.registerPath({
    method: "delete",
    path,
    operationId: "deleteStateBackend",
    summary: "Delete the state (admins); its versions stay as history",
    tags,
    security,
    request: { params: Params },
    responses: { 200: { description: "Deleted" }, ...errorResponses(401, 403, 404, 409, 423) },
  });
  for (const [method, name] of [
    ["LOCK", "lock"],
    ["UNLOCK", "unlock"],
  ] as const) {
    const operation = STATE_CUSTOM_METHODS[method];
    registry.registerPath({
      method: "post",
      path: `${path}/${name}`,
      operationId: `${name}StateBackendPost`,
      summary: operation.summary.replace(/; same as POST.*$/, ""),
      description: `The POST form of the custom ${method} method, for proxies that drop custom methods; ${method} on this path and on ${path} is the same operation.`,
      tags,
      security,
      request: { params: Params, body: lockBody },
      responses: {
        200: {
          description: "Done: the lock info",
          content: { "application/json": { schema: LockInfoSchema } },
        },
        ...errorResponses(400, 401, 403, 404),
        409: lockHeld,
        423: lockHeld,
      },
    });
  }
}
