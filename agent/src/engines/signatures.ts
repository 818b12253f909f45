/**
 * OpenPGP signatures of release checksums files: the keys an engine's checksums may be signed
 * by (the vendor's key built in, plus the operator's `--engine-keyring`), and the check of a
 * detached signature against them, with `openpgp` doing the cryptography. Every refusal is a
 * sentence that names the keys involved, by user id and fingerprint.
 */
import { readFile } from "node:fs/promises";
import { createMessage, type Key, readKeys, readSignature, type Signature, verify } from "openpgp";
import { UserError } from "../errors.ts";
import { EngineInstallError } from "./release.ts";
import type { VendorKey } from "./vendor-keys.ts";

/** A public key a checksums file may be signed by, and how messages name it. */
export type TrustedKey = {
  readonly key: Key;
  /** `User Id <mail> (C874 011F …)`: the primary user id and the fingerprint. */
  readonly label: string;
};

/** A keyring is a few keys; anything far larger is not one. */
const MAX_KEYRING_BYTES = 1024 * 1024;

/** `C874011F…` as gpg prints it: groups of four, two halves. */
export function formatFingerprint(hex: string): string {
  const groups = hex.toUpperCase().match(/.{1,4}/g) ?? [];
  return `${groups.slice(0, 5).join(" ")}  ${groups.slice(5).join(" ")}`.trim();
}

function labelOf(key: Key): string {
  const userId = key.getUserIDs()[0] ?? "(no user id)";
  return `${userId} (${formatFingerprint(key.getFingerprint())})`;
}

function trusted(key: Key): TrustedKey {
  return { key, label: labelOf(key) };
}

const vendorCache = new Map<string, Promise<TrustedKey>>();

/**
 * The vendor's built-in key, parsed once. Throws (a bug, not a user error) when the armored
 * block does not hold exactly the key its fingerprint names.
 */
export function vendorKey(vendor: VendorKey): Promise<TrustedKey> {
  let parsed = vendorCache.get(vendor.fingerprint);
  if (parsed === undefined) {
    parsed = readKeys({ armoredKeys: vendor.armored.trim() }).then((keys) => {
      const fingerprints = keys.map((k) => k.getFingerprint().toUpperCase());
      if (fingerprints.length !== 1 || fingerprints[0] !== vendor.fingerprint) {
        throw new Error(
          `the built-in ${vendor.vendor} key is not ${vendor.fingerprint} (it holds ${fingerprints.join(", ")})`,
        );
      }
      return trusted(keys[0] as Key);
    });
    vendorCache.set(vendor.fingerprint, parsed);
  }
  return parsed;
}

/**
 * The public keys in `file` (`--engine-keyring`): armored blocks (one or several) or a binary
 * keyring as `gpg --export` writes it. Refused with a {@link UserError} naming `source` when
 * the file cannot be read, holds no key, or holds a private key.
 */
export async function readEngineKeyring(file: string, source: string): Promise<TrustedKey[]> {
  let bytes: Buffer;
  try {
    bytes = await readFile(file);
  } catch (error) {
    throw new UserError(`${source}: cannot read ${file}: ${(error as Error).message}`);
  }
  if (bytes.length > MAX_KEYRING_BYTES) {
    throw new UserError(`${source}: ${file} is larger than ${MAX_KEYRING_BYTES} bytes`);
  }
  const text = bytes.toString("utf8");
  let keys: Key[];
  try {
    keys = text.includes("-----BEGIN PGP")
      ? (
          await Promise.all(armoredBlocks(text).map((block) => readKeys({ armoredKeys: block })))
        ).flat()
      : await readKeys({ binaryKeys: bytes });
  } catch (error) {
    throw new UserError(
      `${source}: ${file} is not an OpenPGP public keyring: ${(error as Error).message}`,
    );
  }
  if (keys.length === 0) {
    throw new UserError(`${source}: ${file} holds no OpenPGP key`);
  }
  const secret = keys.find((k) => k.isPrivate());
  if (secret !== undefined) {
    throw new UserError(
      `${source}: ${file} holds the private key ${labelOf(secret)}; give public keys only (gpg --armor --export)`,
    );
  }
  return keys.map(trusted);
}

