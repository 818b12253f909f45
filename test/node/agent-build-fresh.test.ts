/**
 * The agent is built once per `npm test`: the test projects' global setups, wrangler's `[build]`
 * and `npm pack`'s `prepack` reuse a build whose stamp names the digest of today's inputs, and
 * build again when any piece of it is missing, changed, or was made from other inputs.
 */
import { appendFile, cp, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  DEFAULT_ASSETS_DIR,
  DEFAULT_DIST_DIR,
  isDefaultBuildFresh,
  sourceVersion,
} from "../../agent/scripts/build.ts";
import { AGENT_INPUTS, inputsDigest, isBuildFresh } from "../../agent/scripts/build-inputs.ts";
import { ensureAssetsBuilt } from "../../scripts/build.ts";

let dir: string;
let version: string;

/** A copy of the current default build, to break one piece at a time. */
async function copyOfBuild(name: string): Promise<{ distDir: string; assetsDir: string }> {
  const distDir = path.join(dir, name, "dist");
  const assetsDir = path.join(dir, name, "assets");
  await Promise.all([
    cp(DEFAULT_DIST_DIR, distDir, { recursive: true }),
    cp(DEFAULT_ASSETS_DIR, assetsDir, { recursive: true }),
  ]);
  return { distDir, assetsDir };
}

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "outpost-build-fresh-"));
  version = await sourceVersion();
});
afterAll(() => rm(dir, { recursive: true, force: true }));

describe("the agent build's freshness check", () => {
  it("finds the build the global setup made fresh, and does not build again", async () => {
    expect(await ensureAssetsBuilt()).toBe("fresh");
    expect(await isDefaultBuildFresh()).toBe(true);
    const copy = await copyOfBuild("intact");
    expect(await isBuildFresh({ ...copy, version })).toBe(true);
    expect(await isBuildFresh({ ...copy, version: "0.0.1" })).toBe(false);
  });

  it("is stale when the stamp names other inputs", async () => {
    const copy = await copyOfBuild("other-inputs");
    const digest = await inputsDigest(AGENT_INPUTS);
    await writeFile(path.join(copy.distDir, "build-inputs.sha256"), `${"0".repeat(64)}\n`);
    expect(await isBuildFresh({ ...copy, version })).toBe(false);
    await writeFile(path.join(copy.distDir, "build-inputs.sha256"), `${digest}\n`);
    expect(await isBuildFresh({ ...copy, version })).toBe(true);
  });

  it("is stale when the bundle differs from what the served manifest names", async () => {
    const copy = await copyOfBuild("changed-bundle");
    await appendFile(path.join(copy.distDir, "outpost-agent.mjs"), "\n");
    expect(await isBuildFresh({ ...copy, version })).toBe(false);
  });

  it("is stale when a piece is missing", async () => {
    for (const piece of [
      ["dist", "outpost.mjs"],
      ["dist", `outpost-agent-${version}.tgz`],
      ["dist", "build-inputs.sha256"],
      ["assets", "agent/v1/releases/manifest.json"],
    ] as const) {
      const copy = await copyOfBuild(`missing-${piece[1].replaceAll("/", "-")}`);
      await rm(path.join(piece[0] === "dist" ? copy.distDir : copy.assetsDir, piece[1]));
      expect(await isBuildFresh({ ...copy, version }), piece.join("/")).toBe(false);
    }
  });
});
