/**
 * The relying party's two calls to an organization's OpenID provider, with jose and the shared
 * discovery and key-set cache (`oidc/discovery.ts`): redeem the authorization code at the token
 * endpoint (client_secret_basic, the PKCE verifier, no redirects followed), and verify the ID
 * token it returns: signature by the issuer's keys (asymmetric algorithms only), `iss`, `aud` (and
 * `azp` when several audiences), `exp`, `iat` and the `nonce` of this sign-in.
 */

import { ok, type Result } from "@outpost/common";
import { errors, type JWTPayload, jwtVerify } from "jose";
import { type Reason, refuse } from "../lib/reason.ts";
import { type DiscoveryDocument, FETCH_TIMEOUT_MS, type KeySet } from "../oidc/discovery.ts";
import { ALLOWED_ALGORITHMS, CLOCK_SKEW_SECONDS, refusalOf } from "../oidc/verify.ts";

/**
 * The kinds a sign-in is refused with: `invalid` (the answer does not belong to this browser's
 * sign-in), `not_found` (no single sign-on here), `unavailable` (the provider cannot be used),
 * `rejected` (the provider or its ID token failed a check), `revoked` (the user is disabled).
 */
export type SignInKind = "invalid" | "not_found" | "unavailable" | "rejected" | "revoked";

/** Why a sign-in was refused: its kind and sentence, and the check's name for the audit log. */
export type SignInRefusal = Reason<SignInKind> & { readonly check: string };

/** A sign-in refusal: the check that failed, of kind `kind`, with its sentence. */
export function refuseSignIn(kind: SignInKind, check: string, message: string) {
  return refuse(kind, message, { check });
}

const rejected = (check: string, message: string) => refuseSignIn("rejected", check, message);

/** Redeems the code; the ID token the provider answers, or why not. */
export async function redeemCode(
  document: DiscoveryDocument,
  client: { clientId: string; clientSecret: string },
  grant: { code: string; redirectUri: string; codeVerifier: string },
): Promise<Result<string, SignInRefusal>> {
  if (document.tokenEndpoint === null) {
    return refuseSignIn(
      "unavailable",
      "issuer_unusable",
      "the provider's discovery document has no token endpoint",
    );
  }
  const basic = btoa(
    `${encodeURIComponent(client.clientId)}:${encodeURIComponent(client.clientSecret)}`,
  );
  let res: Response;
  try {
    res = await fetch(document.tokenEndpoint, {
      method: "POST",
      redirect: "manual",
      signal: AbortSignal.timeout(FETCH_TIMEOUT_MS),
      headers: {
        authorization: `Basic ${basic}`,
        "content-type": "application/x-www-form-urlencoded",
        accept: "application/json",
      },
      body: new URLSearchParams({
        grant_type: "authorization_code",
        code: grant.code,
        redirect_uri: grant.redirectUri,
        code_verifier: grant.codeVerifier,
      }),
    });
  } catch {
    return refuseSignIn(
      "unavailable",
      "issuer_unreachable",
      "the provider's token endpoint could not be reached",
    );
  }
  const body = (await res.json().catch(() => null)) as Record<string, unknown> | null;
  if (res.status !== 200) {
    const error = typeof body?.error === "string" ? body.error.slice(0, 100) : `HTTP ${res.status}`;
    return rejected("code_refused", `the provider refused the authorization code (${error})`);
  }
  if (typeof body?.id_token !== "string") {
    return rejected("no_id_token", "the provider's token response has no ID token");
  }
  return ok(body.id_token);
}

/** Verifies the ID token of this sign-in at `expected.now`; its claims, or the check that failed. */
export async function verifyIdToken(
  idToken: string,
  expected: { issuer: string; clientId: string; nonce: string; keys: KeySet; now: number },
): Promise<Result<JWTPayload, SignInRefusal>> {
  let claims: JWTPayload;
  try {
    ({ payload: claims } = await jwtVerify(idToken, expected.keys, {
      currentDate: new Date(expected.now),
      issuer: expected.issuer,
      audience: expected.clientId,
      algorithms: ALLOWED_ALGORITHMS,
      clockTolerance: CLOCK_SKEW_SECONDS,
      requiredClaims: ["exp", "iat", "sub"],
    }));
  } catch (error) {
    if (error instanceof errors.JWTClaimValidationFailed && error.claim === "aud") {
      return rejected("audience_mismatch", "the ID token is not for this client (aud)");
    }
    if (error instanceof errors.JWTClaimValidationFailed && error.claim === "iss") {
      return rejected("issuer_mismatch", "the ID token is from another issuer (iss)");
    }
    const refusal = refusalOf(error, expected.issuer);
    return rejected(refusal.check, `the ID token: ${refusal.why}`);
  }
  if (Array.isArray(claims.aud) && claims.aud.length > 1 && claims.azp !== expected.clientId) {
    return rejected(
      "audience_mismatch",
      "the ID token names other audiences and is not for this client (azp)",
    );
  }
  if (typeof claims.iat === "number" && claims.iat > expected.now / 1000 + CLOCK_SKEW_SECONDS) {
    return rejected("not_yet_valid", "the ID token was issued in the future (iat)");
  }
  if (claims.nonce !== expected.nonce) {
    return rejected("nonce_mismatch", "the ID token's nonce is not this sign-in's");
  }
  return ok(claims);
}