function armoredBlocks(text: string): string[] {
  return [...text.matchAll(/-----BEGIN PGP [^-]+-----[\s\S]*?-----END PGP [^-]+-----/g)].map(
    (m) => m[0],
  );
}

/** The keys a sentence lists as the ones that may sign. */
export function describeKeys(keys: readonly TrustedKey[]): string {
  return keys.map((k) => k.label).join("; ");
}

/**
 * Checks the detached OpenPGP `signature` (binary or armored) of `data`, the file `what`,
 * against `keys`. Resolves with the key that made a valid signature. Throws an
 * {@link EngineInstallError} that names the keys when the signature does not parse, when a
 * trusted key made it but it does not match `data` (or the key had expired when it signed),
 * or when only keys outside `keys` made it.
 */
export async function verifyDetached(input: {
  data: Buffer;
  signature: Buffer;
  keys: readonly TrustedKey[];
  what: string;
  signatureName: string;
}): Promise<TrustedKey> {
  const { data, keys, what } = input;
  const signature = await parseSignature(input.signature, input.signatureName);
  const result = await verify({
    message: await createMessage({ binary: new Uint8Array(data) }),
    signature,
    verificationKeys: keys.map((k) => k.key),
    // A vendor that extends its key's expiry issues new self-signatures, dated after every
    // release signed before: checked at signing time, the key would have no self-signature yet
    // ("Signature creation time is in the future"). Then the key must be valid now instead,
    // which is what gpg does; a revoked or expired key still fails.
    config: { allowInsecureVerificationWithReformattedKeys: true },
  });
  const problems: string[] = [];
  for (const entry of result.signatures) {
    const signer = keys.find((k) => k.key.getKeys(entry.keyID).length > 0);
    try {
      await entry.verified;
      if (signer !== undefined) {
        return signer;
      }
    } catch (error) {
      if (signer !== undefined) {
        problems.push(
          `its signature by ${signer.label} does not verify (${(error as Error).message}): the file was changed after it was signed, or the signature is not of this file`,
        );
      }
    }
  }
  if (problems.length > 0) {
    throw new EngineInstallError(`${what}: ${problems.join("; ")}; refusing to install`);
  }
  throw new EngineInstallError(
    `${what} is signed by ${issuersOf(signature)}, which is not a key trusted here (trusted: ${describeKeys(keys)}); a mirror that re-signs releases needs its public key in --engine-keyring; refusing to install`,
  );
}

async function parseSignature(bytes: Buffer, name: string): Promise<Signature> {
  const text = bytes.toString("utf8");
  try {
    const signature = text.includes("-----BEGIN PGP SIGNATURE-----")
      ? await readSignature({ armoredSignature: text })
      : await readSignature({ binarySignature: new Uint8Array(bytes) });
    if (signature.getSigningKeyIDs().length === 0) {
      throw new Error("it holds no signature");
    }
    return signature;
  } catch (error) {
    throw new EngineInstallError(
      `${name} is not an OpenPGP signature (${(error as Error).message}); refusing to install`,
    );
  }
}

/** The signing keys a signature names: the issuer fingerprint when it carries one, else the id. */
function issuersOf(signature: Signature): string {
  const names = signature.packets.map((packet) => {
    const fingerprint = packet.issuerFingerprint;
    return fingerprint instanceof Uint8Array && fingerprint.length > 0
      ? `the key ${formatFingerprint(Buffer.from(fingerprint).toString("hex"))}`
      : `the key id ${packet.issuerKeyID.toHex().toUpperCase()}`;
  });
  return [...new Set(names)].join(" and ");
}
