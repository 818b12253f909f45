/**
 * The exact engine version a job runs, for every engine: the workspace's own when it names one
 * exactly, else the newest version satisfying its constraint in the engine's release index (the
 * mirror's, or upstream's). Only when there is no index to ask (Pulumi without a mirror), or
 * the index cannot be reached at all (network errors, 5xx, 429, after every attempt), does the
 * constraint resolve against the engines the agent already has, in its cache and on its PATH;
 * the job's log says which version was chosen and why. An index that answers but cannot be
 * used (404, not JSON, no versions) fails the job: a reachable index always decides.
 */
import { TransientError } from "../errors.ts";
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
  const say = (line: string) => options.onProgress?.(line);
  const url = release.indexUrl(options.releaseMirror);
  if (url === null) {
    return resolveLocally(release, wanted, options, {
      why: `${release.engine} publishes no release index and ${mirrorSetting(options)}`,
    });
  }
  say(`Resolving ${release.engine} "${wanted}" against ${url}`);
  let offered: string[];
  try {
    offered = await indexedVersions(release, url, options);
  } catch (error) {
    if (!(error instanceof TransientError)) {
      throw error;
    }
    return resolveLocally(release, wanted, options, {
      why: `the release index ${url} is unreachable (${error.message})`,
    });
  }
  const resolved = resolveVersion(wanted, offered, release.constraints);
  if (!resolved.ok) {
    throw new EngineInstallError(
      `${resolved.reason} (release index ${url}; ${mirrorSetting(options)})`,
    );
  }
  say(`Using ${release.engine} ${resolved.version} (newest for "${wanted}" in ${url})`);
  return resolved.version;
}

/** How the `--release-mirror` setting reads in a sentence. */
function mirrorSetting(options: ResolveOptions): string {
  return options.releaseMirror === null
    ? "--release-mirror is not set (the official release sites)"
    : `--release-mirror is ${options.releaseMirror}`;
}

/** One engine this agent already has, and where. */
type LocalEngine = { version: string | null; where: string };

/** The engines this agent already has: cached, or on PATH (with what each reports). */
async function localEngines(
  release: EngineRelease,
  options: ResolveOptions,
): Promise<LocalEngine[]> {
  const [cached, onPath] = await Promise.all([
    cachedVersions(release, options.dataDir),
    binariesOnPath(release, options.searchPath),
  ]);
  return [
    ...cached.map((version): LocalEngine => ({ version, where: "in the agent's cache" })),
    ...onPath.map((b): LocalEngine => ({ version: b.version, where: `at ${b.path}` })),
  ];
}

/**
 * The newest engine on this agent satisfying `wanted`, said in the log with `why` the index was
 * not asked; else an error naming what was asked, what was found and the mirror setting.
 */
async function resolveLocally(
  release: EngineRelease,
  wanted: string,
  options: ResolveOptions,
  context: { why: string },
): Promise<string> {
  const { engine } = release;
  options.onProgress?.(
    `Resolving ${engine} "${wanted}" against the engines on this agent (its cache and PATH): ${context.why}`,
  );
  const local = await localEngines(release, options);
  const versions = local.flatMap((e) => (e.version === null ? [] : [e.version]));
  const resolved = resolveVersion(wanted, versions, release.constraints);
  if (!resolved.ok) {
    const found =
      local.length === 0
        ? "none in the agent's cache or on its PATH"
        : local.map((e) => `${e.version ?? "no version reported"} ${e.where}`).join(", ");
    throw new EngineInstallError(
      `cannot resolve ${engine} "${wanted}": ${context.why}, and no ${engine} on this agent satisfies it (found: ${found}); pin the workspace's engine version to one this agent has, or set --release-mirror to a mirror it can reach`,
    );
  }
  const chosen = local.find((e) => e.version === resolved.version);
  options.onProgress?.(
    `Using ${engine} ${resolved.version} ${chosen?.where ?? ""}: the newest on this agent for "${wanted}", because ${context.why}`,
  );
  return resolved.version;
}

/**
 * The versions the index at `url` lists, retrying transient failures (each said in the log).
 * Rejects with the last {@link TransientError} when the index cannot be reached, and with an
 * {@link EngineInstallError} when it answers with something unusable.
 */
async function indexedVersions(
  release: EngineRelease,
  url: string,
  options: ResolveOptions,
): Promise<string[]> {
  const label = `the release index ${url}`;
  const body = await retry(() => fetchList({ url, label }), {
    retries: MIRROR_ATTEMPTS - 1,
    ...(options.retryBaseMs === undefined ? {} : { baseMs: options.retryBaseMs }),
    onRetry: ({ error, attempt, waitMs }) =>
      options.onProgress?.(
        `Release index attempt ${attempt} of ${MIRROR_ATTEMPTS} failed (${(error as Error).message}); retrying in ${(waitMs / 1000).toFixed(1)} s`,
      ),
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
