/**
 * `/auth/…`: the browser's sign-in through the organization's OpenID provider (`/auth/sso/start`
 * sends it there with a fresh state bound to this browser by a cookie; the provider sends it back
 * to `/auth/sso/callback`, which starts a session), and the CLI's device-style login
 * (`/auth/cli/start`, then `/auth/cli/token` until the person approved it in the dashboard).
 */
import { createRoute, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { deleteCookie, getCookie, setCookie } from "hono/cookie";
import type { AppEnv } from "../env.ts";
import { valueOrThrow } from "../errors.ts";
import { errorResponses, jsonBody, jsonResponse, newRouter } from "../router.ts";
import { isSecureCookie, setSessionCookie } from "../sessions/http.ts";
import { sessionSettings } from "../sessions/model.ts";
import { startSession } from "../sessions/service.ts";
import { ErrorPage } from "../ui/pages/login.tsx";
import { CLI_POLL_INTERVAL_SECONDS, pollCliLogin, startCliLogin } from "./cli-login.ts";
import { SSO_REQUEST_TTL_MS, SSO_STATE_COOKIE, safeNext } from "./model.ts";
import { finishSignIn, startSignIn } from "./sign-in.ts";

const tags = ["auth"];

function redirectUri(c: Context): string {
  return `${new URL(c.req.url).origin}/auth/sso/callback`;
}

function stateCookie(c: Context, value: string, maxAgeSeconds: number) {
  setCookie(c, SSO_STATE_COOKIE, value, {
    httpOnly: true,
    // Lax: the provider's redirect back is a top-level cross-site navigation.
    sameSite: "Lax",
    secure: isSecureCookie(c),
    path: "/auth/sso",
    maxAge: maxAgeSeconds,
  });
}

function refusedPage(c: Context<AppEnv>, message: string, status: 400 | 401) {
  c.header("Cache-Control", "no-store");
  return c.html(<ErrorPage title="Sign-in refused" message={message} signIn={true} />, status);
}

const SsoStartQuery = z.strictObject({
  org: z
    .string()
    .min(1)
    .max(200)
    .openapi({ param: { name: "org", in: "query" }, description: "The organization's name" }),
  next: z
    .string()
    .max(2048)
    .optional()
    .openapi({
      param: { name: "next", in: "query" },
      description: "A dashboard path to return to",
    }),
});

const CallbackQuery = z.object({
  state: z.string().max(512).optional(),
  code: z.string().max(4096).optional(),
  error: z.string().max(512).optional(),
});

const CliStart = z
  .strictObject({ clientName: z.string().trim().min(1).max(100).default("a terminal") })
  .openapi("CliLoginStart");

const CliStarted = z
  .object({
    deviceCode: z.string().openapi({ description: "The CLI's secret for polling; never shown" }),
    userCode: z.string(),
    verificationUrl: z.string().openapi({ description: "Where the person approves the login" }),
    expiresAt: z.string(),
    intervalSeconds: z.number().int(),
  })
  .openapi("CliLoginStarted");

const CliPoll = z
  .object({
    status: z.enum(["pending", "approved"]),
    token: z.string().optional().openapi({ description: "A personal token, once approved" }),
    tokenId: z.string().optional(),
    userId: z.string().optional(),
  })
  .openapi("CliLoginPoll");

export const authRoutes = newRouter()
  .openapi(
    createRoute({
      method: "get",
      operationId: "startSso",
      path: "/sso/start",
      tags,
      summary: "Start signing in through the organization's provider (redirects there)",
      request: { query: SsoStartQuery },
      responses: {
        302: { description: "To the provider's authorization endpoint" },
        ...errorResponses(400, 404),
      },
    }),
    async (c) => {
      const { org, next } = c.req.valid("query");
      const started = await startSignIn(c.var.db, c.env, {
        orgName: org,
        next: safeNext(next, "/ui"),
        redirectUri: redirectUri(c),
        now: c.var.deps.now(),
      });
      const { state, url } = valueOrThrow(started);
      stateCookie(c, state, SSO_REQUEST_TTL_MS / 1000);
      c.header("Cache-Control", "no-store");
      return c.redirect(url, 302);
    },
  )
  .openapi(
    createRoute({
      method: "get",
      operationId: "finishSso",
      path: "/sso/callback",
      tags,
      summary: "Where the provider sends the browser back: checks everything, starts a session",
      request: { query: CallbackQuery },
      responses: {
        303: { description: "Signed in: to the dashboard page the sign-in started from" },
        400: { description: "Refused (an HTML page saying which check failed)" },
        401: { description: "Refused (an HTML page saying which check failed)" },
      },
    }),
    async (c) => {
      const query = c.req.valid("query");
      const now = c.var.deps.now();
      const outcome = await finishSignIn(c.var.db, c.env, {
        state: query.state ?? null,
        code: query.code ?? null,
        error: query.error ?? null,
        cookieState: getCookie(c, SSO_STATE_COOKIE) ?? null,
        redirectUri: redirectUri(c),
        now,
      });
      deleteCookie(c, SSO_STATE_COOKIE, { path: "/auth/sso" });
      if (!outcome.ok) {
        // Answers that do not belong to this browser's sign-in are bad requests; the rest are
        // refusals of the person's credentials.
        const status = outcome.reason.kind === "invalid" ? 400 : 401;
        return refusedPage(c, `Sign-in refused: ${outcome.reason.message}.`, status);
      }
      const { user, next } = outcome.value;
      const settings = sessionSettings(c.env);
      const session = await startSession(
        c.var.db,
        { kind: "user", orgId: user.orgId, userId: user.id, method: "sso" },
        settings,
        now,
      );
      setSessionCookie(c, session.secret, settings);
      c.header("Cache-Control", "no-store");
      return c.redirect(next, 303);
    },
  )
  .openapi(
    createRoute({
      method: "post",
      operationId: "startCliLogin",
      path: "/cli/start",
      tags,
      summary: "Start a CLI login: a code for the person to approve in a signed-in browser",
      request: { body: jsonBody(CliStart) },
      responses: {
        201: jsonResponse(CliStarted, "The codes; poll /auth/cli/token with the device code"),
        ...errorResponses(400, 413, 415),
      },
    }),
    async (c) => {
      const started = await startCliLogin(c.var.db, {
        clientName: c.req.valid("json").clientName,
        now: c.var.deps.now(),
      });
      const origin = new URL(c.req.url).origin;
      return c.json(
        {
          deviceCode: started.deviceCode,
          userCode: started.userCode,
          verificationUrl: `${origin}/ui/cli-login/${started.userCode}`,
          expiresAt: new Date(started.expiresAt).toISOString(),
          intervalSeconds: CLI_POLL_INTERVAL_SECONDS,
        },
        201,
      );
    },
  )
  .openapi(
    createRoute({
      method: "post",
      operationId: "pollCliLogin",
      path: "/cli/token",
      tags,
      summary: "The CLI's poll: pending, or once approved a personal token (once)",
      request: {
        body: jsonBody(
          z.strictObject({ deviceCode: z.string().min(1).max(200) }).openapi("CliLoginToken"),
        ),
      },
      responses: {
        200: jsonResponse(CliPoll, "Pending, or the token"),
        ...errorResponses(400, 404, 413, 415),
      },
    }),
    async (c) => {
      const polled = await pollCliLogin(c.var.db, {
        deviceCode: c.req.valid("json").deviceCode,
        now: c.var.deps.now(),
      });
      return c.json(valueOrThrow(polled), 200);
    },
  );
