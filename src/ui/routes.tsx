/**
 * The dashboard, mounted at `/ui` (and `/` redirects there): security headers on every answer,
 * the static script, stylesheet and icon (built files, read from the static assets), sign-in
 * and sign-out, then the feature pages behind the session. Errors render as HTML pages with the
 * status the API would answer (JSON for `.json`).
 */

import { type Context, Hono } from "hono";
import { bodyLimit } from "hono/body-limit";
import { uploadLimits } from "../configuration-versions/model.ts";
import type { AppEnv } from "../env.ts";
import { ApiError, codeToStatus, handleError } from "../errors.ts";
import { terraformLoginPages } from "../tfe/login-pages.tsx";
import { cliLoginPages } from "./cli-login-routes.tsx";
import { landingFor, loginPages, logoutPage } from "./login-routes.tsx";
import { notificationPages } from "./notification-routes.tsx";
import { ErrorPage } from "./pages/login.tsx";
import { peoplePages } from "./people-routes.tsx";
import { poolPages } from "./pool-routes.tsx";
import { projectPages } from "./project-routes.tsx";
import { runPages } from "./run-routes.tsx";
import { schedulePages } from "./schedule-routes.tsx";
import { requireSession, type UiEnv } from "./session.ts";
import { statePages } from "./state-routes.tsx";
import { teamAccessPages } from "./team-access-routes.tsx";
import { terraformTokenPages } from "./terraform-token-routes.tsx";
import { tokenPages } from "./token-routes.tsx";
import { variableSetPages } from "./varset-routes.tsx";
import { vcsHookPages } from "./vcs-hook-routes.tsx";
import { workspacePages } from "./workspace-routes.tsx";
import { isUploadPath, workspaceSetupPages } from "./workspace-setup-routes.tsx";

/** No inline script or style can run: everything comes from `/ui/static/`. */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join("; ");

/**
 * The dashboard's static files, built by `scripts/build.ts` into the Worker's static assets
 * (`dist/assets/ui/static/`), with the type each is served as. wrangler.toml routes
 * `/ui/static/*` to the Worker first, so these answers carry the headers below everywhere.
 */
const STATIC_FILES: Readonly<Record<string, string>> = {
  "app.js": "text/javascript; charset=utf-8",
  "app.css": "text/css; charset=utf-8",
  "favicon.svg": "image/svg+xml",
};

/** Kept five minutes, then revalidated by ETag (a 304 while the deployment is the same). */
const STATIC_CACHE_CONTROL = "public, max-age=300";

/** One of the dashboard's static files, read through the `ASSETS` binding. */
async function serveStatic(c: Context<AppEnv>): Promise<Response> {
  const file = c.req.param("file") ?? "";
  const type = Object.hasOwn(STATIC_FILES, file) ? STATIC_FILES[file] : undefined;
  if (!type) {
    throw new ApiError("NOT_FOUND", `no file at ${c.req.path}`);
  }
  const conditional = c.req.header("if-none-match");
  const asset = await c.env.ASSETS.fetch(
    new Request(new URL(`/ui/static/${file}`, c.req.url), {
      headers: conditional ? { "if-none-match": conditional } : {},
    }),
  );
  if (asset.status !== 200 && asset.status !== 304) {
    // The deployment shipped without the dashboard build: a bug, not the visitor's problem.
    throw new Error(`dashboard asset ${file} answered ${asset.status}; run npm run build`);
  }
  const etag = asset.headers.get("etag");
  return new Response(asset.status === 304 ? null : asset.body, {
    status: asset.status,
    headers: {
      "content-type": type,
      "cache-control": STATIC_CACHE_CONTROL,
      ...(etag ? { etag } : {}),
    },
  });
}

/** Form bodies are small; nothing the dashboard posts comes near this. */
const FORM_BODY_LIMIT_BYTES = 64 * 1024;

const formLimit = bodyLimit({
  maxSize: FORM_BODY_LIMIT_BYTES,
  onError: () => {
    throw new ApiError("PAYLOAD_TOO_LARGE", `forms are limited to ${FORM_BODY_LIMIT_BYTES} bytes`);
  },
});

function uploadLimit(env: UiEnv["Bindings"]) {
  const maxSize = uploadLimits(env).maxBytes + FORM_BODY_LIMIT_BYTES;
  return bodyLimit({
    maxSize,
    onError: () => {
      throw new ApiError("PAYLOAD_TOO_LARGE", `uploads are limited to ${maxSize} bytes`);
    },
  });
}

function renderError(err: Error, c: Context<UiEnv>) {
  if (c.req.path.endsWith(".json") || !(err instanceof ApiError)) {
    return handleError(err, c);
  }
  const status = codeToStatus(err.code);
  const titles: Partial<Record<number, string>> = {
    400: "That did not work",
    401: "Signed out",
    403: "Not allowed",
    404: "Not found",
    409: "Conflict",
  };
  return c.html(
    <ErrorPage
      title={titles[status] ?? "Something went wrong"}
      message={err.message}
      signIn={status === 401}
    />,
    status,
  );
}

const dashboard = new Hono<UiEnv>()
  .use("*", async function securityHeaders(c, next) {
    await next();
    c.res.headers.set("Content-Security-Policy", CONTENT_SECURITY_POLICY);
    c.res.headers.set("X-Content-Type-Options", "nosniff");
    c.res.headers.set("Referrer-Policy", "same-origin");
    c.res.headers.set("X-Frame-Options", "DENY");
    if (!c.req.path.startsWith("/ui/static/")) {
      c.res.headers.set("Cache-Control", "no-store");
    }
  })
  .use("*", async function formBodyLimit(c, next) {
    // The configuration upload carries a tar.gz: the API's upload limit, plus the form around it.
    return isUploadPath(c.req.path) ? uploadLimit(c.env)(c, next) : formLimit(c, next);
  })
  .get("/static/:file", serveStatic)
  .route("/", loginPages)
  .use("*", requireSession())
  .get("/", (c) => c.redirect(landingFor(c.var.session.principal), 303))
  .route("/", logoutPage)
  .route("/pools", poolPages)
  .route("/projects", projectPages)
  .route("/workspaces", workspaceSetupPages)
  .route("/workspaces", workspacePages)
  .route("/workspaces", statePages)
  .route("/workspaces", teamAccessPages)
  .route("/workspaces", notificationPages)
  .route("/workspaces", schedulePages)
  .route("/variable-sets", variableSetPages)
  .route("/people", peoplePages)
  .route("/cli-login", cliLoginPages)
  .route("/runs", runPages)
  .route("/tokens", tokenPages)
  .route("/vcs-hooks", vcsHookPages)
  .route("/terraform-token", terraformTokenPages)
  .route("/terraform-login", terraformLoginPages)
  .all("*", (c) => {
    throw new ApiError("NOT_FOUND", `no page at ${c.req.path}`);
  })
  .onError(renderError);

/** Mount at `/`: `/` redirects to the dashboard, which lives under `/ui`. */
export const uiRoutes = new Hono<UiEnv>()
  .get("/", (c) => c.redirect("/ui", 302))
  .route("/ui", dashboard);
