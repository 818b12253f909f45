/**
 * Whether a build in the default places is current. A SHA-256 over every file a build reads (its
 * sources, packaging and package files, the build scripts, and package-lock.json for the bundled
 * dependencies' versions) and the release public keys it signs with and compiles in is stamped beside the outputs after each default build: the agent's in
 * `agent/dist/`, the whole static assets' (dashboard and agent) in `dist/`. `npm test` builds
 * once; the test projects' global setups, wrangler's `[build]`, `npm pack -w agent`'s `prepack`
 * and later builds find the stamp equal and the outputs intact, and build nothing.
 */
import { createHash } from "node:crypto";
import { access, readdir, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { RELEASE_MANIFEST_PATH, RELEASE_SIGNATURE_PATH, ReleaseManifest } from "@outpost/protocol";

const ROOT = path.resolve(import.meta.dirname, "../..");

/** What the agent's build reads, relative to the repository root (directories read whole). */
export const AGENT_INPUTS = [
  "agent/src",
  "agent/bin",
  "agent/packaging",
  "agent/scripts/build.ts",
  "agent/scripts/build-inputs.ts",
  "agent/scripts/release-key.ts",
  "agent/package.json",
  "agent/README.md",
  "agent/Dockerfile",
  "packages/protocol/src",
  "packages/protocol/package.json",
  "packages/common/src",
  "packages/common/package.json",
  "package-lock.json",
];

/** The stamp's file name, in the directory of the outputs it describes. */
export const STAMP_NAME = "build-inputs.sha256";

/** Every file under `relative` (a file or a directory), relative to the root. */
async function filesOf(relative: string): Promise<string[]> {
  const full = path.join(ROOT, relative);
  const entries = await readdir(full, { recursive: true, withFileTypes: true }).catch(
    (error: NodeJS.ErrnoException) => {
      if (error.code === "ENOTDIR") {
        return null;
      }
      throw error;
    },
  );
  if (entries === null) {
    return [relative];
  }
  return entries
    .filter((entry) => entry.isFile())
    .map((entry) => path.relative(ROOT, path.join(entry.parentPath, entry.name)));
}

/**
 * The SHA-256 of `inputs` (paths relative to the root: their paths and bytes, in a fixed order)
 * and of `keys`, the release public keys the build signs with and compiles into the agent, so a
 * build for another key is never taken as current.
 */
export async function inputsDigest(
  inputs: readonly string[],
  keys: readonly string[],
): Promise<string> {
  const files = [...new Set((await Promise.all(inputs.map(filesOf))).flat())].sort();
  const hash = createHash("sha256");
  for (const file of files) {
    hash.update(`${file}\0`);
    hash.update(await readFile(path.join(ROOT, file)));
    hash.update("\0");
  }
  hash.update(`release keys\0${keys.join("\0")}\0`);
  return hash.digest("hex");
}

/** Records that the outputs in `dir` were built from inputs with `digest`. */
export async function writeStamp(dir: string, digest: string): Promise<void> {
  await writeFile(path.join(dir, STAMP_NAME), `${digest}\n`);
}

/** Whether `dir`'s stamp names `inputs` and `keys` as they are now (false when there is none). */
export async function hasCurrentStamp(
  dir: string,
  inputs: readonly string[],
  keys: readonly string[],
): Promise<boolean> {
  const [stamp, digest] = await Promise.all([
    readFile(path.join(dir, STAMP_NAME), "utf8").catch(() => null),
    inputsDigest(inputs, keys),
  ]);
  return stamp?.trim() === digest;
}

/**
 * True when `distDir` holds an agent build of the current inputs and release `keys`: the stamp
 * names today's digest, both bundles and the package are there, the assets' manifest names the
 * bundle's own SHA-256 (so the served tree is that build, not an older one) and its signature is
 * there. Anything missing or unreadable means stale.
 */
export async function isBuildFresh(input: {
  distDir: string;
  assetsDir: string;
  version: string;
  keys: readonly string[];
}): Promise<boolean> {
  const { distDir, assetsDir, version, keys } = input;
  try {
    if (!(await hasCurrentStamp(distDir, AGENT_INPUTS, keys))) {
      return false;
    }
    await access(path.join(assetsDir, RELEASE_SIGNATURE_PATH));
    const manifest = ReleaseManifest.parse(
      JSON.parse(await readFile(path.join(assetsDir, RELEASE_MANIFEST_PATH), "utf8")),
    );
    const [agent] = await Promise.all([
      readFile(path.join(distDir, "outpost-agent.mjs")),
      readFile(path.join(distDir, "outpost.mjs")),
      readFile(path.join(distDir, `outpost-agent-${version}.tgz`)),
    ]);
    return (
      manifest.version === version &&
      manifest.agent.sha256 === createHash("sha256").update(agent).digest("hex")
    );
  } catch {
    return false;
  }
}
