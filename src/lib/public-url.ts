/**
 * The coordinator's own public address, for answers that tell a host where to download from or
 * what to connect to (the install script, the agent release, the dashboard's install commands).
 * It comes from `PUBLIC_URL`, never from the request: a request's `Host` header is whatever the
 * caller wrote, and an address built from it would send an agent or an installer to the caller's
 * server. Only loopback development (no `PUBLIC_URL`, a request to 127.0.0.1, ::1 or localhost)
 * answers with the request's origin.
 */
import { fail, ok, type Result } from "@outpost/common";
import { isLoopbackHost } from "@outpost/protocol";

/** Why there is no public address: the deployment must set `PUBLIC_URL`. */
export type PublicOriginProblem = "public_url_unset";

/** The sentence a route answers for {@link PublicOriginProblem}. */
export const PUBLIC_URL_UNSET =
  "PUBLIC_URL is not set: this coordinator cannot name its own address to agents and installers; set PUBLIC_URL in wrangler.toml to the deployment's https origin";

/** `PUBLIC_URL` as an origin, or null when it is empty or not an http(s) origin. */
export function configuredOrigin(publicUrl: string | undefined): string | null {
  const text = publicUrl?.trim().replace(/\/+$/, "") ?? "";
  if (!text) {
    return null;
  }
  try {
    const url = new URL(text);
    const isOrigin = url.pathname === "/" && !url.search && !url.hash && !url.username;
    return isOrigin && (url.protocol === "https:" || url.protocol === "http:") ? url.origin : null;
  } catch {
    return null;
  }
}

/**
 * The origin to write into answers: `PUBLIC_URL`'s; without one, the request's origin only when
 * the request went to a loopback host (local development); otherwise `public_url_unset`.
 */
export function publicOrigin(
  env: Pick<Env, "PUBLIC_URL">,
  requestUrl: string,
): Result<string, PublicOriginProblem> {
  const configured = configuredOrigin(env.PUBLIC_URL);
  if (configured !== null) {
    return ok(configured);
  }
  const request = new URL(requestUrl);
  return isLoopbackHost(request.hostname) ? ok(request.origin) : fail("public_url_unset");
}
