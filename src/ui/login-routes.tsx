/**
 * Signing in to the dashboard: through the organization's OpenID provider (`/auth/sso/start`),
 * or, as the break-glass path, with an org token exchanged once for a session of the same kind.
 * Signing out ends the session server-side.
 */
import { z } from "@hono/zod-openapi";
import { Hono } from "hono";
import { auditQuery } from "../audit/service.ts";
import { actorOf, type PersonPrincipal } from "../authz/principal.ts";
import type { AppEnv } from "../env.ts";
import { ApiError } from "../errors.ts";
import { authenticate } from "../middleware/auth.ts";
import { clearSessionCookie, setSessionCookie } from "../sessions/http.ts";
import { sessionSettings } from "../sessions/model.ts";
import { endSession, startSession } from "../sessions/service.ts";
import { safeNext } from "../sso/model.ts";
import { ssoOrganizations } from "../sso/queries.ts";
import { readForm, readFormBody } from "./forms.ts";
import { LoginPage, type SsoChoice } from "./pages/login.tsx";
import {
  CSRF_FIELD,
  checkLoginCsrf,
  currentSession,
  issueLoginCsrf,
  type UiEnv,
} from "./session.ts";

/** Where a signed-in person lands: pools need an organization role, workspaces do not. */
export function landingFor(principal: PersonPrincipal): string {
  return principal.role === null ? "/ui/workspaces" : "/ui/pools";
}

/** The sign-in form's fields besides its CSRF token; anything else (a file, say) is a 400. */
const LoginForm = z.strictObject({
  token: z.string().max(1024).default(""),
  next: z.string().max(2048).optional(),
});

/**
 * What the page offers for single sign-on: a button for the deployment's only organization when
 * it has SSO, a field for the organization's name when several organizations exist and any of
 * them has it, nothing otherwise (organization names are not listed to strangers).
 */
async function ssoChoice(
  c: { var: { db: AppEnv["Variables"]["db"] } },
  org: string | undefined,
): Promise<SsoChoice> {
  const { names, organizations } = await ssoOrganizations(c.var.db, 1);
  if (names.length === 0) {
    return { kind: "none" };
  }
  if (org && /^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$/.test(org)) {
    // Named by the person: the provider's flow says whether it has SSO.
    return { kind: "button", org };
  }
  return organizations === 1 && names[0] ? { kind: "button", org: names[0] } : { kind: "field" };
}

/** Sign-in: before any session exists, so typed with the app environment only. */
export const loginPages = new Hono<AppEnv>()
  .get("/login", async (c) => {
    const session = await currentSession(c);
    const next = safeNext(c.req.query("next"), "");
    if (session) {
      return c.redirect(next || landingFor(session.principal), 303);
    }
    return c.html(
      <LoginPage
        csrf={issueLoginCsrf(c)}
        next={next}
        sso={await ssoChoice(c, c.req.query("org"))}
      />,
    );
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
    const next = safeNext(form.data.next, "");
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
      const page = (
        <LoginPage
          csrf={issueLoginCsrf(c)}
          next={next}
          error={message}
          sso={await ssoChoice(c, undefined)}
        />
      );
      return c.html(page, 401);
    }
    if (principal.kind !== "org") {
      throw new Error("authenticate answered another kind than asked");
    }
    const now = c.var.deps.now();
    const settings = sessionSettings(c.env);
    const session = await startSession(
      c.var.db,
      { kind: "token", orgId: principal.orgId, tokenId: principal.tokenId },
      settings,
      now,
    );
    await auditQuery(c.var.db, {
      orgId: principal.orgId,
      actor: { ...actorOf(principal), via: "token-session" },
      action: "session.sign_in",
      targetType: "session",
      targetId: session.id,
      data: { method: "token" },
      now,
    });
    setSessionCookie(c, session.secret, settings);
    return c.redirect(next || "/ui/pools", 303);
  });

/** Sign-out from the dashboard's header (a form with the session's CSRF token). */
export const logoutPage = new Hono<UiEnv>().post("/logout", async (c) => {
  await readForm(c, z.strictObject({}));
  const { session } = c.var;
  await endSession(c.var.db, session, actorOf(session.principal), c.var.deps.now());
  clearSessionCookie(c);
  // Behind Cloudflare Access, its own sign-out too: else the next page signs the person in again.
  return c.redirect(session.method === "access" ? "/cdn-cgi/access/logout" : "/ui/login", 303);
});
