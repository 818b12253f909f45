/**
 * The exact engine version a job runs, for every engine: the workspace's own when it names one
 * exactly, else the newest version satisfying its constraint in the engine's release index (the
 * mirror's, or upstream's); an engine without an index (Pulumi without a mirror) resolves
 * against the versions in the agent's cache and on its PATH. An index that cannot be read fails
 * the job with why, whatever the engine.
 */
import { retry } from "../retry.ts";
import { fetchList, MIRROR_ATTEMPTS } from "./fetch.ts";
import { binariesOnPath, cachedVersions } from "./local.ts";
import { EngineInstallError, type EngineRelease } from "./release.ts";
import { isExactVersion, resolveVersion } from "./versions.ts";

export type ResolveOptions = {
  releaseMirror: string | null;
  /** The agent's data directory, whose engine cache offers versions too. */
  dataDir: string;
  /** Directories searched for installed binaries (the host PATH). */
  searchPath: string;
  onProgress?: (line: string) => void;
  /** Backoff between attempts (tests shorten it). */
  retryBaseMs?: number;
};

/** Resolves the constraint; fails with an EngineInstallError that says why in words. */
export async function resolveEngineVersion(
  release: EngineRelease,
  constraint: string,
  options: ResolveOptions,
): Promise<string> {
  const wanted = constraint.trim();
  if (isExactVersion(wanted)) {
    return wanted;
  }
  const url = release.indexUrl(options.releaseMirror);
  options.onProgress?.(
    `Resolving ${release.engine} "${wanted}" against ${url ?? "the cache and PATH"}`,
  );
  // The one place the mirror's answer is required. An offline fallback (resolve against the
  // cache and PATH when the mirror cannot be reached) catches this call's failure when its
  // cause is a TransientError, says so in the log, and goes on with `localVersions`.
  const offered =
    url === null
      ? await localVersions(release, options)
      : await indexedVersions(release, url, wanted, options);
  const resolved = resolveVersion(wanted, offered, release.constraints);
  if (!resolved.ok) {
    throw new EngineInstallError(resolved.reason);
  }
  options.onProgress?.(`Using ${release.engine} ${resolved.version} (newest for "${wanted}")`);
  return resolved.version;
}

/** The versions this agent already has: cached, or on PATH. */
async function localVersions(release: EngineRelease, options: ResolveOptions): Promise<string[]> {
  const [cached, onPath] = await Promise.all([
    cachedVersions(release, options.dataDir),
    binariesOnPath(release, options.searchPath),
  ]);
  return [...cached, ...onPath.flatMap((b) => (b.version === null ? [] : [b.version]))];
}

/** The versions the index at `url` lists, retrying transient failures. */
async function indexedVersions(
  release: EngineRelease,
  url: string,
  constraint: string,
  options: ResolveOptions,
): Promise<string[]> {
  const label = `the release index ${url}`;
  const body = await retry(() => fetchList({ url, label }), {
    retries: MIRROR_ATTEMPTS - 1,
    ...(options.retryBaseMs === undefined ? {} : { baseMs: options.retryBaseMs }),
  }).catch((error: unknown) => {
    throw error instanceof EngineInstallError
      ? error
      : new EngineInstallError(`cannot resolve "${constraint}": ${(error as Error).message}`, {
          cause: error,
        });
  });
  let document: unknown;
  try {
    document = JSON.parse(body.toString("utf8"));
  } catch {
    throw new EngineInstallError(`${label} is not JSON`);
  }
  const versions = release.versionsOf(document).filter(isExactVersion);
  if (versions.length === 0) {
    throw new EngineInstallError(`${label} lists no versions`);
  }
  return versions;
}
