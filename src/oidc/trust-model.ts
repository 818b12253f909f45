/**
 * OIDC trusts of a pool, pure: what an issuer URL may be, the claim conditions (exact values or
 * `*` globs) and how a token's claims are matched against them, and the public shape.
 */
import { z } from "@hono/zod-openapi";
import type { oidcTrusts } from "../db/schema.ts";

export type TrustRow = typeof oidcTrusts.$inferSelect;

/** Claims every exchange verifies itself; a trust cannot put conditions on them. */
const VERIFIED_CLAIMS = new Set(["iss", "aud", "exp", "nbf", "iat", "jti"]);
export const MAX_CLAIM_CONDITIONS = 20;
export const MAX_TRUSTS_PER_POOL = 50;
/** The most `*` a claim pattern may hold: real policies use one or two. */
export const MAX_PATTERN_STARS = 8;
/** A claim value longer than this never matches: no real subject is, and matching stays cheap. */
export const MAX_MATCHED_CLAIM_CHARS = 1024;

const LOOPBACK_HOSTS = new Set(["127.0.0.1", "[::1]", "localhost"]);

/** Suffixes of names that resolve only inside a network (and cloud metadata names). */
const PRIVATE_NAME_SUFFIXES = [
  ".local",
  ".localhost",
  ".internal",
  ".lan",
  ".home.arpa",
  ".intranet",
];

/**
 * Why `hostname` is not a public host name, or null when it is: no IP literal (the WHATWG parser
 * already turned `0x7f.1` and `2130706433` into dotted IPv4), no single-label name, no name that
 * resolves only inside a network or to a cloud's metadata service (`metadata.google.internal`).
 */
function hostProblem(hostname: string): string | null {
  const host = hostname.toLowerCase().replace(/\.$/, "");
  if (/^\d+\.\d+\.\d+\.\d+$/.test(host) || host.startsWith("[")) {
    return "must name a public host name, not an IP address";
  }
  if (!host.includes(".") || PRIVATE_NAME_SUFFIXES.some((suffix) => host.endsWith(suffix))) {
    return "must name a public host name, not a local, internal or metadata name";
  }
  return null;
}

/**
 * Why `text` cannot be a trusted issuer (or an endpoint its discovery document names), or null
 * when it can: an https URL to a public host name, without query, fragment or credentials.
 * Loopback hosts (over http or https) only when the deployment allows them (development and
 * tests). The coordinator fetches these URLs for anyone who presents a token, so they must not
 * reach its own network. The issuer is kept exactly as given: `iss` must match it byte for byte.
 */
export function issuerProblem(text: string, allowLoopbackHttp: boolean): string | null {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return "must be a URL like https://token.actions.githubusercontent.com";
  }
  if (url.search || url.hash || url.username || url.password || text.includes("#")) {
    return "must have no query, fragment or credentials";
  }
  if (LOOPBACK_HOSTS.has(url.hostname) && (url.protocol === "http:" || url.protocol === "https:")) {
    return allowLoopbackHttp
      ? null
      : "loopback issuers are allowed only on a deployment with OIDC_ALLOW_LOOPBACK_ISSUERS";
  }
  if (url.protocol !== "https:") {
    return "must be an https URL";
  }
  return hostProblem(url.hostname);
}

/**
 * True when `text` names this deployment's own workload identity issuer (`ownIssuer`, its
 * `PUBLIC_URL` origin): any URL on the same host, whatever its scheme, path or trailing slash.
 */
export function isOwnIssuer(text: string, ownIssuer: string | null): boolean {
  if (ownIssuer === null) {
    return false;
  }
  try {
    return new URL(text).host.toLowerCase() === new URL(ownIssuer).host.toLowerCase();
  } catch {
    return false;
  }
}

const ClaimName = z
  .string()
  .regex(/^[A-Za-z0-9_.:/-]{1,100}$/, "claim names are letters, digits and _ . : / -")
  .refine(
    (name) => !VERIFIED_CLAIMS.has(name),
    "iss, aud, exp, nbf, iat and jti are always verified; set issuer and audience instead",
  );

