/**
 * OpenPGP keys made in the test that uses them, to sign a loopback mirror's checksums files as
 * HashiCorp and OpenTofu sign theirs (a detached binary signature), and the keyring file an
 * agent is given with `--engine-keyring`.
 */
import { writeFileSync } from "node:fs";
import path from "node:path";
import { createMessage, generateKey, type PrivateKey, readPrivateKey, sign } from "openpgp";
import type { TrustedKey } from "../../../agent/src/engines/signatures.ts";

export type TestSigner = {
  privateKey: PrivateKey;
  armoredPublicKey: string;
  /** 40 hex digits, upper case. */
  fingerprint: string;
  /** As the agent's messages name it: `Name <mail> (ABCD …)`. */
  label: string;
};

function groups(hex: string): string {
  const parts = hex.match(/.{1,4}/g) ?? [];
  return `${parts.slice(0, 5).join(" ")}  ${parts.slice(5).join(" ")}`;
}

/**
 * A fresh Ed25519 signing key with one user id (fast enough to make per test file), created
 * `createdAt` (now by default).
 */
export async function testSigner(
  name = "Outpost Test Mirror",
  createdAt = new Date(),
): Promise<TestSigner> {
  const email = `${name.toLowerCase().replace(/\W+/g, "-")}@example.test`;
  const { privateKey, publicKey } = await generateKey({
    type: "ecc",
    curve: "ed25519Legacy",
    userIDs: [{ name, email }],
    date: createdAt,
    format: "armored",
  });
  const key = await readPrivateKey({ armoredKey: privateKey });
  const fingerprint = key.getFingerprint().toUpperCase();
  return {
    privateKey: key,
    armoredPublicKey: publicKey,
    fingerprint,
    label: `${name} <${email}> (${groups(fingerprint)})`,
  };
}

/** A detached binary signature of `data` by `signer`, as `gpg --detach-sign` makes one. */
export async function detachedSignature(signer: TestSigner, data: Uint8Array): Promise<Buffer> {
  const signature = await sign({
    message: await createMessage({ binary: data }),
    signingKeys: signer.privateKey,
    detached: true,
    format: "binary",
  });
  return Buffer.from(signature);
}

/** Writes the signers' public keys as one armored keyring file in `dir`; returns its path. */
export function writeKeyring(dir: string, ...signers: TestSigner[]): string {
  const file = path.join(dir, "engine-keyring.asc");
  writeFileSync(file, signers.map((s) => s.armoredPublicKey).join("\n"));
  return file;
}

/** The signer's public key as the agent trusts a keyring key (`settings.engineKeyring`). */
export function trustedKeyOf(signer: TestSigner): TrustedKey {
  return { key: signer.privateKey.toPublic(), label: signer.label };
}
