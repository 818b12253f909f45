/**
 * Pulumi's releases as the installer and the resolver read them: file names and where they
 * live, the tarball that unpacks to `pulumi/` (the CLI with its language hosts), the mirror's
 * index, and how `pulumi version` answers.
 */
import path from "node:path";
import { x as extractTar } from "tar";
import {
  EngineInstallError,
  type EngineRelease,
  mirrorBase,
  type Platform,
  type ReleaseLocation,
  versionsOfHashicorpIndex,
} from "./release.ts";
import { isExactVersion } from "./versions.ts";

/** Pulumi's own platform names in release files (`linux-x64`, `darwin-arm64`). */
export function pulumiPlatform(platform: Platform): string {
  const arch = platform.arch === "amd64" ? "x64" : platform.arch;
  return `${platform.os}-${arch}`;
}

/**
 * Where a release lives. Without a mirror: Pulumi's GitHub releases with their official names
 * (`pulumi-v3.150.0-linux-x64.tar.gz`, `pulumi-3.150.0-checksums.txt`: the checksums file has
 * no `v`). With a mirror: `{mirror}/pulumi/{version}/{file}`, the layout used for every engine.
 * The signature URL is where a mirror that re-signs puts an OpenPGP signature of the checksums.
 */
export function locatePulumi(
  version: string,
  platform: Platform,
  mirror: string | null,
): ReleaseLocation {
  const extension = platform.os === "windows" ? "zip" : "tar.gz";
  const archiveName = `pulumi-v${version}-${pulumiPlatform(platform)}.${extension}`;
  const sumsName = `pulumi-${version}-checksums.txt`;
  const base =
    mirror === null
      ? `https://github.com/pulumi/pulumi/releases/download/v${version}`
      : `${mirrorBase(mirror)}/pulumi/${version}`;
  const sumsUrl = `${base}/${sumsName}`;
  // Pulumi signs with cosign only (its `.sig` is a Sigstore bundle): an OpenPGP signature is
  // one a mirror adds, named as OpenTofu names its own.
  const signatureUrl = `${sumsUrl}.gpgsig`;
  return { archiveName, archiveUrl: `${base}/${archiveName}`, sumsUrl, signatureUrl };
}

/** The version a `pulumi version` line reports (`v3.150.0` → `3.150.0`), or null. */
export function parsePulumiVersionOutput(stdout: string): string | null {
  const version = stdout.trim().replace(/^v/, "");
  return isExactVersion(version) ? version : null;
}

/**
 * Pulumi publishes no index of its own: a mirror lists its versions at
 * `{mirror}/pulumi/index.json` in the releases.hashicorp.com shape,
 * `{"versions": {"3.150.0": {…}}}`. Without a mirror, versions come from the cache and PATH.
 */
export const PULUMI_RELEASE: EngineRelease = {
  engine: "pulumi",
  constraints: "semver",
  binaryIn: (versionDir) => path.join(versionDir, "pulumi", "pulumi"),
  locate: locatePulumi,
  // The whole `pulumi/` folder: the CLI finds its language hosts next to itself.
  unpack: (archive, dir) =>
    extractTar({ file: archive, cwd: dir, strict: true }).catch((error: unknown) => {
      throw new EngineInstallError(`${path.basename(archive)} is not a valid tarball: ${error}`);
    }),
  indexUrl: (mirror) => (mirror === null ? null : `${mirrorBase(mirror)}/pulumi/index.json`),
  versionsOf: versionsOfHashicorpIndex,
  probe: {
    args: ["version"],
    env: { PULUMI_SKIP_UPDATE_CHECK: "true" },
    parse: parsePulumiVersionOutput,
  },
  // Pulumi signs its checksums with cosign (keyless, Sigstore), not OpenPGP: nothing built in.
  signingKey: null,
};
