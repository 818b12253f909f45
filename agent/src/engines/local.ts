/**
 * Engines this agent already has: the versions in its cache (`<data dir>/engines/<engine>/<v>`)
 * and the binaries of an engine on the host PATH with the version each reports.
 */
import { execFile } from "node:child_process";
import { constants } from "node:fs";
import { access, readdir, stat } from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";
import type { EngineRelease } from "./release.ts";

const execFileAsync = promisify(execFile);
const PROBE_TIMEOUT_MS = 15_000;

/** Where `version` of the engine is (or will be) cached. */
export function versionDir(dataDir: string, release: EngineRelease, version: string): string {
  return path.join(dataDir, "engines", release.engine, version);
}

/** True for an executable regular file. */
export async function isExecutable(file: string): Promise<boolean> {
  try {
    await access(file, constants.X_OK);
    return (await stat(file)).isFile();
  } catch {
    return false;
  }
}

/** The versions whose executable is in the cache (a half-written install never is: see install.ts). */
export async function cachedVersions(release: EngineRelease, dataDir: string): Promise<string[]> {
  const root = path.join(dataDir, "engines", release.engine);
  const names = await readdir(root).catch(() => [] as string[]);
  const usable = await Promise.all(
    names.map(async (name) =>
      !name.startsWith(".") && (await isExecutable(release.binaryIn(path.join(root, name))))
        ? name
        : null,
    ),
  );
  return usable.filter((v): v is string => v !== null);
}

/** A binary of the engine on PATH: the version it reports, or what it said instead. */
export type PathBinary = { path: string; version: string | null; reported: string };

/** Every binary of the engine on `searchPath` (absolute directories only), in PATH order. */
export async function binariesOnPath(
  release: EngineRelease,
  searchPath: string,
): Promise<PathBinary[]> {
  const found: PathBinary[] = [];
  for (const dir of searchPath.split(path.delimiter)) {
    const candidate = path.join(dir, release.engine);
    if (!path.isAbsolute(dir) || !(await isExecutable(candidate))) {
      continue;
    }
    found.push({ path: candidate, ...(await probe(release, candidate, searchPath)) });
  }
  return found;
}

async function probe(
  release: EngineRelease,
  binary: string,
  searchPath: string,
): Promise<Omit<PathBinary, "path">> {
  const asked = `no version from \`${release.engine} ${release.probe.args.join(" ")}\``;
  try {
    const { stdout } = await execFileAsync(binary, [...release.probe.args], {
      timeout: PROBE_TIMEOUT_MS,
      env: { PATH: searchPath, HOME: process.env.HOME ?? "/", ...release.probe.env },
    });
    const version = release.probe.parse(stdout);
    return { version, reported: version === null ? asked : `reports ${version}` };
  } catch {
    // Not a working engine binary (or one too old to answer): keep looking.
    return { version: null, reported: asked };
  }
}
