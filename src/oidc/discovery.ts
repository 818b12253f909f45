/**
 * OpenID Provider discovery and key sets, shared by every verifier of outside tokens (the pool
 * OIDC exchange, SSO sign-in, Cloudflare Access): the discovery document and the key set are
 * fetched without following redirects, read with a byte cap (64 KiB for the document, 128 KiB and
 * 32 keys for the key set), cached per isolate with a bounded lifetime, the key set refetched on
 * an unknown `kid` at most every 30 s (jose's cooldown).
 */
import { createRemoteJWKSet, customFetch } from "jose";
import { issuerProblem } from "./trust-model.ts";

const DISCOVERY_TTL_MS = 60 * 60_000;
const JWKS_MAX_AGE_MS = 10 * 60_000;
const JWKS_COOLDOWN_MS = 30_000;
export const FETCH_TIMEOUT_MS = 5_000;
const MAX_CACHED = 64;
/** Real discovery documents are a few KiB. */
export const MAX_DISCOVERY_BYTES = 64 * 1024;
/** Real key sets are a few KiB (a dozen keys with certificate chains stay well below). */
export const MAX_JWKS_BYTES = 128 * 1024;
export const MAX_JWKS_KEYS = 32;

/**
 * The JSON body of `res`, read while counting: past `maxBytes` the read stops and this throws,
 * whatever the Content-Length said (or did not), so a huge answer costs at most `maxBytes`.
 */
export async function cappedJson(res: Response, maxBytes: number, what: string): Promise<unknown> {
  const reader = res.body?.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  while (reader) {
    const { done, value } = await reader.read();
    if (done) {
      break;
    }
    size += value.byteLength;
    if (size > maxBytes) {
      await reader.cancel();
      throw new Error(`its ${what} is over ${maxBytes / 1024} KiB`);
    }
    chunks.push(value);
  }
  const bytes = new Uint8Array(size);
  let at = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, at);
    at += chunk.byteLength;
  }
  return JSON.parse(new TextDecoder().decode(bytes));
}

/** jose's fetch of a key set, with the byte and key-count caps. */
async function cappedKeySetFetch(
  url: string,
  options: { headers: Headers; method: "GET"; redirect: "manual"; signal: AbortSignal },
): Promise<Response> {
  const res = await fetch(url, options);
  if (res.status !== 200) {
    return res;
  }
  const body = await cappedJson(res, MAX_JWKS_BYTES, "key set");
  const keys = (body as { keys?: unknown } | null)?.keys;
  if (Array.isArray(keys) && keys.length > MAX_JWKS_KEYS) {
    throw new Error(`its key set has over ${MAX_JWKS_KEYS} keys`);
  }
  return Response.json(body);
}

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
    [customFetch]: cappedKeySetFetch,
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
  const doc = (await cappedJson(res, MAX_DISCOVERY_BYTES, "discovery document").catch(
    (error: unknown) => {
      if (error instanceof SyntaxError) {
        return null;
      }
      throw error;
    },
  )) as Record<string, unknown> | null;
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
