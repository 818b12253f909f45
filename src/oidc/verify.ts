/**
 * Verifies an OIDC token presented for exchange against the trusts of a pool, with jose: the
 * issuer's keys come from its discovery document's `jwks_uri` (`discovery.ts`: fetched without
 * following redirects, cached per isolate); only asymmetric algorithms; `iss`, `aud`, `exp`
 * (required), `nbf` and `iat` with a 30 s clock skew; then every claim condition of a trust. Each
 * refusal is `rejected`, names the check that failed and never carries the token.
 */

import { ok, type Result } from "@outpost/common";
import { decodeJwt, decodeProtectedHeader, errors, type JWTPayload, jwtVerify } from "jose";
import { type Reason, refuse } from "../lib/reason.ts";
import { discover } from "./discovery.ts";
import { audienceMatches, isOwnIssuer, type TrustRow, unmetCondition } from "./trust-model.ts";

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
  "workload_identity_token",
  "replayed_token",
] as const;
export type RefusalReason = (typeof REFUSAL_REASONS)[number];
/** A refused token: the check that failed (also in `details.reason`, for clients) and why. */
export type Rejection = Reason<"rejected"> & { readonly check: RefusalReason };
/** A verification outcome: the value, or the rejection. */
export type Verified<T> = Result<T, Rejection>;

/** The rejection for a failed `check`, its sentence naming the check. */
export function reject(check: RefusalReason, why: string): { ok: false; reason: Rejection } {
  return refuse("rejected", `OIDC token refused (${check}): ${why}`, {
    check,
    details: { reason: check },
  });
}

const refused = (check: RefusalReason, why: string) => ({ check, why });

/** The token's header and claims, read without trusting them, only to route it to a trust. */
function peek(token: string): Verified<{ alg: string; iss: string; payload: JWTPayload }> {
  try {
    const header = decodeProtectedHeader(token);
    const payload = decodeJwt(token);
    if (typeof payload.iss !== "string") {
      return reject("malformed_token", "the token has no iss claim");
    }
    const alg = typeof header.alg === "string" ? header.alg : "";
    return ok({ alg, iss: payload.iss, payload });
  } catch {
    return reject("malformed_token", "the token is not a signed JWT (header.payload.signature)");
  }
}

/**
 * Maps jose's verification failures to the check that failed and why, in words (also for SSO
 * and Access, which word their own refusals).
 */
export function refusalOf(error: unknown, issuer: string): { check: RefusalReason; why: string } {
  if (error instanceof errors.JWTExpired) {
    return refused("expired", "the token has expired (exp is in the past)");
  }
  if (error instanceof errors.JWTClaimValidationFailed) {
    if (error.claim === "exp") {
      return refused("missing_expiration", "the token has no valid exp claim");
    }
    if (error.claim === "nbf") {
      return refused("not_yet_valid", "the token is not valid yet (nbf is in the future)");
    }
    return refused("malformed_token", `the token's ${error.claim} claim is invalid`);
  }
  if (
    error instanceof errors.JWKSNoMatchingKey ||
    error instanceof errors.JWKSMultipleMatchingKeys
  ) {
    return refused("unknown_key", `no key of ${issuer} matches the token's kid and alg`);
  }
  if (error instanceof errors.JWSSignatureVerificationFailed) {
    return refused("invalid_signature", "the token's signature does not verify");
  }
  if (error instanceof errors.JOSEAlgNotAllowed || error instanceof errors.JOSENotSupported) {
    return refused("unsupported_algorithm", "the token's algorithm is not accepted");
  }
  if (error instanceof errors.JWSInvalid || error instanceof errors.JWTInvalid) {
    return refused("malformed_token", "the token is not a valid signed JWT");
  }
  const why = error instanceof Error ? `: ${error.message.slice(0, 200)}` : "";
  return refused("issuer_unreachable", `the keys of ${issuer} could not be fetched${why}`);
}

/**
 * A workload identity token of a job (this deployment's, by its issuer, or any Outpost's, by its
 * `outpost_organization_id`) is never worth an agent token: workspace code can read it, and an
 * agent token receives every job of the pool with its secrets. Refused before any key is fetched.
 */
