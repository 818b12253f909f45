/**
 * Builds the agent for shipping (`npm run build:agent`; `scripts/build.ts`, which `npm start`,
 * `npm test`, the bench and `wrangler deploy` run, builds it with the dashboard's files; and
 * `npm pack -w agent` through agent/package.json's `prepack`):
 *
 * 1. `agent/dist/outpost-agent.mjs` and `agent/dist/outpost.mjs`: the two bins as single
 *    JavaScript files with every dependency (the protocol package included) bundled, so the
 *    packed package needs nothing from npm at install time and no TypeScript at run time.
 * 2. `dist/assets/agent/v1/releases/`: what the coordinator serves as static assets under
 *    `/agent/v1/releases/<version>/` (the agent file, the npm package, the Dockerfile and the
 *    systemd unit) plus `manifest.json` naming each with its SHA-256 and `manifest.sig`, its
 *    Ed25519 signature by the release signing key (`release-key.ts`), whose public key (and any
 *    next keys) the bundled agent trusts. The rest of `dist/assets/` (the dashboard's files) is
 *    `scripts/build.ts`'s, which runs this build too.
 *
 * `--version V` stamps another version (tests build an older and a newer agent); `--dist DIR`
 * and `--assets DIR` write elsewhere. Outputs are replaced by rename, so a reader never sees a
 * half-written file. A plain build is skipped when the default outputs already hold a build of
 * the current inputs (build-inputs.ts); `--force` builds anyway.
 */
import { execFile } from "node:child_process";
import { createHash, type KeyObject } from "node:crypto";
import { cp, mkdir, mkdtemp, readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs, promisify } from "node:util";
import {
  AgentVersion,
  RELEASE_SIGNATURE_PATH,
  RELEASES_PATH,
  type ReleaseFile,
  ReleaseManifest,
} from "@outpost/protocol";
import { build } from "esbuild";
import { releaseKeyText, signManifest } from "../src/update/release-signature.ts";
import { AGENT_INPUTS, inputsDigest, isBuildFresh, writeStamp } from "./build-inputs.ts";
import { nextReleaseKeys, releaseSigningKey, type SigningKey } from "./release-key.ts";

const run = promisify(execFile);
const AGENT_DIR = path.resolve(import.meta.dirname, "..");
const ROOT = path.resolve(AGENT_DIR, "..");

/** Where the build writes by default. */
export const DEFAULT_DIST_DIR = path.join(AGENT_DIR, "dist");
export const DEFAULT_ASSETS_DIR = path.join(ROOT, "dist", "assets");

export type BuiltAgent = {
  version: string;
  /** The single-file agent and CLI. */
  agentFile: string;
  cliFile: string;
  /** The npm package, as `npm pack` makes it. */
  packageFile: string;
  manifest: ReleaseManifest;
  /** The public key that signed the manifest (`ed25519:…`), what `--release-key` takes. */
  releaseKey: string;
  /** Where the signing key came from. */
  releaseKeySource: string;
};

/** The version in agent/package.json, the one a plain build stamps. */
export async function sourceVersion(): Promise<string> {
  const json: unknown = JSON.parse(await readFile(path.join(AGENT_DIR, "package.json"), "utf8"));
  return AgentVersion.parse((json as { version?: unknown }).version);
}

export type BuildOptions = {
  version?: string;
  distDir?: string;
  assetsDir?: string;
  /** The keys the release is signed with and trusts; by default `releaseTrust()`'s. */
  trust?: ReleaseTrust;
};

/**
 * The keys of a build: the signing key, the next keys its manifest names, and the public keys
 * compiled into the agent (`keys`, the signing key's first). `keys` is one of the build's
 * inputs (build-inputs.ts): a build stamped for other keys is stale, so a reused build is always
 * signed by the key the build would sign with now, whose private half exists.
 */
export type ReleaseTrust = {
  signing: SigningKey;
  nextKeys: string[];
  releaseKey: string;
  keys: string[];
};

/** The release trust of a build from the environment (release-key.ts): the key and next keys. */
export async function releaseTrust(
  options: { signing?: SigningKey; nextKeys?: string[] } = {},
): Promise<ReleaseTrust> {
  const signing = options.signing ?? (await releaseSigningKey());
  const nextKeys = options.nextKeys ?? nextReleaseKeys();
  const releaseKey = releaseKeyText(signing.key);
  return {
    signing,
    nextKeys,
    releaseKey,
    keys: [releaseKey, ...nextKeys.filter((k) => k !== releaseKey)],
  };
}

/**
 * Bundles both bins stamped with `version` into `distDir`, packs the npm package and writes
 * the signed release assets into `assetsDir` (replacing any earlier build there).
 */
