/**
 * Pulumi releases, pure: file names, where they live, and which version a workspace's
 * `engineVersion` (exact, a semver range such as `^3.150`, or `latest`) resolves to.
 *
 * Self-contained on purpose: Terraform and OpenTofu resolve their own constraints elsewhere,
 * and the two resolvers share only the `semver` package, so they can become one later.
 */
import semver from "semver";
import type { Platform } from "./release.ts";

/** Pulumi's own platform names in release files (`linux-x64`, `darwin-arm64`). */
export function pulumiPlatform(platform: Platform): string {
  const arch = platform.arch === "amd64" ? "x64" : platform.arch;
  return `${platform.os}-${arch}`;
}

/** The archive, its checksums file, and where to fetch both. */
export type PulumiReleaseLocation = { archiveName: string; archiveUrl: string; sumsUrl: string };

/**
 * Where a release lives. Without a mirror: Pulumi's GitHub releases with their official names
 * (`pulumi-v3.150.0-linux-x64.tar.gz`, `pulumi-3.150.0-checksums.txt`: the checksums file has
 * no `v`). With a mirror: `{mirror}/pulumi/{version}/{file}`, the layout used for every engine.
 */
export function pulumiReleaseLocation(
  version: string,
  platform: Platform,
  mirror: string | null,
): PulumiReleaseLocation {
  const extension = platform.os === "windows" ? "zip" : "tar.gz";
  const archiveName = `pulumi-v${version}-${pulumiPlatform(platform)}.${extension}`;
  const sumsName = `pulumi-${version}-checksums.txt`;
  const base =
    mirror === null
      ? `https://github.com/pulumi/pulumi/releases/download/v${version}`
      : `${mirror.replace(/\/+$/, "")}/pulumi/${version}`;
  return { archiveName, archiveUrl: `${base}/${archiveName}`, sumsUrl: `${base}/${sumsName}` };
}

/**
 * The index of versions a mirror publishes at `{mirror}/pulumi/index.json`, in the shape of
 * releases.hashicorp.com's `index.json` (`{"versions": {"3.150.0": {…}}}`); a plain array of
 * versions is read too.
 */
export function pulumiIndexUrl(mirror: string): string {
  return `${mirror.replace(/\/+$/, "")}/pulumi/index.json`;
}

/** The versions named by an index document; anything that is not a version is ignored. */
export function parseVersionIndex(json: unknown): string[] {
  const versions =
    typeof json === "object" && json !== null && "versions" in json ? json.versions : json;
  const names = Array.isArray(versions)
    ? versions
    : typeof versions === "object" && versions !== null
      ? Object.keys(versions)
      : [];
  return names.filter((v): v is string => typeof v === "string" && semver.valid(v) === v);
}

/** True when `constraint` names one exact version (nothing to resolve). */
export function isExactVersion(constraint: string): boolean {
  return semver.valid(constraint) === constraint;
}

/**
 * The newest of `available` that `constraint` allows: a semver range (`^3.150`, `~3.150.1`,
 * `>=3.100 <4`) or `latest` (the newest release). Prereleases count only when the range names
 * one, as npm does. Null when none matches or the constraint is not a range.
 */
export function resolvePulumiVersion(constraint: string, available: string[]): string | null {
  if (isExactVersion(constraint)) {
    return available.includes(constraint) ? constraint : null;
  }
  const range = constraint === "latest" ? "*" : semver.validRange(constraint);
  if (range === null) {
    return null;
  }
  return semver.maxSatisfying(available, range);
}

/** The version a `pulumi version` line reports (`v3.150.0` → `3.150.0`), or null. */
export function parsePulumiVersionOutput(stdout: string): string | null {
  const match = /^v?(\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?)\s*$/.exec(
    stdout.trim(),
  );
  return match?.[1] ?? null;
}