function workloadTokenProblem(
  iss: string,
  payload: JWTPayload,
  options: { ownIssuer: string | null; poolOrgId: string | null },
): Rejection | null {
  const orgId = payload.outpost_organization_id;
  if (!isOwnIssuer(iss, options.ownIssuer) && orgId === undefined) {
    return null;
  }
  const whose =
    typeof orgId === "string" && options.poolOrgId !== null && orgId !== options.poolOrgId
      ? "a job of another organization"
      : "a job";
  return reject(
    "workload_identity_token",
    `the token is the workload identity of ${whose} (it names ${JSON.stringify(iss.slice(0, 200))} or carries outpost_organization_id); workload identity tokens are never exchanged for agent tokens`,
  ).reason;
}

/**
 * The trust of `trusts` the token satisfies and its verified claims, or the refusal. Trusts are
 * tried in order; when none matches, the refusal names the first failing check of the closest.
 * Times (`exp`, `nbf`, `iat`) are checked against `options.now`. A workload identity token (see
 * {@link workloadTokenProblem}) is refused whatever the trusts say.
 */
export async function verifyForTrusts(
  token: string,
  trusts: readonly TrustRow[],
  options: {
    allowLoopbackHttp: boolean;
    poolId: string;
    now: number;
    ownIssuer: string | null;
    poolOrgId: string | null;
  },
): Promise<Verified<{ trust: TrustRow; claims: JWTPayload & { iss: string } }>> {
  const peeked = peek(token);
  if (!peeked.ok) {
    return peeked;
  }
  const { alg, iss, payload } = peeked.value;
  const workload = workloadTokenProblem(iss, payload, options);
  if (workload !== null) {
    return { ok: false, reason: workload };
  }
  if (!ALLOWED_ALGORITHMS.includes(alg)) {
    return reject(
      "unsupported_algorithm",
      `alg ${JSON.stringify(alg)} is refused: only asymmetric signatures (${ALLOWED_ALGORITHMS.join(", ")})`,
    );
  }
  const candidates = trusts.filter((trust) => trust.issuer === iss);
  if (candidates.length === 0) {
    return reject(
      "untrusted_issuer",
      `pool ${options.poolId} trusts no issuer ${JSON.stringify(iss.slice(0, 200))}`,
    );
  }
  let claims: JWTPayload;
  try {
    const { keys } = await discover(iss, options.allowLoopbackHttp, options.now);
    ({ payload: claims } = await jwtVerify(token, keys, {
      currentDate: new Date(options.now),
      issuer: iss,
      algorithms: ALLOWED_ALGORITHMS,
      clockTolerance: CLOCK_SKEW_SECONDS,
      requiredClaims: ["exp"],
    }));
  } catch (error) {
    const { check, why } = refusalOf(error, iss);
    return reject(check, why);
  }
  if (typeof claims.iat === "number" && claims.iat > options.now / 1000 + CLOCK_SKEW_SECONDS) {
    return reject("not_yet_valid", "the token was issued in the future (iat)");
  }
  // The subject names the issued token everywhere (listings, the CLI, the audit log).
  if (typeof claims.sub === "string" && /\p{Cc}/u.test(claims.sub)) {
    return reject("malformed_token", "the token's sub contains control characters");
  }
  return matchTrust({ ...claims, iss }, candidates);
}

function matchTrust(
  claims: JWTPayload & { iss: string },
  candidates: readonly TrustRow[],
): Verified<{ trust: TrustRow; claims: JWTPayload & { iss: string } }> {
  let unmet: { check: RefusalReason; message: string } | null = null;
  for (const trust of candidates) {
    if (!audienceMatches(claims.aud, trust.audience)) {
      unmet ??= {
        check: "audience_mismatch",
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
      check: "claim_mismatch",
      message: `claim ${condition.claim} ${actual}; trust ${trust.id} requires ${JSON.stringify(condition.pattern)}`,
    };
  }
  return unmet === null
    ? reject("claim_mismatch", "no trust matches the token")
    : reject(unmet.check, unmet.message);
}
