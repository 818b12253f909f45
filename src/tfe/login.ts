/**
 * `terraform login` through login.v1 (`internal/command/login.go`, svchost `disco.OAuthClient`):
 * an OAuth authorization-code grant with PKCE (S256 only) to a loopback redirect on the ports
 * the discovery document advertises. A signed-in person consents; the code made then is kept
 * only as its SHA-256, bound to the challenge, the redirect URI and the person, lives a minute
 * and is redeemed once for a personal token (`op_user_…`). Every refusal is an OAuth error
 * (`error`, `error_description`); a refused exchange creates no token.
 */
import { newId, ok } from "@outpost/common";
import { and, eq, gt, isNull, lt } from "drizzle-orm";
import type { AuditActor } from "../authz/actor.ts";
import type { Database } from "../db/client.ts";
import { terraformLoginCodes } from "../db/schema.ts";
import { sha256Hex, timingSafeEqualString } from "../lib/crypto.ts";
import { codeChallenge, randomToken } from "../sso/model.ts";
import { getUser } from "../users/queries.ts";
import { createUserToken } from "../users/tokens.ts";

/** The `client` of the login.v1 service; the CLI sends it back as `client_id`. */
export const LOGIN_CLIENT_ID = "terraform-cli";
/** The loopback ports the CLI may listen on for the redirect (`ports` in login.v1). */
export const LOGIN_PORTS = [10000, 10010] as const;
/** Where the discovery document sends the CLI: the consent page and the token endpoint. */
export const LOGIN_AUTHZ_PATH = "/ui/terraform-login";
export const LOGIN_TOKEN_PATH = "/auth/terraform/token";
/** An authorization code is redeemed within this long: the CLI exchanges it at once. */
export const LOGIN_CODE_TTL_MS = 60_000;

/** The login.v1 entry of `/.well-known/terraform.json`. */
export const LOGIN_SERVICE = {
  client: LOGIN_CLIENT_ID,
  grant_types: ["authz_code"],
  authz: LOGIN_AUTHZ_PATH,
  token: LOGIN_TOKEN_PATH,
  ports: [...LOGIN_PORTS],
};

/** An OAuth refusal (RFC 6749 §4.1.2.1, §5.2) with the HTTP status it is answered with. */
export type OAuthError = {
  status: 400 | 401;
  error:
    | "invalid_request"
    | "unauthorized_client"
    | "unsupported_response_type"
    | "invalid_client"
    | "invalid_grant"
    | "unsupported_grant_type";
  description: string;
};

type OAuthOutcome<T> = { ok: true; value: T } | { ok: false; error: OAuthError };

function oauthError(
  error: OAuthError["error"],
  description: string,
  status: 400 | 401 = 400,
): { ok: false; error: OAuthError } {
  return { ok: false, error: { status, error, description } };
}

/** What an authorization request asks for, once valid. */
export type AuthorizationRequest = {
  redirectUri: string;
  state: string;
  codeChallenge: string;
};

// S256 challenges are the base64url SHA-256 of the verifier: always 43 characters.
const CHALLENGE = /^[A-Za-z0-9_-]{43}$/;
// RFC 7636 §4.1: 43 to 128 unreserved characters.
const VERIFIER = /^[A-Za-z0-9._~-]{43,128}$/;

/**
 * Why `uri` is not a redirect the CLI can have asked for, or null: only
 * `http://localhost:<port>/login` or `http://127.0.0.1:<port>/login` with a port in
 * {@link LOGIN_PORTS}, nothing more (no credentials, query or fragment).
 */
export function redirectUriProblem(uri: string): string | null {
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return "redirect_uri is not a URL";
  }
  const port = Number(url.port);
  const loopback = url.hostname === "localhost" || url.hostname === "127.0.0.1";
  if (url.protocol !== "http:" || !loopback) {
    return "redirect_uri must be http://localhost or http://127.0.0.1 (the CLI's own listener)";
  }
  if (!Number.isInteger(port) || port < LOGIN_PORTS[0] || port > LOGIN_PORTS[1]) {
    return `redirect_uri's port must be between ${LOGIN_PORTS[0]} and ${LOGIN_PORTS[1]}`;
  }
  if (url.pathname !== "/login" || url.search || url.hash || url.username || url.password) {
    return "redirect_uri must be exactly http://<loopback>:<port>/login";
  }
  return null;
}

/**
 * The authorization request of the CLI's query, or the OAuth error refusing it. Nothing is
 * redirected on a refusal: the redirect URI is not trusted before it passed.
 */
