/**
 * Encryption at rest for secrets kept in D1 (sensitive variables, webhook secrets): AES-256-GCM
 * through WebCrypto under a keyring parsed from the Worker secret `ENCRYPTION_KEY`.
 *
 * Keyring format: `keyId:base64(32 bytes)[,keyId:base64(32 bytes)…]`. The first key encrypts;
 * every key decrypts, so a key is rotated by putting a new one first and keeping the old one
 * listed until nothing sealed with it remains (see {@link sealedKeyId}).
 *
 * Sealed format: `v1:<keyId>:<base64 iv (12 bytes)>:<base64 ciphertext+tag>`. The key id travels
 * with the ciphertext, and callers pass an associated-data string naming the row the secret
 * belongs to, so a ciphertext copied onto another row does not decrypt.
 */
import { fail, ok, type Result } from "@outpost/common";

const KEY_ID_PATTERN = /^[A-Za-z0-9_-]{1,32}$/;
const KEY_BYTES = 32;
const IV_BYTES = 12;
const VERSION = "v1";

export type Keyring = {
  /** The id of the key that encrypts. */
  primaryId: string;
  keys: ReadonlyMap<string, CryptoKey>;
};

export type KeyringError = "missing" | "malformed" | "duplicate_key_id" | "wrong_key_length";

const encoder = new TextEncoder();
const decoder = new TextDecoder();
// Importing keys costs a little CPU; the secret does not change within an isolate.
const cache = new Map<string, Promise<Result<Keyring, KeyringError>>>();

function fromBase64(text: string): Uint8Array | null {
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(text) || text.length % 4 !== 0) {
    return null;
  }
  try {
    return Uint8Array.from(atob(text), (ch) => ch.charCodeAt(0));
  } catch {
    return null;
  }
}

function toBase64(bytes: Uint8Array): string {
  let binary = "";
  for (const b of bytes) {
    binary += String.fromCharCode(b);
  }
  return btoa(binary);
}

async function buildKeyring(secret: string | undefined): Promise<Result<Keyring, KeyringError>> {
  if (!secret?.trim()) {
    return fail("missing");
  }
  const keys = new Map<string, CryptoKey>();
  let primaryId: string | undefined;
  for (const part of secret.split(",")) {
    const [id, material, ...rest] = part.trim().split(":");
    if (!id || material === undefined || rest.length > 0 || !KEY_ID_PATTERN.test(id)) {
      return fail("malformed");
    }
    const raw = fromBase64(material);
    if (!raw) {
      return fail("malformed");
    }
    if (raw.byteLength !== KEY_BYTES) {
      return fail("wrong_key_length");
    }
    if (keys.has(id)) {
      return fail("duplicate_key_id");
    }
    keys.set(
      id,
      await crypto.subtle.importKey("raw", raw, "AES-GCM", false, ["encrypt", "decrypt"]),
    );
    primaryId ??= id;
  }
  if (!primaryId) {
    return fail("missing");
  }
  return ok({ primaryId, keys });
}

/**
 * Parses and imports the keyring in `secret` (the `ENCRYPTION_KEY` format above). Fails with a
 * reason, never throws, so a misconfigured deployment answers a clear error instead of a 500.
 */
export function loadKeyring(secret: string | undefined): Promise<Result<Keyring, KeyringError>> {
  const cacheKey = secret ?? "";
  let entry = cache.get(cacheKey);
  if (!entry) {
    entry = buildKeyring(secret);
    cache.set(cacheKey, entry);
  }
  return entry;
}

/**
 * Encrypts `plaintext` under the primary key with a fresh random IV, bound to `associatedData`.
 * The result is safe to store; it never contains the plaintext.
 */
export async function seal(keyring: Keyring, plaintext: string, associatedData: string) {
  const key = keyring.keys.get(keyring.primaryId);
  if (!key) {
    throw new Error("keyring has no primary key");
  }
  const iv = crypto.getRandomValues(new Uint8Array(IV_BYTES));
  const ciphertext = await crypto.subtle.encrypt(
    { name: "AES-GCM", iv, additionalData: encoder.encode(associatedData) },
    key,
    encoder.encode(plaintext),
  );
  return {
    keyId: keyring.primaryId,
    sealed: `${VERSION}:${keyring.primaryId}:${toBase64(iv)}:${toBase64(new Uint8Array(ciphertext))}`,
  };
}

/** The id of the key a sealed value was encrypted with, or null when it is not sealed data. */
export function sealedKeyId(sealed: string): string | null {
  const [version, keyId] = sealed.split(":");
  return version === VERSION && keyId && KEY_ID_PATTERN.test(keyId) ? keyId : null;
}

export type OpenError = "malformed" | "unknown_key" | "tampered";

/**
 * Decrypts a value made by {@link seal} with the key named inside it. Fails (never throws) when
 * the value is malformed, its key is no longer in the keyring, or the ciphertext or associated
 * data do not match (GCM authentication).
 */
export async function open(
  keyring: Keyring,
  sealed: string,
  associatedData: string,
): Promise<Result<string, OpenError>> {
  const [version, keyId, ivText, dataText, ...rest] = sealed.split(":");
  if (version !== VERSION || !keyId || ivText === undefined || dataText === undefined) {
    return fail("malformed");
  }
  const iv = fromBase64(ivText);
  const data = fromBase64(dataText);
  if (rest.length > 0 || !iv || iv.byteLength !== IV_BYTES || !data) {
    return fail("malformed");
  }
  const key = keyring.keys.get(keyId);
  if (!key) {
    return fail("unknown_key");
  }
  try {
    const plaintext = await crypto.subtle.decrypt(
      { name: "AES-GCM", iv, additionalData: encoder.encode(associatedData) },
      key,
      data,
    );
    return ok(decoder.decode(plaintext));
  } catch {
    return fail("tampered");
  }
}
