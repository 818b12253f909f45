/**
 * The engine versions this agent offers, as it reports them when it registers so the
 * dashboard's workspace forms can offer them: the newest releases its `--release-mirror`'s index
 * lists, the versions in its cache, and the binaries on its PATH, each with where it was found.
 * Best effort and bounded: a mirror that does not answer within a few seconds, or an engine
 * without an index, only leaves its versions out; registration never waits long or fails on it.
 */
import {
  type EngineVersionSource,
  MAX_OFFERED_ENGINE_VERSIONS,
  type OfferedEngineVersion,
} from "@outpost/protocol";
import semver from "semver";
import type { EngineDriver } from "./driver.ts";
import { DRIVERS } from "./drivers.ts";
import { fetchList } from "./fetch.ts";
import { binariesOnPath, cachedVersions } from "./local.ts";
import type { EngineRelease } from "./release.ts";
import { isExactVersion } from "./versions.ts";

/** Newest versions reported per engine and source: a mirror may list hundreds. */
export const OFFERED_PER_SOURCE = 20;
/** How long registration waits for one release index. */
const INDEX_TIMEOUT_MS = 5_000;

export type OfferOptions = {
  releaseMirror: string | null;
  dataDir: string;
  /** Directories searched for installed binaries (the host PATH). */
  searchPath: string;
  drivers?: readonly EngineDriver[];
};

/**
 * The versions of every engine this agent runs, newest first per engine and source, at most
 * {@link OFFERED_PER_SOURCE} each and {@link MAX_OFFERED_ENGINE_VERSIONS} in all. The mirror's
 * index is only asked when `--release-mirror` is set: without one, the agent reports what it
 * has, not what the public release sites list.
 */
export async function offeredEngineVersions(
  options: OfferOptions,
): Promise<OfferedEngineVersion[]> {
  const releases = (options.drivers ?? DRIVERS).flatMap((d) => d.engines.map((e) => d.release(e)));
  const lists = await Promise.all(releases.map((release) => offeredBy(release, options)));
  return lists.flat().slice(0, MAX_OFFERED_ENGINE_VERSIONS);
}

async function offeredBy(
  release: EngineRelease,
  options: OfferOptions,
): Promise<OfferedEngineVersion[]> {
  const [mirror, cache, onPath] = await Promise.all([
    mirrorVersions(release, options.releaseMirror),
    cachedVersions(release, options.dataDir).catch(() => []),
    binariesOnPath(release, options.searchPath).catch(() => []),
  ]);
  const bySource: [EngineVersionSource, string[]][] = [
    ["mirror", mirror],
    ["cache", cache],
    ["path", onPath.flatMap((b) => (b.version === null ? [] : [b.version]))],
  ];
  return bySource.flatMap(([source, versions]) =>
    newest(versions).map((version) => ({
      engine: release.engine as OfferedEngineVersion["engine"],
      version,
      source,
    })),
  );
}

/** The exact versions of a list, deduplicated, newest first, at most {@link OFFERED_PER_SOURCE}. */
function newest(versions: readonly string[]): string[] {
  return [...new Set(versions.filter(isExactVersion))]
    .sort(semver.rcompare)
    .slice(0, OFFERED_PER_SOURCE);
}

/** What the mirror's index lists for the engine; none without a mirror, index or answer. */
async function mirrorVersions(release: EngineRelease, mirror: string | null): Promise<string[]> {
  const url = mirror === null ? null : release.indexUrl(mirror);
  if (url === null) {
    return [];
  }
  try {
    const body = await fetchList({ url, timeoutMs: INDEX_TIMEOUT_MS });
    return release.versionsOf(JSON.parse(body.toString("utf8")));
  } catch {
    // Resolution asks again, with retries, when a job needs it; the report is only a hint.
    return [];
  }
}
