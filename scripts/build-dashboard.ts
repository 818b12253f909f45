/**
 * Builds the dashboard's static files into `<assetsDir>/ui/static/`, where the Worker serves
 * them (`/ui/static/*` in `src/ui/routes.tsx`, through the `ASSETS` binding):
 *
 * - `app.js`: `src/ui/assets/dashboard.ts`, bundled by esbuild for the browsers the dashboard
 *   supports (one classic script, no modules);
 * - `app.css`: `src/ui/assets/dashboard.css` followed by the rules of the 256-colour palette
 *   that `src/ui/ansi.ts` maps log colours onto (generated, so the two never disagree);
 * - `favicon.svg`: `src/ui/assets/favicon.svg`.
 *
 * Each file is written beside its target and renamed over it, so a server reading the tree
 * never sees a half-written file and two builds at once both succeed.
 */
import { mkdir, readFile, rename, writeFile } from "node:fs/promises";
import path from "node:path";
import { build } from "esbuild";
import { paletteCss } from "../src/ui/ansi.ts";

const SOURCE_DIR = path.resolve(import.meta.dirname, "../src/ui/assets");

/** Where the files go inside the assets directory, as the Worker's routes expect. */
export const DASHBOARD_STATIC_PATH = "ui/static";

/** The files the build writes, by name under `/ui/static/`. */
export const DASHBOARD_FILES = ["app.js", "app.css", "favicon.svg"] as const;

/** Writes the dashboard's files into `assetsDir`; answers their paths. */
export async function buildDashboard(assetsDir: string): Promise<string[]> {
  const outDir = path.join(assetsDir, DASHBOARD_STATIC_PATH);
  await mkdir(outDir, { recursive: true });
  const contents: Record<(typeof DASHBOARD_FILES)[number], string> = {
    "app.js": await bundleScript(),
    "app.css": `${await readFile(path.join(SOURCE_DIR, "dashboard.css"), "utf8")}${paletteCss()}\n`,
    "favicon.svg": await readFile(path.join(SOURCE_DIR, "favicon.svg"), "utf8"),
  };
  return Promise.all(
    DASHBOARD_FILES.map(async (name) => {
      const target = path.join(outDir, name);
      const temp = `${target}.${process.pid}-${Date.now()}.tmp`;
      await writeFile(temp, contents[name]);
      await rename(temp, target);
      return target;
    }),
  );
}

/** The browser script: one IIFE, no imports at run time, readable (it is small). */
async function bundleScript(): Promise<string> {
  const result = await build({
    entryPoints: [path.join(SOURCE_DIR, "dashboard.ts")],
    bundle: true,
    write: false,
    platform: "browser",
    format: "iife",
    target: "es2022",
    legalComments: "none",
    logLevel: "warning",
  });
  const text = result.outputFiles[0]?.text;
  if (text === undefined) {
    throw new Error("esbuild produced no dashboard script");
  }
  return text;
}
