/**
 * Installs the Pulumi CLI a workspace asks for: from the per-version cache, a `pulumi` on the
 * host PATH at that version, or the release mirror (tarball verified against the release's
 * checksums file). A range (`^3.150`) or `latest` resolves first, to the newest version the
 * cache, the PATH and the mirror's index offer together.
 */
import { execFile } from "node:child_process";
import { mkdir, mkdtemp, readdir, rename, rm } from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";
import { x as extractTar } from "tar";
import { retry } from "../retry.ts";
import {
  downloadTo,
  EngineInstallError,
  fetchOk,
  type InstalledEngine,
  isExecutable,
} from "./install.ts";
import {
  isExactVersion,
  parsePulumiVersionOutput,
  parseVersionIndex,
  pulumiIndexUrl,
  pulumiReleaseLocation,
  resolvePulumiVersion,
} from "./pulumi-release.ts";
import { currentPlatform, type Platform, parseSha256Sums } from "./release.ts";

const execFileAsync = promisify(execFile);
const DOWNLOAD_ATTEMPTS = 5;

export type PulumiInstallOptions = {
  /** The workspace's `engineVersion`: exact, a semver range, or `latest`. */
  constraint: string;
  dataDir: string;
  releaseMirror: string | null;
  searchPath: string;
  platform?: Platform;
  onProgress?: (line: string) => void;
  retryBaseMs?: number;
};

export type InstalledPulumi = InstalledEngine & { version: string };

const inFlight = new Map<string, Promise<InstalledPulumi>>();

/**
 * A `pulumi` executable at the version `constraint` resolves to, with that version. Refuses
 * (EngineInstallError) when nothing offered satisfies the constraint, or when a download's
 * SHA-256 is not the one its checksums file lists. Concurrent installs of one version share
 * one download; the install is renamed into place whole.
 */
export async function ensurePulumi(options: PulumiInstallOptions): Promise<InstalledPulumi> {
  const version = await resolveVersion(options);
  const key = `${options.dataDir}\0${version}`;
  let running = inFlight.get(key);
  if (running === undefined) {
    running = install(options, version).finally(() => inFlight.delete(key));
    inFlight.set(key, running);
  }
  return running;
}

function binaryIn(versionDir: string): string {
  return path.join(versionDir, "pulumi", "pulumi");
}

async function resolveVersion(options: PulumiInstallOptions): Promise<string> {
  const { constraint } = options;
  if (isExactVersion(constraint)) {
    return constraint;
  }
  const offered = new Set<string>(await cachedVersions(options.dataDir));
  const onPath = await pathVersion(options.searchPath);
  if (onPath !== null) {
    offered.add(onPath.version);
  }
  if (options.releaseMirror !== null) {
    const url = pulumiIndexUrl(options.releaseMirror);
    try {
      const index = await retry(() => fetchOk(url), {
        retries: DOWNLOAD_ATTEMPTS - 1,
        ...(options.retryBaseMs === undefined ? {} : { baseMs: options.retryBaseMs }),
      });
      for (const v of parseVersionIndex(JSON.parse(index.toString("utf8")))) {
        offered.add(v);
      }
    } catch (error) {
      options.onProgress?.(`Cannot read the version index ${url}: ${(error as Error).message}`);
    }
  }
  const resolved = resolvePulumiVersion(constraint, [...offered]);
  if (resolved === null) {
    const seen = [...offered].sort().join(", ") || "none";
    throw new EngineInstallError(
      `no pulumi version satisfies "${constraint}" (offered by the cache, PATH and mirror index: ${seen})`,
    );
  }
  options.onProgress?.(`Resolved pulumi "${constraint}" to ${resolved}`);
  return resolved;
}

async function cachedVersions(dataDir: string): Promise<string[]> {
  const root = path.join(dataDir, "engines", "pulumi");
  const names = await readdir(root).catch(() => [] as string[]);
  const usable = await Promise.all(
    names.map(async (name) =>
      (await isExecutable(binaryIn(path.join(root, name)))) ? name : null,
    ),
  );
  return usable.filter((v): v is string => v !== null);
}

/** The first `pulumi` on the search path and the version it reports, or null. */
async function pathVersion(searchPath: string): Promise<{ path: string; version: string } | null> {
  for (const dir of searchPath.split(path.delimiter)) {
    const candidate = path.join(dir, "pulumi");
    if (!path.isAbsolute(dir) || !(await isExecutable(candidate))) {
      continue;
    }
    try {
      const { stdout } = await execFileAsync(candidate, ["version"], {
        timeout: 15_000,
        env: { PATH: searchPath, HOME: process.env.HOME ?? "/", PULUMI_SKIP_UPDATE_CHECK: "true" },
      });
      const version = parsePulumiVersionOutput(stdout);
      return version === null ? null : { path: candidate, version };
    } catch {
      return null;
    }
  }
  return null;
}

async function install(options: PulumiInstallOptions, version: string): Promise<InstalledPulumi> {
  const versionDir = path.join(options.dataDir, "engines", "pulumi", version);
  if (await isExecutable(binaryIn(versionDir))) {
    return { path: binaryIn(versionDir), source: "cache", version };
  }
  const onPath = await pathVersion(options.searchPath);
  if (onPath?.version === version) {
    options.onProgress?.(`Using pulumi ${version} found at ${onPath.path}`);
    return { path: onPath.path, source: "path", version };
  }
  let attempts = 0;
  try {
    await retry(
      () => {
        attempts += 1;
        return download(options, version, versionDir);
      },
      {
        retries: DOWNLOAD_ATTEMPTS - 1,
        ...(options.retryBaseMs === undefined ? {} : { baseMs: options.retryBaseMs }),
      },
    );
  } catch (error) {
    const found = onPath ? `; found ${onPath.path} at ${onPath.version}, not used` : "";
    throw new EngineInstallError(
      `cannot install pulumi ${version}: ${(error as Error).message} (${attempts} attempt${attempts === 1 ? "" : "s"})${found}`,
    );
  }
  return { path: binaryIn(versionDir), source: "download", version };
}

async function download(
  options: PulumiInstallOptions,
  version: string,
  versionDir: string,
): Promise<void> {
  const where = pulumiReleaseLocation(
    version,
    options.platform ?? currentPlatform(),
    options.releaseMirror,
  );
  options.onProgress?.(`Downloading pulumi ${version} from ${where.archiveUrl}`);
  const sums = parseSha256Sums((await fetchOk(where.sumsUrl)).toString("utf8"));
  const expected = sums.get(where.archiveName);
  if (expected === undefined) {
    throw new EngineInstallError(
      `${where.sumsUrl} has no checksum for ${where.archiveName}; refusing to install`,
    );
  }
  const parent = path.dirname(versionDir);
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
    // The whole `pulumi/` folder: the CLI finds its language hosts next to itself.
    await extractTar({ file: archive, cwd: staged, strict: true }).catch((error: unknown) => {
      throw new EngineInstallError(`${where.archiveName} is not a valid tarball: ${error}`);
    });
    if (!(await isExecutable(binaryIn(staged)))) {
      throw new EngineInstallError(`${where.archiveName} does not contain pulumi/pulumi`);
    }
    await rename(staged, versionDir).catch((error: NodeJS.ErrnoException) => {
      // Another install of the same version won the race; its files are verified too.
      if (error.code !== "EEXIST" && error.code !== "ENOTEMPTY") {
        throw error;
      }
    });
    options.onProgress?.(`Installed pulumi ${version} (sha256 ${actual})`);
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
}