export async function buildAgent(options: BuildOptions = {}): Promise<BuiltAgent> {
  const version = AgentVersion.parse(options.version ?? (await sourceVersion()));
  const distDir = options.distDir ?? DEFAULT_DIST_DIR;
  const assetsDir = options.assetsDir ?? DEFAULT_ASSETS_DIR;
  const trust = options.trust ?? (await releaseTrust());
  const { signing, nextKeys, releaseKey } = trust;
  const isDefault =
    distDir === DEFAULT_DIST_DIR &&
    assetsDir === DEFAULT_ASSETS_DIR &&
    version === (await sourceVersion());
  // Taken before reading any input: an edit during the build leaves the stamp behind the sources.
  const digest = isDefault ? await inputsDigest(AGENT_INPUTS, trust.keys) : null;
  await mkdir(distDir, { recursive: true });
  const work = await mkdtemp(path.join(distDir, ".build-"));
  try {
    await bundle(version, work, trust.keys);
    const packageFile = await pack(version, work);
    const agentFile = await replace(path.join(work, "outpost-agent.mjs"), distDir);
    const cliFile = await replace(path.join(work, "outpost.mjs"), distDir);
    const manifest = await writeAssets({
      version,
      agentFile,
      packageFile,
      assetsDir,
      signingKey: signing.key,
      nextKeys,
    });
    const packed = await replace(packageFile, distDir);
    if (digest !== null) {
      await writeStamp(distDir, digest);
    }
    return {
      version,
      agentFile,
      cliFile,
      packageFile: packed,
      manifest,
      releaseKey,
      releaseKeySource: signing.source,
    };
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

/**
 * Whether the default places hold an agent build of the current inputs: then the CLI (npm
 * pack's `prepack`, `npm run build:agent`) builds nothing, as `scripts/build.ts` does.
 */
export async function isDefaultBuildFresh(trust?: ReleaseTrust): Promise<boolean> {
  const version = await sourceVersion();
  const { keys } = trust ?? (await releaseTrust());
  return isBuildFresh({ distDir: DEFAULT_DIST_DIR, assetsDir: DEFAULT_ASSETS_DIR, version, keys });
}

/**
 * The watchdog (agent/src/exec/watchdog-main.ts) as one ES module of Node built-ins: the agent
 * carries it as a string and starts each watchdog with `node -e`, a bare Node start.
 */
async function bundleWatchdog(): Promise<string> {
  const result = await build({
    entryPoints: [path.join(AGENT_DIR, "src/exec/watchdog-main.ts")],
    bundle: true,
    write: false,
    platform: "node",
    format: "esm",
    target: "node22",
    minify: true,
    legalComments: "none",
    logLevel: "warning",
  });
  const text = result.outputFiles[0]?.text;
  if (text === undefined) {
    throw new Error("esbuild produced no watchdog");
  }
  return text;
}

/**
 * esbuild: ESM for Node 22, every import bundled, `require` provided for CommonJS deps; the
 * version and the release keys the agent trusts compiled in.
 */
async function bundle(version: string, outDir: string, releaseKeys: string[]): Promise<void> {
  const watchdog = await bundleWatchdog();
  await build({
    entryPoints: {
      "outpost-agent": path.join(AGENT_DIR, "src/bin/outpost-agent.ts"),
      outpost: path.join(AGENT_DIR, "src/bin/outpost.ts"),
    },
    outdir: outDir,
    outExtension: { ".js": ".mjs" },
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node22",
    // CommonJS dependencies (pino, tar's helpers) call require(); ESM output has none.
    banner: {
      js: 'import { createRequire as __outpostRequire } from "node:module";\nconst require = __outpostRequire(import.meta.url);',
    },
    define: {
      OUTPOST_AGENT_VERSION: JSON.stringify(version),
      OUTPOST_WATCHDOG_SOURCE: JSON.stringify(watchdog),
      OUTPOST_RELEASE_KEYS: JSON.stringify(releaseKeys),
    },
    minifySyntax: true,
    minifyWhitespace: true,
    keepNames: true,
    legalComments: "none",
    logLevel: "warning",
  });
}

/**
 * The npm package of this build: agent/package.json (with `version`), the bins' launchers, the
 * bundles they run, packaging and README: what `npm pack -w agent` packs, stamped.
 */
async function pack(version: string, work: string): Promise<string> {
  const stage = path.join(work, "package");
  await mkdir(path.join(stage, "dist"), { recursive: true });
  const json = JSON.parse(await readFile(path.join(AGENT_DIR, "package.json"), "utf8")) as Record<
    string,
    unknown
  >;
  // Everything is bundled: the installed package depends on nothing, and builds nothing.
  delete json.devDependencies;
  delete json.scripts;
  await writeFile(
    path.join(stage, "package.json"),
    `${JSON.stringify({ ...json, version }, null, 2)}\n`,
  );
  for (const file of ["outpost-agent.mjs", "outpost.mjs"]) {
    await cp(path.join(work, file), path.join(stage, "dist", file));
  }
  await cp(path.join(AGENT_DIR, "bin"), path.join(stage, "bin"), { recursive: true });
  await cp(path.join(AGENT_DIR, "packaging"), path.join(stage, "packaging"), { recursive: true });
  await cp(path.join(AGENT_DIR, "README.md"), path.join(stage, "README.md"));
  const { stdout } = await run(
    "npm",
    ["pack", stage, "--pack-destination", work, "--json", "--ignore-scripts"],
    { cwd: work, env: { ...process.env, npm_config_loglevel: "error", npm_config_fund: "false" } },
  );
  const [packed] = JSON.parse(stdout) as Array<{ filename: string }>;
  if (packed === undefined) {
    throw new Error(`npm pack printed no file: ${stdout}`);
  }
  return path.join(work, packed.filename);
}

/**
 * The release tree (`agent/v1/releases/` of the assets directory), its manifest and the
 * manifest's signature, swapped in as a whole; whatever else the assets directory holds is left
 * as it is.
 */
async function writeAssets(input: {
  version: string;
  agentFile: string;
  packageFile: string;
  assetsDir: string;
  signingKey: KeyObject;
  nextKeys: string[];
}): Promise<ReleaseManifest> {
  const { version } = input;
  const releasesDir = path.join(input.assetsDir, RELEASES_PATH);
  await mkdir(path.dirname(releasesDir), { recursive: true });
  const stage = await mkdtemp(`${releasesDir}.stage-`);
  const releaseDir = path.join(stage, version);
  await mkdir(releaseDir, { recursive: true });
  const put = async (source: string, name: string): Promise<ReleaseFile> => {
    const target = path.join(releaseDir, name);
    await cp(source, target);
    const bytes = await readFile(target);
    return {
      path: `${RELEASES_PATH}/${version}/${name}`,
      sha256: createHash("sha256").update(bytes).digest("hex"),
      sizeBytes: (await stat(target)).size,
    };
  };
  const manifest = ReleaseManifest.parse({
    version,
    agent: await put(input.agentFile, "outpost-agent.mjs"),
    npmPackage: await put(input.packageFile, `outpost-agent-${version}.tgz`),
    dockerfile: await put(path.join(AGENT_DIR, "Dockerfile"), "Dockerfile"),
    systemdUnit: await put(
      path.join(AGENT_DIR, "packaging", "outpost-agent.service"),
      "outpost-agent.service",
    ),
    ...(input.nextKeys.length > 0 ? { nextKeys: input.nextKeys } : {}),
  });
  const manifestText = `${JSON.stringify(manifest, null, 2)}\n`;
  const signature = `${JSON.stringify(signManifest(manifestText, input.signingKey), null, 2)}\n`;
  await writeFile(path.join(stage, "manifest.json"), manifestText);
  await writeFile(path.join(stage, path.basename(RELEASE_SIGNATURE_PATH)), signature);
  // The same build again (a test project, wrangler's [build] after npm test's): the manifest
  // names every file's digest (the agent's compiled-in key included), so an equal one means
  // equal files and an equal signature (Ed25519 is deterministic); leave the served tree alone.
  const current = await readFile(path.join(releasesDir, "manifest.json"), "utf8").catch(() => null);
  if (current === manifestText) {
    await rm(stage, { recursive: true, force: true });
  } else {
    await swapIn(stage, releasesDir);
  }
  return manifest;
}

/**
 * Renames `stage` to `target`, moving an existing `target` aside first. Two builds swapping at
 * once (test projects starting together) both succeed: the loser of a race moves the winner's
 * tree aside and tries again; every tree holds the same build.
 */
async function swapIn(stage: string, target: string): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    const old = `${target}.old-${process.pid}-${attempt}-${Date.now()}`;
    await rename(target, old).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== "ENOENT") {
        throw error;
      }
    });
    try {
      await rename(stage, target);
      await rm(old, { recursive: true, force: true });
      return;
    } catch (error) {
      await rm(old, { recursive: true, force: true });
      const code = (error as NodeJS.ErrnoException).code;
      if ((code !== "ENOTEMPTY" && code !== "EEXIST") || attempt >= 5) {
        throw error;
      }
    }
  }
}