export function authorizationRequest(
  query: Record<string, string | undefined>,
): OAuthOutcome<AuthorizationRequest> {
  if (query.client_id !== LOGIN_CLIENT_ID) {
    return oauthError("unauthorized_client", `client_id must be ${LOGIN_CLIENT_ID}`);
  }
  const problem = redirectUriProblem(query.redirect_uri ?? "");
  if (problem !== null) {
    return oauthError("invalid_request", problem);
  }
  if (query.response_type !== "code") {
    return oauthError("unsupported_response_type", "response_type must be code");
  }
  if (query.code_challenge_method !== "S256" || !CHALLENGE.test(query.code_challenge ?? "")) {
    return oauthError(
      "invalid_request",
      "PKCE is required: code_challenge (43 characters) with code_challenge_method S256",
    );
  }
  const state = query.state ?? "";
  if (state.length > 512) {
    return oauthError("invalid_request", "state is longer than 512 characters");
  }
  return ok({
    redirectUri: query.redirect_uri ?? "",
    state,
    codeChallenge: query.code_challenge ?? "",
  });
}

/** The person consented: a fresh code for the request, to be sent to its redirect URI. */
export async function issueLoginCode(
  db: Database,
  input: { orgId: string; userId: string; request: AuthorizationRequest; now: number },
): Promise<string> {
  const code = randomToken();
  await db.batch([
    db.insert(terraformLoginCodes).values({
      id: newId("terraformLogin"),
      codeHash: await sha256Hex(code),
      orgId: input.orgId,
      userId: input.userId,
      codeChallenge: input.request.codeChallenge,
      redirectUri: input.request.redirectUri,
      createdAt: input.now,
      expiresAt: input.now + LOGIN_CODE_TTL_MS,
    }),
    db.delete(terraformLoginCodes).where(lt(terraformLoginCodes.expiresAt, input.now)),
  ]);
  return code;
}

/** The redirect that hands the code (or the refusal) back to the CLI's listener. */
export function redirectWith(request: AuthorizationRequest, params: Record<string, string>) {
  const url = new URL(request.redirectUri);
  for (const [name, value] of Object.entries(params)) {
    url.searchParams.set(name, value);
  }
  if (request.state) {
    url.searchParams.set("state", request.state);
  }
  return url.toString();
}

/** The token request's form fields, as the CLI sends them (`oauth2.AuthStyleInParams`). */
export type TokenRequest = Partial<
  Record<"grant_type" | "code" | "redirect_uri" | "client_id" | "code_verifier", string>
>;

function checkTokenRequest(form: TokenRequest): OAuthOutcome<Required<TokenRequest>> {
  if (form.grant_type !== "authorization_code") {
    return oauthError("unsupported_grant_type", "grant_type must be authorization_code");
  }
  if (form.client_id !== LOGIN_CLIENT_ID) {
    return oauthError("invalid_client", `client_id must be ${LOGIN_CLIENT_ID}`, 401);
  }
  const { code, redirect_uri, code_verifier } = form;
  if (!code || code.length > 200 || !redirect_uri) {
    return oauthError("invalid_request", "code and redirect_uri are required");
  }
  if (!code_verifier || !VERIFIER.test(code_verifier)) {
    return oauthError(
      "invalid_request",
      "code_verifier is required: 43 to 128 letters, digits and -._~ (RFC 7636)",
    );
  }
  return ok({
    grant_type: form.grant_type,
    client_id: form.client_id,
    code,
    redirect_uri,
    code_verifier,
  });
}

/**
 * Redeems a code for a personal token of the person who consented. The code is taken (marked
 * used) in the statement that finds it, so it is never redeemed twice; a code whose verifier
 * or redirect URI does not match is spent all the same and no token is made.
 */
export async function redeemLoginCode(
  db: Database,
  form: TokenRequest,
  now: number,
): Promise<OAuthOutcome<{ token: string; tokenId: string }>> {
  const checked = checkTokenRequest(form);
  if (!checked.ok) {
    return checked;
  }
  const { code, redirect_uri, code_verifier } = checked.value;
  const [taken] = await db
    .update(terraformLoginCodes)
    .set({ consumedAt: now })
    .where(
      and(
        eq(terraformLoginCodes.codeHash, await sha256Hex(code)),
        isNull(terraformLoginCodes.consumedAt),
        gt(terraformLoginCodes.expiresAt, now),
      ),
    )
    .returning();
  if (!taken) {
    return oauthError("invalid_grant", "the code is unknown, expired or already used");
  }
  if (taken.redirectUri !== redirect_uri) {
    return oauthError("invalid_grant", "redirect_uri does not match the authorization request");
  }
  if (!timingSafeEqualString(await codeChallenge(code_verifier), taken.codeChallenge)) {
    return oauthError("invalid_grant", "code_verifier does not match the code_challenge");
  }
  const user = await getUser(db, taken.orgId, taken.userId);
  if (!user || user.disabledAt !== null) {
    return oauthError("invalid_grant", "the person who signed in is no longer enabled");
  }
  // The person consented in a signed-in browser; the token is theirs.
  const actor: AuditActor = {
    type: "user",
    id: user.id,
    name: user.name || user.email,
    via: "sso",
  };
  const created = await createUserToken(db, {
    orgId: taken.orgId,
    userId: taken.userId,
    description: "terraform login",
    expiresInSeconds: null,
    actor,
    now,
  });
  return ok({ token: created.token, tokenId: created.id });
}
