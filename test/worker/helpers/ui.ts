/** The dashboard in Worker tests: sign in with a token and submit forms with the session cookie. */
import { expect } from "vitest";
import { BASE, workerFetch } from "./api.ts";

/** The value of a cookie set by a response, or null. */
export function setCookieValue(res: Response, name: string): string | null {
  for (const line of res.headers.getSetCookie()) {
    const [pair] = line.split(";");
    const [key, ...value] = (pair ?? "").split("=");
    if (key?.trim() === name) {
      return value.join("=");
    }
  }
  return null;
}

/** The hidden CSRF field of the first form of a page. */
export function csrfOf(html: string): string {
  const match = /name="_csrf" value="([^"]+)"/.exec(html);
  if (!match?.[1]) {
    throw new Error("no CSRF field on the page");
  }
  return match[1];
}

export function uiFetch(
  path: string,
  init: { method?: string; cookie?: string; form?: Record<string, string>; base?: string } = {},
): Promise<Response> {
  const headers = new Headers();
  if (init.cookie) {
    headers.set("cookie", init.cookie);
  }
  let body: string | undefined;
  if (init.form) {
    headers.set("content-type", "application/x-www-form-urlencoded");
    body = new URLSearchParams(init.form).toString();
  }
  return workerFetch(
    new Request(`${init.base ?? BASE}${path}`, {
      method: init.method ?? (init.form ? "POST" : "GET"),
      headers,
      body,
      redirect: "manual",
    }),
  );
}

/** A signed-in browser stand-in: the session cookie and the session's CSRF token. */
export type UiSession = {
  cookie: string;
  csrf: string;
  get(path: string): Promise<Response>;
  /** Posts a form with the session's CSRF token unless `csrf` is given (or null to omit it). */
  post(path: string, form?: Record<string, string>, csrf?: string | null): Promise<Response>;
};

/** Answers the sign-in form with `token`; returns the raw answer and the cookies it needs. */
export async function submitLogin(token: string, base?: string): Promise<Response> {
  const page = await uiFetch("/ui/login", base ? { base } : {});
  const loginCsrf = setCookieValue(page, "outpost_login_csrf");
  const html = await page.text();
  return uiFetch("/ui/login", {
    ...(base ? { base } : {}),
    cookie: `outpost_login_csrf=${loginCsrf}`,
    form: { _csrf: csrfOf(html), token, next: "/ui/pools" },
  });
}

/** Signs in with an org token through the real form and returns the session. */
export async function signIn(token: string): Promise<UiSession> {
  const res = await submitLogin(token);
  expect(res.status).toBe(303);
  const secret = setCookieValue(res, "outpost_session");
  if (!secret) {
    throw new Error("sign-in set no session cookie");
  }
  const cookie = `outpost_session=${secret}`;
  const pools = await uiFetch("/ui/pools", { cookie });
  expect(pools.status).toBe(200);
  const csrf = csrfOf(await pools.text());
  return {
    cookie,
    csrf,
    get: (path) => uiFetch(path, { cookie }),
    post: (path, form = {}, token) =>
      uiFetch(path, {
        cookie,
        form: token === null ? form : { _csrf: token ?? csrf, ...form },
      }),
  };
}
