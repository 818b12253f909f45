/**
 * What a contributor runs right after `npm ci` works without a build of their own: `npm run
 * bench` and `npm start`, each in a copy of this checkout that has no `dist/` (the files git
 * tracks or would add, with this checkout's node_modules linked in, as `npm ci` would install
 * them). Both build the static assets they serve (the dashboard's files and the agent release)
 * before wrangler starts, which refuses a missing assets directory.
 */
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { cp, mkdir, mkdtemp, readFile, rm, symlink } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { RELEASE_MANIFEST_PATH } from "@outpost/protocol";
import { afterAll, describe, expect, it, vi } from "vitest";
import { freePort } from "../../scripts/local-coordinator.ts";
import { hasExited, runShellCommand } from "./helpers/processes.ts";

const run = promisify(execFile);
const root = path.resolve(import.meta.dirname, "../..");
const temps: string[] = [];

afterAll(async () => {
  await Promise.all(temps.map((dir) => rm(dir, { recursive: true, force: true })));
});

/** A copy of the checkout as a fresh clone has it: no dist/, no .wrangler/, no .dev.vars. */
async function freshClone(): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), "outpost-clone-"));
  temps.push(dir);
  const { stdout } = await run("git", ["ls-files", "-z", "-co", "--exclude-standard"], {
    cwd: root,
    maxBuffer: 16 * 1024 * 1024,
  });
  const files = stdout.split("\0").filter((file) => file && existsSync(path.join(root, file)));
  for (const file of files) {
    await mkdir(path.dirname(path.join(dir, file)), { recursive: true });
    await cp(path.join(root, file), path.join(dir, file));
  }
  for (const modules of ["node_modules", "agent/node_modules"]) {
    if (existsSync(path.join(root, modules))) {
      await symlink(path.join(root, modules), path.join(dir, modules));
    }
  }
  expect(existsSync(path.join(dir, "dist"))).toBe(false);
  return dir;
}

/** The files the coordinator reads or serves from its assets, all present. */
async function expectAssetsBuilt(clone: string): Promise<void> {
  const assets = path.join(clone, "dist/assets");
  const manifest = JSON.parse(await readFile(path.join(assets, RELEASE_MANIFEST_PATH), "utf8"));
  expect(manifest).toMatchObject({ version: expect.any(String) });
  for (const file of ["app.js", "app.css", "favicon.svg"]) {
    expect(existsSync(path.join(assets, "ui/static", file)), file).toBe(true);
  }
}

const quietEnv = { ...process.env, WRANGLER_SEND_METRICS: "false", NO_UPDATE_NOTIFIER: "1" };

describe("a fresh clone after npm ci", () => {
  it("runs npm run bench (its quickest scenario) and prints the JSON results", async () => {
    const clone = await freshClone();
    const { stdout } = await run(
      "npm",
      ["run", "--silent", "bench", "--", "--quick", "--only", "state"],
      { cwd: clone, env: quietEnv, timeout: 240_000, maxBuffer: 16 * 1024 * 1024 },
    );
    const results = JSON.parse(stdout) as {
      command: string;
      state: { result: { bytes: number; writeMs: { median: number } }[] };
    };
    expect(results.command).toBe("npm run bench -- --quick --only state");
    expect(results.state.result.map((r) => r.bytes)).toEqual([1024 * 1024, 10 * 1024 * 1024]);
    for (const figure of results.state.result) {
      expect(figure.writeMs.median).toBeGreaterThan(0);
    }
    await expectAssetsBuilt(clone);
  }, 300_000);

  it("runs npm start: the coordinator serves the dashboard and the agent release", async () => {
    const clone = await freshClone();
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    // Its own process group, so npm, wrangler and workerd all stop together.
    const start = runShellCommand("npm start", { ...quietEnv, PORT: String(port) }, clone, {
      label: "npm start",
      dataDir: clone,
    });
    try {
      await vi.waitFor(
        async () => {
          expect(hasExited(start), start.output()).toBe(false);
          expect((await fetch(`${url}/healthz`)).status).toBe(200);
        },
        { timeout: 180_000, interval: 500 },
      );
      const script = await fetch(`${url}/ui/static/app.js`);
      expect(script.status).toBe(200);
      expect(script.headers.get("content-type")).toBe("text/javascript; charset=utf-8");
      expect(await script.text()).toContain("data-typed-confirm");
      const release = await fetch(`${url}/agent/v1/release`);
      expect(release.status, await release.clone().text()).toBe(200);
      expect(await release.json()).toMatchObject({ version: expect.any(String) });
      await start.waitForOutput(/created organization/, 30_000);
      await expectAssetsBuilt(clone);
    } finally {
      await start.stop(30_000);
      // Whatever of the group is still running (a wrangler child slow to stop) ends now.
      start.kill("SIGKILL");
    }
  }, 300_000);
});
