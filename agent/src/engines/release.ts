/**
 * What the one installer (`install.ts`) and the one version resolver (`resolve.ts`) know about
 * an engine's releases, as data each engine driver provides: where a release's archive and its
 * checksums file live, how the archive unpacks, where the index of versions is and its shape,
 * and how a binary on PATH says its version. Also the helpers every engine shares.
 */
import type { VendorKey } from "./vendor-keys.ts";
import { type ConstraintSyntax, isExactVersion } from "./versions.ts";

/** Go-style platform names (`linux`/`amd64`, `darwin`/`arm64`); engines rename them as they publish. */
export type Platform = { os: string; arch: string };

/** The platform of this process in release-file terms (`linux`/`amd64`, `darwin`/`arm64`, …). */
export function currentPlatform(): Platform {
  const os = process.platform === "win32" ? "windows" : process.platform;
  const arch = { x64: "amd64", ia32: "386", arm64: "arm64", arm: "arm" }[process.arch as string];
  return { os, arch: arch ?? process.arch };
}

/**
 * A release's archive for one platform, its checksums file, the checksums file's detached
 * OpenPGP signature, and where to fetch each.
 */
export type ReleaseLocation = {
  archiveName: string;
  archiveUrl: string;
  sumsUrl: string;
  signatureUrl: string;
};

/** How a binary says its version: the arguments, extra environment, and how to read its answer. */
export type VersionProbe = {
  args: readonly string[];
  env?: Readonly<Record<string, string>>;
  /** The exact version the output names, or null when it names none. */
  parse(stdout: string): string | null;
};

/** One engine's releases, as the installer and the resolver read them. */
export type EngineRelease = {
  /** The engine's name: its binary's name on PATH, its folder in the cache and on a mirror. */
  readonly engine: string;
  /** How its version constraints read (`~> 1.9` or `^3.150`). */
  readonly constraints: ConstraintSyntax;
  /** The executable inside an installed version's directory. */
  binaryIn(versionDir: string): string;
  /**
   * Where `version`'s archive for `platform`, its checksums file and the signature of that file
   * are (mirror or upstream).
   */
  locate(version: string, platform: Platform, mirror: string | null): ReleaseLocation;
  /** Unpacks a verified archive into `dir` (so that `binaryIn(dir)` is its executable). */
  unpack(archive: string, dir: string): Promise<void>;
  /** Where the index of versions is; null when there is none (cache and PATH offer versions). */
  indexUrl(mirror: string | null): string | null;
  /** The exact versions an index document names, in the one shape this engine's index has. */
  versionsOf(index: unknown): string[];
  readonly probe: VersionProbe;
  /**
   * The vendor's key that signs every checksums file, built in; null for a vendor that signs its
   * checksums with no OpenPGP key (then only `--engine-keyring` keys can sign them).
   */
  readonly signingKey: VendorKey | null;
};

/** A release that cannot be trusted, found or unpacked; the job fails with this message. */
export class EngineInstallError extends Error {
  override name = "EngineInstallError";
}

/** `mirror` without trailing slashes, the base every mirror URL starts from. */
export function mirrorBase(mirror: string): string {
  return mirror.replace(/\/+$/, "");
}

/**
 * Parses a checksums file (`<64 hex>  <file name>` per line, as `sha256sum` writes it) into
 * file name → lowercase hex digest. Lines that do not have that shape are ignored.
 */
export function parseSha256Sums(text: string): Map<string, string> {
  const sums = new Map<string, string>();
  for (const line of text.split(/\r?\n/)) {
    const match = /^([0-9a-fA-F]{64})\s+\*?(\S+)\s*$/.exec(line);
    if (match?.[1] && match[2]) {
      sums.set(match[2], match[1].toLowerCase());
    }
  }
  return sums;
}

/**
 * The versions of an index in the releases.hashicorp.com shape, `{"versions": {"1.9.5": {…}}}`
 * (Terraform's own, and the one a mirror publishes for engines without an index of their own).
 */
export function versionsOfHashicorpIndex(index: unknown): string[] {
  if (typeof index !== "object" || index === null || !("versions" in index)) {
    return [];
  }
  const versions = index.versions;
  return typeof versions === "object" && versions !== null && !Array.isArray(versions)
    ? Object.keys(versions).filter(isExactVersion)
    : [];
}
