/**
 * The one place a release's checksums file becomes trusted: fetched, its detached OpenPGP
 * signature checked against the keys the engine's checksums may be signed by, and only then
 * parsed, so nothing reads a checksum the signature does not cover.
 */
import path from "node:path";
import { fetchList } from "./fetch.ts";
import type { ReleaseLocation } from "./release.ts";
import { EngineInstallError, type EngineRelease, parseSha256Sums } from "./release.ts";
import { describeKeys, type TrustedKey, vendorKey, verifyDetached } from "./signatures.ts";

/** A detached signature is a few hundred bytes; a few keys' worth at most. */
const MAX_SIGNATURE_BYTES = 64 * 1024;

/**
 * The keys `release`'s checksums may be signed by: the vendor's built-in key, and every key of
 * the operator's `--engine-keyring` (a mirror that re-signs releases). Empty only for an engine
 * whose vendor signs with no OpenPGP key (Pulumi) on an agent without a keyring.
 */
export async function signingKeys(
  release: EngineRelease,
  engineKeyring: readonly TrustedKey[],
): Promise<TrustedKey[]> {
  const vendor = release.signingKey === null ? [] : [await vendorKey(release.signingKey)];
  return [...vendor, ...engineKeyring];
}

/**
 * The release's checksums, file name → hex SHA-256, once their signature checks out. Throws
 * an {@link EngineInstallError} naming the trusted keys when the signature is missing, does not
 * parse, does not match, or was made by a key not trusted here. An engine with no key to check
 * against (Pulumi without a keyring) is trusted as fetched, and the log says so.
 */
export async function trustedChecksums(
  release: EngineRelease,
  where: ReleaseLocation,
  options: { engineKeyring: readonly TrustedKey[]; onProgress?: (line: string) => void },
): Promise<Map<string, string>> {
  const sumsName = path.posix.basename(new URL(where.sumsUrl).pathname);
  const sums = await fetchList({ url: where.sumsUrl });
  const keys = await signingKeys(release, options.engineKeyring);
  if (keys.length === 0) {
    options.onProgress?.(
      `${release.engine} publishes no OpenPGP signature of ${sumsName} (only cosign's): trusting it as fetched from ${where.sumsUrl}; give --engine-keyring for a mirror that signs it`,
    );
    return parseSha256Sums(sums.toString("utf8"));
  }
  const signatureName = path.posix.basename(new URL(where.signatureUrl).pathname);
  const signature = await fetchList({
    url: where.signatureUrl,
    maxBytes: MAX_SIGNATURE_BYTES,
  }).catch((error: unknown) => {
    if (error instanceof EngineInstallError) {
      throw new EngineInstallError(
        `${sumsName} has no signature (${error.message}); it must be signed by ${describeKeys(keys)}; refusing to install`,
      );
    }
    throw error;
  });
  const signer = await verifyDetached({
    data: sums,
    signature,
    keys,
    what: sumsName,
    signatureName,
  });
  options.onProgress?.(`${sumsName} is signed by ${signer.label}`);
  return parseSha256Sums(sums.toString("utf8"));
}
