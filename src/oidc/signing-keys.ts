/**
 * The workload identity signing keyring, parsed from the Worker secret `OIDC_SIGNING_KEYS`.
 *
 * Format, like `ENCRYPTION_KEY`: `keyId:base64(PKCS#8 DER RSA private key)[,keyId:…]`. The first
 * key signs; every key is published in the JWKS, so a key is rotated by publishing the next one
 * (appended), then moving it first, then removing the old one once no token it signed can still
 * be valid (docs/workload-identity.md). RSA keys of at least 2048 bits only: every cloud takes
 * RS256, and Entra ID takes nothing else.
 */
import { fail, ok, type Result } from "@outpost/common";

const KEY_ID_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;
const MIN_MODULUS_BITS = 2048;
export const SIGNING_ALGORITHM = "RS256";

/** A public key as the JWKS publishes it. */
export type PublicJwk = {
  kty: "RSA";
  kid: string;
  alg: typeof SIGNING_ALGORITHM;
  use: "sig";
  n: string;
  e: string;
};

export type SigningKeyring = {
  /** The key that signs, and its id (the `kid` header). */
  signing: { kid: string; key: CryptoKey };
  /** Every key of the ring, the signing one first. */
  published: PublicJwk[];
};

export type SigningKeyringError =
  | "missing"
  | "malformed"
  | "duplicate_key_id"
  | "not_rsa"
  | "too_short";

/** What each keyring problem means, for a 503 a deployer can act on. */
export const KEYRING_PROBLEMS: Record<SigningKeyringError, string> = {
  missing: "the OIDC_SIGNING_KEYS secret is not set",
  malformed: "OIDC_SIGNING_KEYS must be keyId:base64(PKCS#8 DER) entries separated by commas",
  duplicate_key_id: "OIDC_SIGNING_KEYS names a key id twice",
  not_rsa: "OIDC_SIGNING_KEYS holds a key that is not an RSA private key",
  too_short: `OIDC_SIGNING_KEYS holds an RSA key shorter than ${MIN_MODULUS_BITS} bits`,
};

// Importing keys costs CPU; the secret does not change within an isolate.
const cache = new Map<string, Promise<Result<SigningKeyring, SigningKeyringError>>>();

function fromBase64(text: string): Uint8Array | null {
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(text) || text.length % 4 !== 0) {
    return null;
  }
  return Uint8Array.from(atob(text), (ch) => ch.charCodeAt(0));
}

async function importEntry(
  kid: string,
  der: Uint8Array,
): Promise<Result<{ key: CryptoKey; jwk: PublicJwk }, SigningKeyringError>> {
  let key: CryptoKey;
  try {
    // Extractable so the public half (n, e) can be read for the JWKS; it never leaves memory.
    key = await crypto.subtle.importKey(
      "pkcs8",
      der,
      { name: "RSASSA-PKCS1-v1_5", hash: "SHA-256" },
      true,
      ["sign"],
    );
  } catch {
    return fail("not_rsa");
  }
  const { modulusLength } = key.algorithm as { modulusLength?: number };
  if ((modulusLength ?? 0) < MIN_MODULUS_BITS) {
    return fail("too_short");
  }
  const exported = (await crypto.subtle.exportKey("jwk", key)) as JsonWebKey;
  if (!exported.n || !exported.e) {
    return fail("not_rsa");
  }
  return ok({
    key,
    jwk: { kty: "RSA", kid, alg: SIGNING_ALGORITHM, use: "sig", n: exported.n, e: exported.e },
  });
}

async function buildKeyring(
  secret: string | undefined,
): Promise<Result<SigningKeyring, SigningKeyringError>> {
  if (!secret?.trim()) {
    return fail("missing");
  }
  const published: PublicJwk[] = [];
  let signing: SigningKeyring["signing"] | undefined;
  for (const part of secret.split(",")) {
    const [kid, material, ...rest] = part.trim().split(":");
    if (!kid || !material || rest.length > 0 || !KEY_ID_PATTERN.test(kid)) {
      return fail("malformed");
    }
    if (published.some((jwk) => jwk.kid === kid)) {
      return fail("duplicate_key_id");
    }
    const der = fromBase64(material);
    if (!der) {
      return fail("malformed");
    }
    const entry = await importEntry(kid, der);
    if (!entry.ok) {
      return entry;
    }
    published.push(entry.value.jwk);
    signing ??= { kid, key: entry.value.key };
  }
  return signing ? ok({ signing, published }) : fail("missing");
}

/** The keyring of this secret value (memoized per isolate), or why it cannot be used. */
export function signingKeyring(
  secret: string | undefined,
): Promise<Result<SigningKeyring, SigningKeyringError>> {
  const cacheKey = secret ?? "";
  let keyring = cache.get(cacheKey);
  if (!keyring) {
    keyring = buildKeyring(secret);
    cache.set(cacheKey, keyring);
  }
  return keyring;
}
