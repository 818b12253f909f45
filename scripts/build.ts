/**
 * `npm run build`: everything the coordinator serves as static assets, into `dist/assets/`
 * (wrangler.toml's `[assets]`): the dashboard's script, stylesheet and icon under `/ui/static/`
 * (`scripts/build-dashboard.ts`) and the agent release under `/agent/v1/releases/`
 * (`agent/scripts/build.ts`). wrangler's `[build]` runs it before `wrangler dev` (so `npm
 * start`) and `wrangler deploy`; the bench builds first, the local coordinator when the tree is
 * missing, and the test projects once in their global setup. `--assets DIR` writes elsewhere.
 */
import { access } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { RELEASE_MANIFEST_PATH } from "@outpost/protocol";
import { type BuiltAgent, buildAgent, DEFAULT_ASSETS_DIR } from "../agent/scripts/build.ts";
import { buildDashboard, DASHBOARD_FILES, DASHBOARD_STATIC_PATH } from "./build-dashboard.ts";

export { DEFAULT_ASSETS_DIR };

/** Builds the dashboard and the agent into `assetsDir` (by default `dist/assets/`). */
export async function buildAssets(
  assetsDir: string = DEFAULT_ASSETS_DIR,
): Promise<{ agent: BuiltAgent; dashboard: string[] }> {
  const [dashboard, agent] = await Promise.all([
    buildDashboard(assetsDir),
    buildAgent({ assetsDir }),
  ]);
  return { agent, dashboard };
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
  const { values } = parseArgs({ options: { assets: { type: "string" } } });
  const started = Date.now();
  const assetsDir = values.assets ? path.resolve(values.assets) : DEFAULT_ASSETS_DIR;
  const { agent } = await buildAssets(assetsDir);
  process.stdout.write(
    `assets in ${path.relative(process.cwd(), assetsDir) || "."}: dashboard, outpost-agent ` +
      `${agent.version} (${Date.now() - started} ms)\n`,
  );
}
