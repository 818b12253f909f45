/**
 * The coordinator as an OpenID Connect issuer for runs' workload identity: its issuer URL (the
 * deployment's `PUBLIC_URL`), the discovery document and JWKS clouds fetch, and signing. The
 * discovery document has exactly what a Kubernetes service-account issuer publishes, which AWS
 * IAM, GCP workload identity federation and Entra ID accept.
 */

import { fail, ok, type Result } from "@outpost/common";
import { SignJWT } from "jose";
import { type Outcome, refuse } from "../lib/reason.ts";
import {
  KEYRING_PROBLEMS,
  type PublicJwk,
  SIGNING_ALGORITHM,
  signingKeyring,
} from "./signing-keys.ts";

const JWKS_PATH = "/.well-known/jwks";

/**
 * The issuer URL: `PUBLIC_URL` without a trailing slash, or null when it is unset or not an
 * http(s) origin (workload identity is then off; the discovery routes say why).
 */
export function issuerUrl(env: Pick<Env, "PUBLIC_URL">): string | null {
  const text = env.PUBLIC_URL?.trim().replace(/\/+$/, "") ?? "";
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

/** Workload identity is off on this deployment: what the deployer must set. */
function notConfigured(problem: string) {
  return refuse("unavailable", `workload identity is not configured: ${problem}`);
}

/**
 * The OpenID Provider metadata clouds read before they trust a token, or `unavailable` naming
 * what the deployer must set when this deployment cannot issue tokens.
 */
export async function discoveryDocument(env: Env): Promise<Outcome<Discovery, "unavailable">> {
  const issuer = issuerUrl(env);
  if (issuer === null) {
    return notConfigured("PUBLIC_URL is not set to the deployment's https origin in wrangler.toml");
  }
  const keyring = await signingKeyring(env.OIDC_SIGNING_KEYS);
  return keyring.ok ? ok(discoveryOf(issuer)) : notConfigured(KEYRING_PROBLEMS[keyring.reason]);
}

type Discovery = ReturnType<typeof discoveryOf>;

function discoveryOf(issuer: string) {
  return {
    issuer,
    jwks_uri: `${issuer}${JWKS_PATH}`,
    response_types_supported: ["id_token"],
    subject_types_supported: ["public"],
    id_token_signing_alg_values_supported: [SIGNING_ALGORITHM],
    claims_supported: [...STANDARD_CLAIMS, ...OUTPOST_CLAIMS],
  };
}

const STANDARD_CLAIMS = ["iss", "sub", "aud", "exp", "iat", "nbf", "jti"] as const;
/** The claims every workload identity token carries besides the standard ones. */
export const OUTPOST_CLAIMS = [
  "outpost_organization_id",
  "outpost_organization_name",
  "outpost_workspace_id",
  "outpost_workspace_name",
  "outpost_run_id",
  "outpost_run_phase",
  "outpost_run_operation",
  "outpost_job_id",
  "outpost_pool_id",
  "outpost_engine",
  "outpost_engine_version",
  "outpost_speculative",
  "outpost_fork",
] as const;

/** Every published public key, or `unavailable` saying why there are none. */
export async function publishedKeys(env: Env): Promise<Outcome<PublicJwk[], "unavailable">> {
  const keyring = await signingKeyring(env.OIDC_SIGNING_KEYS);
  return keyring.ok ? ok(keyring.value.published) : notConfigured(KEYRING_PROBLEMS[keyring.reason]);
}

/**
 * Signs `claims` with the first key of the ring: RS256 with its `kid`, `iss` the issuer URL,
 * `iat` and `nbf` at `nowMs`, a fresh `jti`, `exp` as given. Fails when the deployment cannot
 * issue.
 */
export async function signToken(
  env: Env,
  claims: Record<string, unknown> & { sub: string; aud: string },
  expiresAtMs: number,
  nowMs: number,
): Promise<Result<string, string>> {
  const issuer = issuerUrl(env);
  if (issuer === null) {
    return fail("PUBLIC_URL is not set to the deployment's https origin in wrangler.toml");
  }
  const keyring = await signingKeyring(env.OIDC_SIGNING_KEYS);
  if (!keyring.ok) {
    return fail(KEYRING_PROBLEMS[keyring.reason]);
  }
  const { kid, key } = keyring.value.signing;
  const now = Math.floor(nowMs / 1000);
  const token = await new SignJWT(claims)
    .setProtectedHeader({ alg: SIGNING_ALGORITHM, kid, typ: "JWT" })
    .setIssuer(issuer)
    .setIssuedAt(now)
    .setNotBefore(now)
    .setExpirationTime(Math.floor(expiresAtMs / 1000))
    .setJti(crypto.randomUUID())
    .sign(key);
  return ok(token);
}