/** Moves `file` into `dir` under the same name, replacing what was there. */
async function replace(file: string, dir: string): Promise<string> {
  const target = path.join(dir, path.basename(file));
  await rename(file, target);
  return target;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({
    options: {
      version: { type: "string" },
      dist: { type: "string" },
      assets: { type: "string" },
      force: { type: "boolean" },
    },
  });
  const started = Date.now();
  const trust = await releaseTrust();
  const isDefault = !values.version && !values.dist && !values.assets;
  if (isDefault && !values.force && (await isDefaultBuildFresh(trust))) {
    process.stdout.write(
      `outpost-agent ${await sourceVersion()}: up to date (no input or release key changed since the last build), signed by ${trust.releaseKey}\n`,
    );
    process.exit(0);
  }
  const assetsDir = values.assets ? path.resolve(values.assets) : DEFAULT_ASSETS_DIR;
  const built = await buildAgent({
    ...(values.version ? { version: values.version } : {}),
    ...(values.dist ? { distDir: path.resolve(values.dist) } : {}),
    assetsDir,
    trust,
  });
  const kib = (built.manifest.agent.sizeBytes / 1024).toFixed(0);
  process.stdout.write(
    `outpost-agent ${built.version}: ${path.relative(ROOT, built.agentFile)} (${kib} KiB), ` +
      `${path.relative(ROOT, built.packageFile)}, assets in ${path.relative(ROOT, assetsDir)}, ` +
      `signed by ${built.releaseKey} (${built.releaseKeySource}) (${Date.now() - started} ms)\n`,
  );
}
