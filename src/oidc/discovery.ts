/**
 * OpenID Provider discovery and key sets, shared by every verifier of outside tokens (the pool
 * OIDC exchange, SSO sign-in, Cloudflare Access): the discovery document and the key set are
 * fetched without following redirects, cached per isolate with a bounded lifetime, the key set
 * refetched on an unknown `kid` at most every 30 s (jose's cooldown).
 */
import { createRemoteJWKSet } from "jose";
import { issuerProblem } from "./trust-model.ts";

const DISCOVERY_TTL_MS = 60 * 60_000;
const JWKS_MAX_AGE_MS = 10 * 60_000;
const JWKS_COOLDOWN_MS = 30_000;
export const FETCH_TIMEOUT_MS = 5_000;
const MAX_CACHED = 64;

export type KeySet = ReturnType<typeof createRemoteJWKSet>;

/** What Outpost reads of a discovery document; the endpoints are checked by who needs them. */
export type DiscoveryDocument = {
  issuer: string;
  jwksUri: string;
  authorizationEndpoint: string | null;
  tokenEndpoint: string | null;
};

export type Discovered = { document: DiscoveryDocument; keys: KeySet };

const discovered = new Map<string, { value: Discovered; at: number }>();
const keySets = new Map<string, KeySet>();

function remember<V>(cache: Map<string, V>, key: string, value: V): void {
  if (cache.size >= MAX_CACHED) {
    const oldest = cache.keys().next().value;
    if (oldest !== undefined) {
      cache.delete(oldest);
    }
  }
  cache.delete(key);
  cache.set(key, value);
}

/** The key set published at `url`, one per URL per isolate. */
export function keySetAt(url: string): KeySet {
  const cached = keySets.get(url);
  if (cached) {
    return cached;
  }
  const keys = createRemoteJWKSet(new URL(url), {
    timeoutDuration: FETCH_TIMEOUT_MS,
    cooldownDuration: JWKS_COOLDOWN_MS,
    cacheMaxAge: JWKS_MAX_AGE_MS,
  });
  remember(keySets, url, keys);
  return keys;
}

function endpoint(value: unknown, allowLoopbackHttp: boolean): string | null {
  return typeof value === "string" && issuerProblem(value, allowLoopbackHttp) === null
    ? value
    : null;
}

/**
 * The issuer's discovery document and key set, fetched again when not cached or older than an
 * hour at `now`. Throws an Error saying what is wrong with the document (callers turn it into a
 * refusal).
 */
export async function discover(
  issuer: string,
  allowLoopbackHttp: boolean,
  now: number,
): Promise<Discovered> {
  const cached = discovered.get(issuer);
  if (cached && now - cached.at < DISCOVERY_TTL_MS) {
    return cached.value;
  }
  const url = `${issuer.replace(/\/+$/, "")}/.well-known/openid-configuration`;
  const res = await fetch(url, {
    redirect: "manual",
    headers: { accept: "application/json" },
    signal: AbortSignal.timeout(FETCH_TIMEOUT_MS),
  });
  if (res.status !== 200) {
    await res.body?.cancel();
    throw new Error(`its discovery document answered ${res.status}`);
  }
  const doc = (await res.json().catch(() => null)) as Record<string, unknown> | null;
  if (doc?.issuer !== issuer) {
    throw new Error("its discovery document names another issuer");
  }
  const jwksUri = endpoint(doc.jwks_uri, allowLoopbackHttp);
  if (jwksUri === null) {
    throw new Error("its discovery document has no usable https jwks_uri");
  }
  const value: Discovered = {
    document: {
      issuer,
      jwksUri,
      authorizationEndpoint: endpoint(doc.authorization_endpoint, allowLoopbackHttp),
      tokenEndpoint: endpoint(doc.token_endpoint, allowLoopbackHttp),
    },
    keys: keySetAt(jwksUri),
  };
  remember(discovered, issuer, { value, at: now });
  return value;
}
