import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { newApp } from "../../src/app.ts";
import { systemClock } from "../../src/deps.ts";
import { BASE, requestJson } from "./helpers/api.ts";

type OpenApiDoc = { openapi: string; paths: Record<string, Record<string, unknown>> };

// Routes that are deliberately outside the document: the document itself, VCS webhooks' raw
// bodies aside (they are in it), the dashboard's HTML pages, and the page `terraform login` opens
// (a browser redirect to the dashboard's token page).
const UNDOCUMENTED = [
  /^\/api\/v1\/openapi\.json$/,
  /^\/ui(\/|$)/,
  /^\/$/,
  /^\/app\/settings\/tokens$/,
];
const METHODS = ["get", "post", "put", "patch", "delete"] as const;

type Operation = { operationId?: string; tags?: string[]; summary?: string };
type FullDoc = OpenApiDoc & {
  servers?: Array<{ url: string }>;
  components: Record<string, Record<string, unknown>>;
};

function operations(doc: OpenApiDoc): Array<{ method: string; path: string; op: Operation }> {
  return Object.entries(doc.paths).flatMap(([path, item]) =>
    METHODS.filter((m) => item[m]).map((method) => ({
      method,
      path,
      op: item[method] as Operation,
    })),
  );
}

describe("GET /api/v1/openapi.json", () => {
  it("is an OpenAPI 3.1 document listing every registered route", async ({ expect }) => {
    const res = await requestJson<OpenApiDoc>("/api/v1/openapi.json");
    expect(res.status).toBe(200);
    expect(res.body.openapi).toBe("3.1.0");

    const registered = newApp(systemClock)
      .routes.filter((r) => METHODS.includes(r.method.toLowerCase() as (typeof METHODS)[number]))
      .filter((r) => !UNDOCUMENTED.some((re) => re.test(r.path)))
      // The backend also takes PUT for a write (documented as POST, the method Terraform uses).
      .filter((r) => !(r.path === "/state/v1/:workspaceId" && r.method === "PUT"))
      .map((r) => ({ method: r.method.toLowerCase(), path: r.path.replace(/:(\w+)/g, "{$1}") }));
    expect(registered.length).toBeGreaterThan(60);
    const missing = registered.filter((r) => !res.body.paths[r.path]?.[r.method]);
    expect(missing).toEqual([]);
    expect(registered).toEqual(
      expect.arrayContaining([
        { method: "get", path: "/.well-known/openid-configuration" },
        { method: "get", path: "/.well-known/jwks" },
        { method: "post", path: "/agent/v1/oidc/exchange" },
        { method: "delete", path: "/api/v1/pools/{poolId}/oidc-trusts/{trustId}" },
      ]),
    );
  });

  it("gives every operation a unique operationId and a tag", async () => {
    const res = await requestJson<OpenApiDoc>("/api/v1/openapi.json");
    const ops = operations(res.body);
    expect(ops.length).toBeGreaterThan(60);
    const untagged = ops.filter(({ op }) => !op.tags?.length).map((o) => `${o.method} ${o.path}`);
    expect(untagged).toEqual([]);
    const ids = ops.map(({ op }) => op.operationId);
    expect(ids.filter((id) => !id || !/^[a-z][A-Za-z]+$/.test(id))).toEqual([]);
    expect(new Set(ids).size).toBe(ids.length);
    // Stable names clients are generated with: a rename breaks every generated client.
    const byRoute = Object.fromEntries(ops.map((o) => [`${o.method} ${o.path}`, o.op.operationId]));
    expect(byRoute).toMatchObject({
      "get /healthz": "getHealth",
      "get /api/v1/runs/{runId}": "getRun",
      "post /api/v1/runs/{runId}/force-cancel": "forceCancelRun",
      "post /api/v1/workspaces": "createWorkspace",
      "get /state/v1/{workspaceId}": "readStateBackend",
      "post /webhooks/github/{hookId}": "receiveGitHubWebhook",
    });
  });

  it("names the origin it was asked on as its server", async () => {
    const res = await requestJson<FullDoc>("/api/v1/openapi.json");
    expect(res.body.servers).toEqual([expect.objectContaining({ url: BASE })]);
  });

  it("describes /healthz and the state backend with its LOCK and UNLOCK methods", async () => {
    const res = await requestJson<FullDoc>("/api/v1/openapi.json");
    expect(res.body.paths["/healthz"]?.get).toBeDefined();
    const backend = res.body.paths["/state/v1/{workspaceId}"] ?? {};
    expect(Object.keys(backend)).toEqual(expect.arrayContaining(["get", "post", "delete"]));
    const custom = backend["x-additional-operations"] as Record<string, Operation>;
    expect(custom.LOCK?.operationId).toBe("lockStateBackend");
    expect(custom.UNLOCK?.operationId).toBe("unlockStateBackend");
    expect(custom.LOCK).toHaveProperty("responses.423");
    expect(res.body.paths["/state/v1/{workspaceId}/lock"]?.post).toBeDefined();
    expect(res.body.components.securitySchemes?.basic).toBeDefined();
  });

  it("documents the error envelope and bearer security", async () => {
    const res = await requestJson<FullDoc>("/api/v1/openapi.json");
    expect(res.body.components.schemas?.Error).toBeDefined();
    expect(res.body.components.securitySchemes?.bearer).toBeDefined();
  });
});

describe("errors", () => {
  it("answers unknown routes with the JSON envelope (404)", async () => {
    const res = await requestJson<{ error: { code: string; requestId: string } }>("/api/v1/nope");
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe("NOT_FOUND");
    expect(res.headers.get("outpost-request-id")).toBe(res.body.error.requestId);
  });

  it("answers an unexpected failure with 500 INTERNAL and no internals", async () => {
    const app = newApp(systemClock);
    app.get("/boom", () => {
      throw new Error("secret detail from a bug");
    });
    const ctx = createExecutionContext();
    const res = await app.fetch(new Request("http://outpost.test/boom"), env, ctx);
    await waitOnExecutionContext(ctx);
    expect(res.status).toBe(500);
    const body = await res.text();
    expect(JSON.parse(body)).toMatchObject({
      error: { code: "INTERNAL", message: "internal error" },
    });
    expect(body).not.toContain("secret detail");
  });

  it("answers /healthz without auth", async () => {
    const res = await requestJson("/healthz");
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ ok: true });
  });
});