/** The claim conditions of a trust: at least one, and at least one that is not a bare `*`. */
export const ClaimConditions = z
  .record(ClaimName, z.string().min(1).max(500))
  .refine((claims) => Object.keys(claims).length > 0, "name at least one claim condition, e.g. sub")
  .refine(
    (claims) => Object.keys(claims).length <= MAX_CLAIM_CONDITIONS,
    `at most ${MAX_CLAIM_CONDITIONS} claim conditions`,
  )
  .refine(
    (claims) =>
      Object.values(claims).every((pattern) => pattern.split("*").length - 1 <= MAX_PATTERN_STARS),
    `a pattern holds at most ${MAX_PATTERN_STARS} *`,
  )
  .refine(
    (claims) => Object.values(claims).some((pattern) => !/^\*+$/.test(pattern)),
    "at least one condition must be more than *: a trust must not accept every token of its issuer",
  )
  .openapi({
    example: { sub: "system:serviceaccount:ci:*" },
    description:
      "Claim name → exact value, or a pattern where * matches any run of characters. Every condition must hold.",
  });

/** A trust's conditions as `name=pattern` lines (the dashboard shows and takes them so). */
export function claimLines(claims: Record<string, string>): string[] {
  return Object.entries(claims).map(([name, pattern]) => `${name}=${pattern}`);
}

/**
 * `name=pattern` lines (blank lines ignored; the first `=` splits, so a pattern may hold `=`) as
 * conditions, or the first line that is not one. `ClaimConditions` then checks names and values.
 */
export function parseClaimLines(
  text: string,
): { ok: true; value: Record<string, string> } | { ok: false; line: string } {
  const claims: Record<string, string> = {};
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim();
    if (line === "") {
      continue;
    }
    const at = line.indexOf("=");
    const name = line.slice(0, at).trim();
    if (at <= 0 || name in claims) {
      return { ok: false, line };
    }
    claims[name] = line.slice(at + 1).trim();
  }
  return { ok: true, value: claims };
}

/**
 * True when `value` matches `pattern`, where `*` matches any run of characters (also none). Linear
 * in the length of `value`: the first part must start it and the last end it, and each part in
 * between is found with `indexOf` after the previous one (the leftmost place is always the best,
 * so there is nothing to backtrack into).
 */
export function globMatch(pattern: string, value: string): boolean {
  const parts = pattern.split("*");
  const first = parts[0] ?? "";
  if (parts.length === 1) {
    return value === pattern;
  }
  const last = parts[parts.length - 1] ?? "";
  if (value.length < first.length + last.length || !value.startsWith(first)) {
    return false;
  }
  if (!value.endsWith(last)) {
    return false;
  }
  let at = first.length;
  const end = value.length - last.length;
  for (const part of parts.slice(1, -1)) {
    const found = value.indexOf(part, at);
    if (found === -1 || found + part.length > end) {
      return false;
    }
    at = found + part.length;
  }
  return true;
}

/** A claim as text for matching: strings as they are, numbers and booleans as JSON. */
function claimText(value: unknown): string | null {
  if (typeof value === "string") {
    return value;
  }
  return typeof value === "number" || typeof value === "boolean" ? JSON.stringify(value) : null;
}

/** The first condition of `claims` the payload does not meet, or null when it meets them all. */
export function unmetCondition(
  claims: Record<string, string>,
  payload: Record<string, unknown>,
): { claim: string; pattern: string; actual: string | null } | null {
  for (const [claim, pattern] of Object.entries(claims)) {
    const actual = claimText(payload[claim]);
    if (actual === null || actual.length > MAX_MATCHED_CLAIM_CHARS || !globMatch(pattern, actual)) {
      return { claim, pattern, actual };
    }
  }
  return null;
}

/** True when the token's `aud` (a string or a list) names `audience`. */
export function audienceMatches(aud: unknown, audience: string): boolean {
  return Array.isArray(aud) ? aud.includes(audience) : aud === audience;
}

/** The public shape of a trust. */
export function presentTrust(row: TrustRow) {
  return {
    id: row.id,
    poolId: row.poolId,
    issuer: row.issuer,
    audience: row.audience,
    claims: row.claims,
    description: row.description,
    createdAt: new Date(row.createdAt).toISOString(),
  };
}
