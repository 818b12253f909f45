/**
 * Single sign-on, pure: an organization's OpenID Connect settings, the authorization request
 * (code flow with PKCE S256, `state` and `nonce`), and what a verified ID token must say.
 */
import { z } from "@hono/zod-openapi";
import { base64url } from "jose";
import { issuerProblem } from "../oidc/trust-model.ts";

/** How long a started sign-in may take before its callback is refused. */
export const SSO_REQUEST_TTL_MS = 10 * 60_000;
/** The cookie that binds a sign-in to the browser that started it (holds its `state`). */
export const SSO_STATE_COOKIE = "outpost_sso_state";

const Claim = z
  .string()
  .trim()
  .min(1)
  .max(100)
  .regex(/^[A-Za-z0-9_.:/-]+$/, "claim names are letters, digits and _ . : / -");

/** `PUT /api/v1/organization/sso`: the client secret is written, never read back. */
export const PutSso = z
  .strictObject({
    issuer: z.string().trim().min(1).max(500).openapi({ example: "https://login.example.com" }),
    clientId: z.string().trim().min(1).max(500),
    clientSecret: z.string().min(1).max(2000),
    groupsClaim: Claim.default("groups").openapi({
      description: "The ID token claim listing the user's groups (default groups)",
    }),
    emailClaim: Claim.default("email").openapi({
      description: "The ID token claim holding the user's email (default email)",
    }),
  })
  .openapi("PutSso");

/** Why an issuer cannot be used for sign-in (same rule as pool trusts), or null. */
export function ssoIssuerProblem(issuer: string, allowLoopbackHttp: boolean): string | null {
  return issuerProblem(issuer, allowLoopbackHttp);
}

/** A random URL-safe string of `bytes` random bytes. */
export function randomToken(bytes = 32): string {
  return base64url.encode(crypto.getRandomValues(new Uint8Array(bytes)));
}

/** The S256 code challenge of a PKCE verifier (RFC 7636). */
export async function codeChallenge(verifier: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier));
  return base64url.encode(new Uint8Array(digest));
}

/** The provider's authorization URL for one sign-in. */
export function authorizationUrl(
  endpoint: string,
  request: {
    clientId: string;
    redirectUri: string;
    state: string;
    nonce: string;
    challenge: string;
  },
): string {
  const url = new URL(endpoint);
  url.searchParams.set("response_type", "code");
  url.searchParams.set("client_id", request.clientId);
  url.searchParams.set("redirect_uri", request.redirectUri);
  url.searchParams.set("scope", "openid email profile");
  url.searchParams.set("state", request.state);
  url.searchParams.set("nonce", request.nonce);
  url.searchParams.set("code_challenge", request.challenge);
  url.searchParams.set("code_challenge_method", "S256");
  return url.toString();
}

/**
 * Only a path inside the dashboard, with an optional percent-encoded query, may be returned to
 * after sign-in (no open redirect: never another origin, never a scheme-relative path).
 */
export function safeNext(next: unknown, fallback = "/ui/pools"): string {
  return typeof next === "string" &&
    next.length <= 2048 &&
    /^\/ui(\/[A-Za-z0-9_-]+)*\/?(\?[A-Za-z0-9._~%&=+-]*)?$/.test(next)
    ? next
    : fallback;
}

/** The groups in a claim: a list of strings (anything else counts as no claim). */
export function groupsOf(value: unknown): string[] | null {
  if (!Array.isArray(value)) {
    return null;
  }
  return value.filter((g): g is string => typeof g === "string" && g !== "").slice(0, 1000);
}

/** The public shape of an organization's SSO settings; never the secret. */
export function presentSso(row: {
  issuer: string;
  clientId: string;
  groupsClaim: string;
  emailClaim: string;
  updatedAt: number;
}) {
  return {
    issuer: row.issuer,
    clientId: row.clientId,
    groupsClaim: row.groupsClaim,
    emailClaim: row.emailClaim,
    hasClientSecret: true,
    updatedAt: new Date(row.updatedAt).toISOString(),
  };
}
