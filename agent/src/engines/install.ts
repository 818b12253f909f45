/**
 * The one installer, for every engine: an executable of an engine at an exact version from the
 * cache, else from the host PATH, else downloaded from the release mirror and verified against
 * the release's checksums file, itself verified against its OpenPGP signature first
 * (`checksums.ts`). What differs between engines (file names, archive format, how a binary
 * reports its version, the vendor's signing key) comes from the engine's {@link EngineRelease}.
 */
import { mkdir, mkdtemp, rename, rm } from "node:fs/promises";
import path from "node:path";
import { retry } from "../retry.ts";
import { trustedChecksums } from "./checksums.ts";
import { downloadTo, MIRROR_ATTEMPTS } from "./fetch.ts";
import { binariesOnPath, isExecutable, type PathBinary, versionDir } from "./local.ts";
import {
  currentPlatform,
  EngineInstallError,
  type EngineRelease,
  type Platform,
} from "./release.ts";
import type { TrustedKey } from "./signatures.ts";
import { isExactVersion } from "./versions.ts";

export type InstallOptions = {
  dataDir: string;
  releaseMirror: string | null;
  /** Directories searched for an already-installed binary (the host PATH). */
  searchPath: string;
  platform?: Platform;
  /** Progress lines for the job log. */
  onProgress?: (line: string) => void;
  /** Backoff between download attempts (tests shorten it). */
  retryBaseMs?: number;
  /** Keys trusted to sign checksums besides the vendor's (`--engine-keyring`); none if absent. */
  engineKeyring?: readonly TrustedKey[];
};

export type InstalledEngine = {
  path: string;
  version: string;
  source: "cache" | "path" | "download";
};

const inFlight = new Map<string, Promise<InstalledEngine>>();

/**
 * An executable of the engine at exactly `version`: from the cache under `dataDir/engines`,
 * else a binary on `searchPath` that reports that version, else downloaded from the mirror
 * (upstream without one). A download is used only if the checksums file's signature is by a
 * trusted key (see `trustedChecksums`) and the archive's SHA-256 equals its entry there (a
 * missing entry or a mismatch is refused). Installs are built in
 * a temp dir and renamed into place, so concurrent installs of one version (in this process,
 * which share one download, or in another agent sharing the data dir) never expose a
 * half-written engine. Fails with an {@link EngineInstallError} that names the cause, the
 * attempts made and the binaries on PATH it did not use.
 */
export function installEngine(
  release: EngineRelease,
  version: string,
  options: InstallOptions,
): Promise<InstalledEngine> {
  if (!isExactVersion(version)) {
    return Promise.reject(new EngineInstallError(`invalid ${release.engine} version "${version}"`));
  }
  const key = `${options.dataDir}\0${release.engine}\0${version}`;
  let running = inFlight.get(key);
  if (running === undefined) {
    running = install(release, version, options).finally(() => inFlight.delete(key));
    inFlight.set(key, running);
  }
  return running;
}

async function install(
  release: EngineRelease,
  version: string,
  options: InstallOptions,
): Promise<InstalledEngine> {
  const dir = versionDir(options.dataDir, release, version);
  const cached = release.binaryIn(dir);
  if (await isExecutable(cached)) {
    return { path: cached, version, source: "cache" };
  }
  const onPath = await binariesOnPath(release, options.searchPath);
  const match = onPath.find((b) => b.version === version);
  if (match !== undefined) {
    options.onProgress?.(`Using ${release.engine} ${version} found at ${match.path}`);
    return { path: match.path, version, source: "path" };
  }
  let attempts = 0;
  try {
    await retry(
      () => {
        attempts += 1;
        return download(release, version, dir, options);
      },
      {
        retries: MIRROR_ATTEMPTS - 1,
        ...(options.retryBaseMs === undefined ? {} : { baseMs: options.retryBaseMs }),
        onRetry: ({ error, waitMs }) =>
          options.onProgress?.(
            `Download attempt ${attempts} failed (${(error as Error).message}); retrying in ${(waitMs / 1000).toFixed(1)} s`,
          ),
      },
    );
  } catch (error) {
    throw new EngineInstallError(
      `cannot install ${release.engine} ${version}: ${(error as Error).message} ` +
        `(${attempts} attempt${attempts === 1 ? "" : "s"})${unused(release, onPath)}`,
    );
  }
  return { path: cached, version, source: "download" };
}

function unused(release: EngineRelease, onPath: PathBinary[]): string {
  return onPath.length === 0
    ? `; no ${release.engine} on PATH`
    : `; found on PATH but not used: ${onPath.map((b) => `${b.path} (${b.reported})`).join(", ")}`;
}

async function download(
  release: EngineRelease,
  version: string,
  dir: string,
  options: InstallOptions,
): Promise<void> {
  const where = release.locate(
    version,
    options.platform ?? currentPlatform(),
    options.releaseMirror,
  );
  options.onProgress?.(`Downloading ${release.engine} ${version} from ${where.archiveUrl}`);
  const sums = await trustedChecksums(release, where, {
    engineKeyring: options.engineKeyring ?? [],
    ...(options.onProgress === undefined ? {} : { onProgress: options.onProgress }),
  });
  const expected = sums.get(where.archiveName);
  if (expected === undefined) {
    throw new EngineInstallError(
      `${where.sumsUrl} has no checksum for ${where.archiveName}; refusing to install`,
    );
  }
  const parent = path.dirname(dir);
  await mkdir(parent, { recursive: true });
  const tmp = await mkdtemp(path.join(parent, `.tmp-${version}-`));
  try {
    const archive = path.join(tmp, where.archiveName);
    const actual = await downloadTo(where.archiveUrl, archive);
    if (actual !== expected) {
      throw new EngineInstallError(
        `checksum mismatch for ${where.archiveName}: expected ${expected}, got ${actual}; refusing to install`,
      );
    }
    const staged = path.join(tmp, version);
    await mkdir(staged);
    await release.unpack(archive, staged);
    if (!(await isExecutable(release.binaryIn(staged)))) {
      const inside = path.relative(staged, release.binaryIn(staged));
      throw new EngineInstallError(`${where.archiveName} does not contain ${inside}`);
    }
    await rename(staged, dir).catch((error: NodeJS.ErrnoException) => {
      // Another install of the same version won the race; its files are verified too.
      if (error.code !== "EEXIST" && error.code !== "ENOTEMPTY") {
        throw error;
      }
    });
    options.onProgress?.(`Installed ${release.engine} ${version} (sha256 ${actual})`);
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
}
