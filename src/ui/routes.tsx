/**
 * The dashboard, mounted at `/ui` (and `/` redirects there): security headers on every answer,
 * the static script, stylesheet and icon (built files, read from the static assets), sign-in
 * and sign-out, then the feature pages behind the session. Errors render as HTML pages with the
 * status the API would answer (JSON for `.json`).
 */

import { z } from "@hono/zod-openapi";
import { type Context, Hono } from "hono";
import { bodyLimit } from "hono/body-limit";
import { getCookie } from "hono/cookie";
import type { AppEnv } from "../env.ts";
import { ApiError, codeToStatus, handleError } from "../errors.ts";
import { authenticate } from "../middleware/auth.ts";
import { readForm, readFormBody } from "./forms.ts";
import { ErrorPage, LoginPage } from "./pages/login.tsx";
import { poolPages } from "./pool-routes.tsx";
import { runPages } from "./run-routes.tsx";
import {
  CSRF_FIELD,
  checkLoginCsrf,
  endSession,
  findSession,
  issueLoginCsrf,
  requireSession,
  SESSION_COOKIE,
  startSession,
  type UiEnv,
} from "./session.ts";
import { statePages } from "./state-routes.tsx";
import { tokenPages } from "./token-routes.tsx";
import { workspacePages } from "./workspace-routes.tsx";

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

/** The sign-in form's fields besides its CSRF token; anything else (a file, say) is a 400. */
const LoginForm = z.strictObject({
  token: z.string().max(1024).default(""),
  next: z.string().max(2048).optional(),
});

/** Only a path inside the dashboard may be returned to after sign-in (no open redirect). */
function safeNext(next: unknown): string {
  return typeof next === "string" && /^\/ui\/[A-Za-z0-9/_-]*$/.test(next) ? next : "/ui/pools";
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

/** Sign-in: before any session exists, so typed with the app environment only. */
const loginPages = new Hono<AppEnv>()
  .get("/login", async (c) => {
    const secret = getCookie(c, SESSION_COOKIE);
    if (secret && (await findSession(c.var.db, secret))) {
      return c.redirect(safeNext(c.req.query("next")), 303);
    }
    return c.html(<LoginPage csrf={issueLoginCsrf(c)} next={safeNext(c.req.query("next"))} />);
  })
  .post("/login", async (c) => {
    const body = await readFormBody(c);
    checkLoginCsrf(c, body[CSRF_FIELD]);
    const { [CSRF_FIELD]: _csrf, ...fields } = body;
    const form = LoginForm.safeParse(fields);
    if (!form.success) {
      throw new ApiError("BAD_REQUEST", "the sign-in form takes a token (text) and nothing else");
    }
    const token = form.data.token.trim();
    const next = safeNext(form.data.next);
    let principal: Awaited<ReturnType<typeof authenticate>>;
    try {
      principal = await authenticate(c, token, ["org"]);
    } catch (err) {
      if (!(err instanceof ApiError)) {
        throw err;
      }
      const message =
        err.code === "TOKEN_REVOKED"
          ? "That token has been revoked."
          : "That is not a valid org token (op_org_…).";
      return c.html(<LoginPage csrf={issueLoginCsrf(c)} next={next} error={message} />, 401);
    }
    await startSession(c, c.var.db, principal);
    return c.redirect(next, 303);
  });

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
  .use(
    "*",
    bodyLimit({
      maxSize: FORM_BODY_LIMIT_BYTES,
      onError: () => {
        throw new ApiError(
          "PAYLOAD_TOO_LARGE",
          `forms are limited to ${FORM_BODY_LIMIT_BYTES} bytes`,
        );
      },
    }),
  )
  .get("/static/:file", serveStatic)
  .get("/", (c) => c.redirect("/ui/pools", 303))
  .route("/", loginPages)
  .use("*", requireSession())
  .post("/logout", async (c) => {
    await readForm(c, z.strictObject({}));
    await endSession(c);
    return c.redirect("/ui/login", 303);
  })
  .route("/pools", poolPages)
  .route("/workspaces", workspacePages)
  .route("/workspaces", statePages)
  .route("/runs", runPages)
  .route("/tokens", tokenPages)
  .all("*", (c) => {
    throw new ApiError("NOT_FOUND", `no page at ${c.req.path}`);
  })
  .onError(renderError);

/** Mount at `/`: `/` redirects to the dashboard, which lives under `/ui`. */
export const uiRoutes = new Hono<UiEnv>()
  .get("/", (c) => c.redirect("/ui", 302))
  .route("/ui", dashboard);
