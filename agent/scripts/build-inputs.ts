/**
 * Whether the agent build in the default places is current: a SHA-256 over every file the build
 * reads (the agent's sources, packaging and package files, the protocol package, the build script,
 * and package-lock.json for the bundled dependencies' versions) is stamped next to the bundles
 * after each default build. `npm test` builds once; the test projects' global setups, wrangler's
 * `[build]` and later `npm run build:agent` calls find the stamp equal and the outputs intact,
 * and build nothing.
 */
import { createHash } from "node:crypto";
import { readdir, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { RELEASE_MANIFEST_PATH, ReleaseManifest } from "@outpost/protocol";

const AGENT_DIR = path.resolve(import.meta.dirname, "..");
const ROOT = path.resolve(AGENT_DIR, "..");

/** What the build reads, relative to the repository root (directories are read whole). */
const INPUTS = [
  "agent/src",
  "agent/packaging",
  "agent/scripts/build.ts",
  "agent/scripts/build-inputs.ts",
  "agent/package.json",
  "agent/README.md",
  "agent/Dockerfile",
  "packages/protocol/src",
  "packages/protocol/package.json",
  "package-lock.json",
];

const STAMP_NAME = "build-inputs.sha256";

/** Every file under `relative` (a file or a directory), sorted, relative to the root. */
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

/** The SHA-256 of the build's inputs: their paths and bytes, in a fixed order. */
export async function buildInputsDigest(): Promise<string> {
  const files = (await Promise.all(INPUTS.map(filesOf))).flat().sort();
  const hash = createHash("sha256");
  for (const file of files) {
    hash.update(`${file}\0`);
    hash.update(await readFile(path.join(ROOT, file)));
    hash.update("\0");
  }
  return hash.digest("hex");
}

/** Records that the outputs in `distDir` were built from inputs with `digest`. */
export async function writeBuildStamp(distDir: string, digest: string): Promise<void> {
  await writeFile(path.join(distDir, STAMP_NAME), `${digest}\n`);
}

/**
 * True when `distDir` holds a build of the current inputs: the stamp names today's digest, both
 * bundles and the package are there, and the assets' manifest names the bundle's own SHA-256 (so
 * the served tree is that build, not an older one). Any missing or unreadable piece means stale.
 */
export async function isBuildFresh(input: {
  distDir: string;
  assetsDir: string;
  version: string;
}): Promise<boolean> {
  const { distDir, assetsDir, version } = input;
  try {
    const [stamp, digest] = await Promise.all([
      readFile(path.join(distDir, STAMP_NAME), "utf8"),
      buildInputsDigest(),
    ]);
    if (stamp.trim() !== digest) {
      return false;
    }
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
