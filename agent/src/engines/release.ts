/** The engines the agent can run. */
export type Engine = "terraform" | "tofu";

export const ENGINES: readonly Engine[] = ["terraform", "tofu"];

/** Release versions as both projects publish them (1.9.5, 1.10.0-beta1, 1.8.0-rc1). */
const VERSION_PATTERN = /^\d+\.\d+\.\d+(?:-[0-9A-Za-z.]+)?$/;

/** Go-style platform names used in release file names. */
export type Platform = { os: string; arch: string };

/** The platform of this process in release-file terms (`linux`/`amd64`, `darwin`/`arm64`, …). */
export function currentPlatform(): Platform {
  const os = process.platform === "win32" ? "windows" : process.platform;
  const arch = { x64: "amd64", ia32: "386", arm64: "arm64", arm: "arm" }[process.arch as string];
  return { os, arch: arch ?? process.arch };
}

/** True for a version string that is safe to put in file names and URLs. */
export function isValidEngineVersion(version: string): boolean {
  return VERSION_PATTERN.test(version);
}

/** The zip, its checksum file, and where to fetch both. */
export type ReleaseLocation = { zipName: string; zipUrl: string; sumsUrl: string };

/**
 * Where a release lives. Without a mirror: releases.hashicorp.com for terraform and the
 * OpenTofu GitHub releases for tofu, with their official file names. With a mirror base URL:
 * `{mirror}/{engine}/{version}/{file}` — the releases.hashicorp.com layout, easy to copy.
 */
export function releaseLocation(
  engine: Engine,
  version: string,
  platform: Platform,
  mirror: string | null,
): ReleaseLocation {
  const zipName = `${engine}_${version}_${platform.os}_${platform.arch}.zip`;
  const sumsName = `${engine}_${version}_SHA256SUMS`;
  let base: string;
  if (mirror !== null) {
    base = `${mirror.replace(/\/+$/, "")}/${engine}/${version}`;
  } else if (engine === "terraform") {
    base = `https://releases.hashicorp.com/terraform/${version}`;
  } else {
    base = `https://github.com/opentofu/opentofu/releases/download/v${version}`;
  }
  return { zipName, zipUrl: `${base}/${zipName}`, sumsUrl: `${base}/${sumsName}` };
}

/**
 * Parses a `SHA256SUMS` file (`<64 hex>  <file name>` per line, as `sha256sum` writes it) into
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
