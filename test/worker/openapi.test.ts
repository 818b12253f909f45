import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { newApp } from "../../src/app.ts";
import { requestJson } from "./helpers/api.ts";

type OpenApiDoc = { openapi: string; paths: Record<string, Record<string, unknown>> };

// Routes that are deliberately outside the document: the document itself, and protocols whose
// shape is fixed by someone else (Terraform's http backend with its LOCK/UNLOCK methods, VCS
// webhooks, the dashboard's HTML pages).
const UNDOCUMENTED = [/^\/api\/v1\/openapi\.json$/, /^\/state\//, /^\/webhooks\//, /^\/ui(\/|$)/];

describe("GET /api/v1/openapi.json", () => {
  it("is an OpenAPI 3.1 document listing every registered API and agent route", async ({
    expect,
  }) => {
    const res = await requestJson<OpenApiDoc>("/api/v1/openapi.json");
    expect(res.status).toBe(200);
    expect(res.body.openapi).toBe("3.1.0");

    const registered = newApp()
      .routes.filter((r) => r.method !== "ALL")
      .filter((r) => /^\/(api|agent|\.well-known)\//.test(r.path))
      .filter((r) => !UNDOCUMENTED.some((re) => re.test(r.path)))
      .map((r) => ({ method: r.method.toLowerCase(), path: r.path.replace(/:(\w+)/g, "{$1}") }));
    expect(registered.length).toBeGreaterThan(3);
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

  it("documents the error envelope and bearer security", async () => {
    const res = await requestJson<
      OpenApiDoc & { components: Record<string, Record<string, unknown>> }
    >("/api/v1/openapi.json");
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
    const app = newApp();
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
