/**
 * `npm run build`: everything the coordinator serves as static assets, into `dist/assets/`
 * (wrangler.toml's `[assets]`): the dashboard's script, stylesheet and icon under `/ui/static/`
 * (`scripts/build-dashboard.ts`) and the agent release under `/agent/v1/releases/`
 * (`agent/scripts/build.ts`). wrangler's `[build]` runs it before `wrangler dev` (so `npm
 * start`) and `wrangler deploy`; the bench builds first, the local coordinator when the tree is
 * missing, and the test projects once in their global setup. `--assets DIR` writes elsewhere.
 * A build into the default place is stamped with a digest of its inputs (`dist/build-inputs.sha256`,
 * see agent/scripts/build-inputs.ts), the release public keys among them, and skipped while they
 * are unchanged; `--force` builds anyway.
 */
import { access, mkdir } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { RELEASE_MANIFEST_PATH, RELEASE_SIGNATURE_PATH } from "@outpost/protocol";
import {
  type BuiltAgent,
  buildAgent,
  DEFAULT_ASSETS_DIR,
  isDefaultBuildFresh,
  type ReleaseTrust,
  releaseTrust,
} from "../agent/scripts/build.ts";
import {
  AGENT_INPUTS,
  hasCurrentStamp,
  inputsDigest,
  writeStamp,
} from "../agent/scripts/build-inputs.ts";
import { buildDashboard, DASHBOARD_FILES, DASHBOARD_STATIC_PATH } from "./build-dashboard.ts";

export { DEFAULT_ASSETS_DIR };

/** Where the stamp of a default build goes: beside the assets, not among what is served. */
const STAMP_DIR = path.dirname(DEFAULT_ASSETS_DIR);

/** What the whole build reads: the agent's inputs and the dashboard's. */
const ASSETS_INPUTS = [
  ...AGENT_INPUTS,
  "src/ui/assets",
  "src/ui/ansi.ts",
  "scripts/build-dashboard.ts",
  "scripts/build.ts",
];

/** Builds the dashboard and the agent into `assetsDir` (by default `dist/assets/`). */
export async function buildAssets(
  assetsDir: string = DEFAULT_ASSETS_DIR,
  trust?: ReleaseTrust,
): Promise<{ agent: BuiltAgent; dashboard: string[] }> {
  const keys = trust ?? (await releaseTrust());
  // Taken before reading any input: an edit during the build leaves the stamp behind the sources.
  const digest =
    assetsDir === DEFAULT_ASSETS_DIR ? await inputsDigest(ASSETS_INPUTS, keys.keys) : null;
  const [dashboard, agent] = await Promise.all([
    buildDashboard(assetsDir),
    buildAgent({ assetsDir, trust: keys }),
  ]);
  if (digest !== null) {
    await mkdir(STAMP_DIR, { recursive: true });
    await writeStamp(STAMP_DIR, digest);
  }
  return { agent, dashboard };
}

/**
 * Builds the static assets into `dist/assets/` unless it already holds a build of the current
 * inputs: every file there, the stamp naming today's digest, and the agent build matching the
 * served manifest. `npm test` builds once; its test projects' global setups only check.
 */
export async function ensureAssetsBuilt(): Promise<"built" | "fresh"> {
  const trust = await releaseTrust();
  if (await isDefaultBuildCurrent(trust)) {
    return "fresh";
  }
  await buildAssets(DEFAULT_ASSETS_DIR, trust);
  return "built";
}

/** Whether the default build is of the current inputs and signed by `trust`'s key. */
async function isDefaultBuildCurrent(trust: ReleaseTrust): Promise<boolean> {
  const [stamped, built, agent] = await Promise.all([
    hasCurrentStamp(STAMP_DIR, ASSETS_INPUTS, trust.keys),
    isBuilt(DEFAULT_ASSETS_DIR),
    isDefaultBuildFresh(trust),
  ]);
  return stamped && built && agent;
}

/** Whether `assetsDir` holds every file the Worker reads or serves from it. */
export async function isBuilt(assetsDir: string = DEFAULT_ASSETS_DIR): Promise<boolean> {
  const required = [
    path.join(assetsDir, RELEASE_MANIFEST_PATH),
    path.join(assetsDir, RELEASE_SIGNATURE_PATH),
    ...DASHBOARD_FILES.map((name) => path.join(assetsDir, DASHBOARD_STATIC_PATH, name)),
  ];
  const found = await Promise.all(
    required.map((file) =>
      access(file).then(
        () => true,
        () => false,
      ),
    ),
  );
  return found.every(Boolean);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({
    options: { assets: { type: "string" }, force: { type: "boolean" } },
  });
  const started = Date.now();
  const trust = await releaseTrust();
  if (!values.assets && !values.force && (await isDefaultBuildCurrent(trust))) {
    process.stdout.write(
      `assets: up to date (no input or release key changed since the last build), agent signed by ${trust.releaseKey}\n`,
    );
    process.exit(0);
  }
  const assetsDir = values.assets ? path.resolve(values.assets) : DEFAULT_ASSETS_DIR;
  const { agent } = await buildAssets(assetsDir, trust);
  process.stdout.write(
    `assets in ${path.relative(process.cwd(), assetsDir) || "."}: dashboard, outpost-agent ` +
      `${agent.version} signed by ${agent.releaseKey} (${agent.releaseKeySource}) ` +
      `(${Date.now() - started} ms)\n`,
  );
}
