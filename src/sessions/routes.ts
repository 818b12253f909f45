/**
 * `POST /auth/logout`: ends the browser's session server-side (its cookie is useless from then
 * on, wherever a copy of it is) and clears the cookie. Only from this site's own pages.
 */
import { createRoute } from "@hono/zod-openapi";
import { getCookie } from "hono/cookie";
import { actorOf } from "../authz/principal.ts";
import { ApiError } from "../errors.ts";
import { errorResponses, newRouter } from "../router.ts";
import { clearSessionCookie, isSameOrigin } from "./http.ts";
import { SESSION_COOKIE, sessionSettings } from "./model.ts";
import { endSession, findSession } from "./service.ts";

export const logoutRoutes = newRouter().openapi(
  createRoute({
    method: "post",
    operationId: "logout",
    path: "/logout",
    tags: ["auth"],
    summary: "Sign out: the session ends server-side and its cookie is cleared",
    responses: {
      204: { description: "Signed out (also when there was no session)" },
      ...errorResponses(401),
    },
  }),
  async (c) => {
    const secret = getCookie(c, SESSION_COOKIE);
    if (secret && !isSameOrigin(c)) {
      throw new ApiError("UNAUTHORIZED", "sign out from this site's own pages");
    }
    const now = c.var.deps.now();
    const session = secret
      ? await findSession(c.var.db, secret, sessionSettings(c.env), now)
      : null;
    if (session) {
      await endSession(c.var.db, session, actorOf(session.principal), now);
    }
    clearSessionCookie(c);
    return c.body(null, 204);
  },
);
