/**
 * `npm run build`: everything the coordinator serves as static assets, into `dist/assets/`
 * (wrangler.toml's `[assets]`): the dashboard's script, stylesheet and icon under `/ui/static/`
 * (`scripts/build-dashboard.ts`) and the agent release under `/agent/v1/releases/`
 * (`agent/scripts/build.ts`). wrangler's `[build]` runs it before `wrangler dev` (so `npm
 * start`) and `wrangler deploy`; the bench builds first, the local coordinator when the tree is
 * missing, and the test projects once in their global setup. `--assets DIR` writes elsewhere.
 * A build into the default place is stamped with a digest of its inputs (`dist/build-inputs.sha256`,
 * see agent/scripts/build-inputs.ts) and skipped while they are unchanged; `--force` builds anyway.
 */
import { access, mkdir } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { RELEASE_MANIFEST_PATH } from "@outpost/protocol";
import {
  type BuiltAgent,
  buildAgent,
  DEFAULT_ASSETS_DIR,
  isDefaultBuildFresh,
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
): Promise<{ agent: BuiltAgent; dashboard: string[] }> {
  // Taken before reading any input: an edit during the build leaves the stamp behind the sources.
  const digest = assetsDir === DEFAULT_ASSETS_DIR ? await inputsDigest(ASSETS_INPUTS) : null;
  const [dashboard, agent] = await Promise.all([
    buildDashboard(assetsDir),
    buildAgent({ assetsDir }),
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
  if (await isDefaultBuildCurrent()) {
    return "fresh";
  }
  await buildAssets();
  return "built";
}

async function isDefaultBuildCurrent(): Promise<boolean> {
  const [stamped, built, agent] = await Promise.all([
    hasCurrentStamp(STAMP_DIR, ASSETS_INPUTS),
    isBuilt(DEFAULT_ASSETS_DIR),
    isDefaultBuildFresh(),
  ]);
  return stamped && built && agent;
}

/** Whether `assetsDir` holds every file the Worker reads or serves from it. */
export async function isBuilt(assetsDir: string = DEFAULT_ASSETS_DIR): Promise<boolean> {
  const required = [
    path.join(assetsDir, RELEASE_MANIFEST_PATH),
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
  if (!values.assets && !values.force && (await isDefaultBuildCurrent())) {
    process.stdout.write("assets: up to date (no input changed since the last build)\n");
    process.exit(0);
  }
  const assetsDir = values.assets ? path.resolve(values.assets) : DEFAULT_ASSETS_DIR;
  const { agent } = await buildAssets(assetsDir);
  process.stdout.write(
    `assets in ${path.relative(process.cwd(), assetsDir) || "."}: dashboard, outpost-agent ` +
      `${agent.version} (${Date.now() - started} ms)\n`,
  );
}
