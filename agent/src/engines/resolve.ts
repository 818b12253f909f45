/**
 * The exact engine version a job runs: the workspace's own when it names one, else the newest
 * version of the mirror's release index that satisfies its constraint (`latest`, `~> 1.9`, …).
 */

import { EngineInstallError } from "./install.ts";
import type { Engine } from "./release.ts";
import { fetchReleaseVersions, releaseIndexUrl } from "./release-index.ts";
import { isExactVersion, resolveVersion } from "./version-constraint.ts";

export type ResolveOptions = {
  engine: Engine;
  constraint: string;
  releaseMirror: string | null;
  onProgress?: (line: string) => void;
  retryBaseMs?: number;
};

/** Resolves the constraint; fails with an EngineInstallError that says why in words. */
export async function resolveEngineVersion(options: ResolveOptions): Promise<string> {
  const constraint = options.constraint.trim();
  if (isExactVersion(constraint)) {
    return constraint;
  }
  const url = releaseIndexUrl(options.engine, options.releaseMirror);
  options.onProgress?.(`Resolving ${options.engine} "${constraint}" against ${url}`);
  const available = await fetchReleaseVersions(options.engine, options.releaseMirror, {
    ...(options.retryBaseMs === undefined ? {} : { retryBaseMs: options.retryBaseMs }),
  }).catch((error: unknown) => {
    throw error instanceof EngineInstallError
      ? error
      : new EngineInstallError(`cannot resolve "${constraint}": ${(error as Error).message}`);
  });
  const resolved = resolveVersion(constraint, available);
  if (!resolved.ok) {
    throw new EngineInstallError(resolved.reason);
  }
  options.onProgress?.(`Using ${options.engine} ${resolved.version} (newest for "${constraint}")`);
  return resolved.version;
}
