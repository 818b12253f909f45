/**
 * Verifies an OIDC token presented for exchange against the trusts of a pool, with jose: the
 * issuer's keys come from its discovery document's `jwks_uri` (`discovery.ts`: fetched without
 * following redirects, cached per isolate); only asymmetric algorithms; `iss`, `aud`, `exp` (required), `nbf`
 * and `iat` with a 30 s clock skew; then every claim condition of a trust. Each refusal names the
 * check that failed and never carries the token.
 */

import { ok } from "@outpost/common";
import { decodeJwt, decodeProtectedHeader, errors, type JWTPayload, jwtVerify } from "jose";
import { discover } from "./discovery.ts";
import { audienceMatches, type TrustRow, unmetCondition } from "./trust-model.ts";

/** Asymmetric signatures only: `none` and every HMAC algorithm are refused before jose runs. */
export const ALLOWED_ALGORITHMS = [
  "RS256",
  "RS384",
  "RS512",
  "PS256",
  "PS384",
  "PS512",
  "ES256",
  "ES384",
  "ES512",
  "EdDSA",
  "Ed25519",
];
export const CLOCK_SKEW_SECONDS = 30;

export const REFUSAL_REASONS = [
  "malformed_token",
  "unsupported_algorithm",
  "untrusted_issuer",
  "issuer_unreachable",
  "unknown_key",
  "invalid_signature",
  "expired",
  "not_yet_valid",
  "missing_expiration",
  "audience_mismatch",
  "claim_mismatch",
] as const;
export type RefusalReason = (typeof REFUSAL_REASONS)[number];
export type Refusal = { reason: RefusalReason; message: string };
/** A verification outcome: the value, or the refusal spread beside `ok: false`. */
export type Verified<T> = { ok: true; value: T } | ({ ok: false } & Refusal);

const refuse = (reason: RefusalReason, message: string): { ok: false } & Refusal => ({
  ok: false,
  reason,
  message,
});

/** The token's header and claims, read without trusting them, only to route it to a trust. */
function peek(token: string): Verified<{ alg: string; iss: string }> {
  try {
    const header = decodeProtectedHeader(token);
    const payload = decodeJwt(token);
    if (typeof payload.iss !== "string") {
      return refuse("malformed_token", "the token has no iss claim");
    }
    return ok({ alg: typeof header.alg === "string" ? header.alg : "", iss: payload.iss });
  } catch {
    return refuse("malformed_token", "the token is not a signed JWT (header.payload.signature)");
  }
}

/** Maps jose's verification failures to the check that failed (also for SSO and Access). */
export function refusalOf(error: unknown, issuer: string): { ok: false } & Refusal {
  if (error instanceof errors.JWTExpired) {
    return refuse("expired", "the token has expired (exp is in the past)");
  }
  if (error instanceof errors.JWTClaimValidationFailed) {
    if (error.claim === "exp") {
      return refuse("missing_expiration", "the token has no valid exp claim");
    }
    if (error.claim === "nbf") {
      return refuse("not_yet_valid", "the token is not valid yet (nbf is in the future)");
    }
    return refuse("malformed_token", `the token's ${error.claim} claim is invalid`);
  }
  if (
    error instanceof errors.JWKSNoMatchingKey ||
    error instanceof errors.JWKSMultipleMatchingKeys
  ) {
    return refuse("unknown_key", `no key of ${issuer} matches the token's kid and alg`);
  }
  if (error instanceof errors.JWSSignatureVerificationFailed) {
    return refuse("invalid_signature", "the token's signature does not verify");
  }
  if (error instanceof errors.JOSEAlgNotAllowed || error instanceof errors.JOSENotSupported) {
    return refuse("unsupported_algorithm", "the token's algorithm is not accepted");
  }
  if (error instanceof errors.JWSInvalid || error instanceof errors.JWTInvalid) {
    return refuse("malformed_token", "the token is not a valid signed JWT");
  }
  return refuse("issuer_unreachable", `the keys of ${issuer} could not be fetched`);
}

/**
 * The trust of `trusts` the token satisfies and its verified claims, or the refusal. Trusts are
 * tried in order; when none matches, the refusal names the first failing check of the closest.
 */
export async function verifyForTrusts(
  token: string,
  trusts: readonly TrustRow[],
  options: { allowLoopbackHttp: boolean; poolId: string },
): Promise<Verified<{ trust: TrustRow; claims: JWTPayload & { iss: string } }>> {
  const peeked = peek(token);
  if (!peeked.ok) {
    return peeked;
  }
  const { alg, iss } = peeked.value;
  if (!ALLOWED_ALGORITHMS.includes(alg)) {
    return refuse(
      "unsupported_algorithm",
      `alg ${JSON.stringify(alg)} is refused: only asymmetric signatures (${ALLOWED_ALGORITHMS.join(", ")})`,
    );
  }
  const candidates = trusts.filter((trust) => trust.issuer === iss);
  if (candidates.length === 0) {
    return refuse(
      "untrusted_issuer",
      `pool ${options.poolId} trusts no issuer ${JSON.stringify(iss.slice(0, 200))}`,
    );
  }
  let claims: JWTPayload;
  try {
    const { keys } = await discover(iss, options.allowLoopbackHttp);
    ({ payload: claims } = await jwtVerify(token, keys, {
      issuer: iss,
      algorithms: ALLOWED_ALGORITHMS,
      clockTolerance: CLOCK_SKEW_SECONDS,
      requiredClaims: ["exp"],
    }));
  } catch (error) {
    return refusalOf(error, iss);
  }
  if (typeof claims.iat === "number" && claims.iat > Date.now() / 1000 + CLOCK_SKEW_SECONDS) {
    return refuse("not_yet_valid", "the token was issued in the future (iat)");
  }
  return matchTrust({ ...claims, iss }, candidates);
}

function matchTrust(
  claims: JWTPayload & { iss: string },
  candidates: readonly TrustRow[],
): Verified<{ trust: TrustRow; claims: JWTPayload & { iss: string } }> {
  let unmet: Refusal | null = null;
  for (const trust of candidates) {
    if (!audienceMatches(claims.aud, trust.audience)) {
      unmet ??= {
        reason: "audience_mismatch",
        message: `the token's aud does not name ${JSON.stringify(trust.audience)}`,
      };
      continue;
    }
    const condition = unmetCondition(trust.claims, claims);
    if (condition === null) {
      return ok({ trust, claims });
    }
    const actual =
      condition.actual === null
        ? "is missing or not a string"
        : `is ${JSON.stringify(condition.actual.slice(0, 200))}`;
    unmet = {
      reason: "claim_mismatch",
      message: `claim ${condition.claim} ${actual}; trust ${trust.id} requires ${JSON.stringify(condition.pattern)}`,
    };
  }
  return unmet === null
    ? refuse("claim_mismatch", "no trust matches the token")
    : refuse(unmet.reason, unmet.message);
}
