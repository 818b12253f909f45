/**
 * Checks of the build artefacts: the committed migrations match the drizzle schema, and the
 * Worker bundles for deployment (`wrangler deploy --dry-run`), whose size is printed.
 */
import { execFile } from "node:child_process";
import { cp, mkdtemp, readdir, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";

const run = promisify(execFile);
const root = resolve(import.meta.dirname, "../..");
const temps: string[] = [];

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "outpost-build-"));
  temps.push(dir);
  return dir;
}

afterAll(async () => {
  await Promise.all(temps.map((dir) => rm(dir, { recursive: true, force: true })));
});

describe("migrations", () => {
  it("are in step with src/db/schema.ts (drizzle-kit generates nothing new)", async () => {
    const dir = await tempDir();
    const out = join(dir, "migrations");
    await cp(join(root, "migrations"), out, { recursive: true });
    const config = join(dir, "drizzle.config.mjs");
    await writeFile(
      config,
      `export default ${JSON.stringify({
        dialect: "sqlite",
        schema: join(root, "src/db/schema.ts"),
        out,
        casing: "snake_case",
      })};\n`,
    );
    const before = await readdir(out);
    const { stdout } = await run(
      process.execPath,
      [join(root, "node_modules/drizzle-kit/bin.cjs"), "generate", "--config", config],
      { cwd: root },
    );
    const after = await readdir(out);
    expect(after, `drizzle-kit said: ${stdout}\nrun \`npm run db:generate\` and commit`).toEqual(
      before,
    );
  });
});

describe("wrangler deploy --dry-run", () => {
  it("bundles the Worker", async () => {
    const outdir = await tempDir();
    await run(
      process.execPath,
      [
        join(root, "node_modules/wrangler/bin/wrangler.js"),
        "deploy",
        "--dry-run",
        "--outdir",
        outdir,
      ],
      { cwd: root, env: { ...process.env, WRANGLER_SEND_METRICS: "false" } },
    );
    const bundle = await stat(join(outdir, "index.js"));
    console.log(`worker bundle: ${(bundle.size / 1024).toFixed(1)} KiB (uncompressed)`);
    expect(bundle.size).toBeGreaterThan(10_000);
  });
});
