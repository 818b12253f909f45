/**
 * Ed25519 signatures of agent release manifests (Node's built-in `node:crypto`): the build signs
 * the manifest with the release key of whoever builds it (`agent/scripts/release-key.ts`), the
 * coordinator only serves manifest and signature, and the agent verifies them against the keys
 * it trusts before it believes a word of the manifest. Keys are written `ed25519:<base64>`.
 */
import { createPublicKey, type KeyObject, sign, verify } from "node:crypto";
import {
  RELEASE_SIGNATURE_CONTEXT,
  ReleaseKey,
  ReleaseManifest,
  type ReleaseSignature,
} from "@outpost/protocol";

const PREFIX = "ed25519:";

/** The `ed25519:<base64>` text of a public key, or of a private key's public half. */
export function releaseKeyText(key: KeyObject): string {
  const publicKey = key.type === "private" ? createPublicKey(key) : key;
  if (publicKey.asymmetricKeyType !== "ed25519") {
    throw new Error(`a release key must be Ed25519, not ${publicKey.asymmetricKeyType}`);
  }
  const { x } = publicKey.export({ format: "jwk" });
  return `${PREFIX}${Buffer.from(String(x), "base64url").toString("base64")}`;
}

/** The public key written as `text`; throws when it is not `ed25519:` and 32 bytes of base64. */
export function releasePublicKey(text: string): KeyObject {
  const parsed = ReleaseKey.safeParse(text);
  if (!parsed.success) {
    throw new Error(`${text} ${parsed.error.issues[0]?.message ?? "is not a release key"}`);
  }
  const x = Buffer.from(parsed.data.slice(PREFIX.length), "base64").toString("base64url");
  return createPublicKey({ key: { kty: "OKP", crv: "Ed25519", x }, format: "jwk" });
}

function signedBytes(manifestText: string): Buffer {
  return Buffer.concat([Buffer.from(RELEASE_SIGNATURE_CONTEXT), Buffer.from(manifestText)]);
}

/** Signs the manifest file's exact text with `privateKey` (Ed25519). */
export function signManifest(manifestText: string, privateKey: KeyObject): ReleaseSignature {
  return {
    algorithm: "ed25519",
    key: releaseKeyText(privateKey),
    signature: sign(null, signedBytes(manifestText), privateKey).toString("base64"),
  };
}

/** Why a release is not believed; each comes with a sentence from {@link verifyRelease}. */
export type ReleaseRefusal =
  | "no_trusted_key"
  | "unsigned"
  | "other_key"
  | "bad_signature"
  | "unreadable";

export type ReleaseVerdict =
  | { ok: true; manifest: ReleaseManifest }
  | { ok: false; reason: ReleaseRefusal; message: string };

/**
 * The manifest of `release` when its signature was made by one of `trusted` and verifies;
 * otherwise a refusal saying which check failed (no key to check with, no signature, a key this
 * agent does not trust, a signature that does not match, a manifest that is not one).
 */
export function verifyRelease(
  release: { manifest: string; signature: ReleaseSignature | null },
  trusted: readonly string[],
): ReleaseVerdict {
  const trusts = trusted.join(", ");
  if (trusted.length === 0) {
    return refuse(
      "no_trusted_key",
      "this agent trusts no release key (it was built without one and has no --release-key), so it cannot verify any release",
    );
  }
  const { signature } = release;
  if (signature === null) {
    return refuse("unsigned", `the release is not signed; this agent trusts ${trusts}`);
  }
  if (!trusted.includes(signature.key)) {
    return refuse(
      "other_key",
      `the release is signed by a different key, ${signature.key}; this agent trusts ${trusts}`,
    );
  }
  const isValid = verify(
    null,
    signedBytes(release.manifest),
    releasePublicKey(signature.key),
    Buffer.from(signature.signature, "base64"),
  );
  if (!isValid) {
    return refuse(
      "bad_signature",
      `the release's signature by ${signature.key} does not verify: the manifest was changed after it was signed`,
    );
  }
  let document: unknown = null;
  try {
    document = JSON.parse(release.manifest);
  } catch {
    // Refused below like any other shape.
  }
  const manifest = ReleaseManifest.safeParse(document);
  if (!manifest.success) {
    return refuse("unreadable", "the signed manifest is not a release manifest this agent reads");
  }
  return { ok: true, manifest: manifest.data };
}

function refuse(reason: ReleaseRefusal, message: string): ReleaseVerdict {
  return { ok: false, reason, message };
}
