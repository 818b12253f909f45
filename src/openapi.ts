/**
 * The OpenAPI document (`GET /api/v1/openapi.json`) and the routes that belong to no feature
 * (`/healthz`). The document is generated from the route schemas on every request, so `servers`
 * names the origin the caller reached, and the state backend's custom LOCK/UNLOCK methods are
 * written into its path item after generation (OpenAPI 3.1 has no field for them).
 */
import { createRoute, type OpenAPIHono, z } from "@hono/zod-openapi";
import type { AppEnv } from "./env.ts";
import { jsonResponse } from "./router.ts";
import { describeStateBackend, STATE_CUSTOM_METHODS } from "./state/backend-doc.ts";

export const API_VERSION = "0.1.0";

const Health = z.object({ ok: z.literal(true), version: z.string() }).openapi("Health");

const STATE_PATH = "/state/v1/{workspaceId}";

type PathItem = Record<string, unknown>;

/** Copies the POST `/lock`/`/unlock` operations onto the state path as LOCK and UNLOCK. */
function addCustomMethods(paths: Record<string, PathItem> | undefined): void {
  const item = paths?.[STATE_PATH];
  if (!paths || !item) {
    return;
  }
  const additional: Record<string, unknown> = {};
  for (const [method, operation] of Object.entries(STATE_CUSTOM_METHODS)) {
    const post = paths[`${STATE_PATH}/${method.toLowerCase()}`]?.post;
    additional[method] = { ...(typeof post === "object" ? post : {}), ...operation };
  }
  item["x-additional-operations"] = additional;
  item.description =
    "Terraform's http backend. Besides GET, POST (and PUT) and DELETE it answers the custom methods LOCK and UNLOCK, described under x-additional-operations.";
}

/** Mounts `/healthz` and the document on `app`; call after every feature router is mounted. */
export function mountOpenApi(app: OpenAPIHono<AppEnv>): void {
  app.openapi(
    createRoute({
      method: "get",
      path: "/healthz",
      operationId: "getHealth",
      tags: ["meta"],
      summary: "Liveness; no token needed",
      security: [],
      responses: { 200: jsonResponse(Health, "The coordinator answers") },
    }),
    (c) => c.json({ ok: true as const, version: API_VERSION }, 200),
  );
  describeStateBackend(app);
  app.openAPIRegistry.registerComponent("securitySchemes", "bearer", {
    type: "http",
    scheme: "bearer",
    description: "An org token (op_org_…), agent token (op_agent_…) or run token (op_run_…)",
  });
  app.openAPIRegistry.registerComponent("securitySchemes", "bootstrap", {
    type: "http",
    scheme: "bearer",
    description: "The deployment's BOOTSTRAP_TOKEN secret",
  });
  app.get("/api/v1/openapi.json", (c) => {
    const document = app.getOpenAPI31Document({
      openapi: "3.1.0",
      info: {
        title: "Outpost",
        version: API_VERSION,
        description: "Coordinator for Terraform and OpenTofu runs on pull-based agents.",
      },
      servers: [{ url: new URL(c.req.url).origin, description: "This coordinator" }],
    });
    addCustomMethods(document.paths as Record<string, PathItem> | undefined);
    return c.json(document);
  });
}
