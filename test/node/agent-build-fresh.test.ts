/**
 * The agent is built once per `npm test`: the test projects' global setups, wrangler's `[build]`
 * and `npm pack`'s `prepack` reuse a build whose stamp names the digest of today's inputs and
 * release keys, and build again when any piece of it is missing, changed, or was made from other
 * inputs or for another release key (whose private half may be gone).
 */
import { generateKeyPairSync } from "node:crypto";
import { appendFile, cp, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { RELEASE_MANIFEST_PATH, RELEASE_SIGNATURE_PATH, ReleaseSignature } from "@outpost/protocol";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  DEFAULT_ASSETS_DIR,
  DEFAULT_DIST_DIR,
  isDefaultBuildFresh,
  releaseTrust,
  sourceVersion,
} from "../../agent/scripts/build.ts";
import { AGENT_INPUTS, inputsDigest, isBuildFresh } from "../../agent/scripts/build-inputs.ts";
import { releaseKeyText, verifyRelease } from "../../agent/src/update/release-signature.ts";
import { ensureAssetsBuilt } from "../../scripts/build.ts";
import { testReleaseKey } from "./helpers/release-key.ts";

let dir: string;
let version: string;
/** The release keys of the build the global setup made (the signing key's first). */
let keys: string[];

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
  ({ keys } = await releaseTrust());
});
afterAll(() => rm(dir, { recursive: true, force: true }));

describe("the agent build's freshness check", () => {
  it("finds the build the global setup made fresh, and does not build again", async () => {
    expect(await ensureAssetsBuilt()).toBe("fresh");
    expect(await isDefaultBuildFresh()).toBe(true);
    const copy = await copyOfBuild("intact");
    expect(await isBuildFresh({ ...copy, version, keys })).toBe(true);
    expect(await isBuildFresh({ ...copy, version: "0.0.1", keys })).toBe(false);
  });

  it("reuses only a build signed by the key the tests sign with, whose private half exists", async () => {
    expect(await ensureAssetsBuilt()).toBe("fresh");
    const [manifest, signature] = await Promise.all([
      readFile(path.join(DEFAULT_ASSETS_DIR, RELEASE_MANIFEST_PATH), "utf8"),
      readFile(path.join(DEFAULT_ASSETS_DIR, RELEASE_SIGNATURE_PATH), "utf8"),
    ]);
    expect(keys[0]).toBe(testReleaseKey());
    const verdict = verifyRelease(
      { manifest, signature: ReleaseSignature.parse(JSON.parse(signature)) },
      [testReleaseKey()],
    );
    expect(verdict.ok).toBe(true);
  });

  it("is stale when the stamp names other inputs", async () => {
    const copy = await copyOfBuild("other-inputs");
    const digest = await inputsDigest(AGENT_INPUTS, keys);
    await writeFile(path.join(copy.distDir, "build-inputs.sha256"), `${"0".repeat(64)}\n`);
    expect(await isBuildFresh({ ...copy, version, keys })).toBe(false);
    await writeFile(path.join(copy.distDir, "build-inputs.sha256"), `${digest}\n`);
    expect(await isBuildFresh({ ...copy, version, keys })).toBe(true);
  });

  it("is stale for another release key, or one more next key", async () => {
    const copy = await copyOfBuild("other-key");
    const other = releaseKeyText(generateKeyPairSync("ed25519").privateKey);
    expect(await isBuildFresh({ ...copy, version, keys: [other] })).toBe(false);
    expect(await isBuildFresh({ ...copy, version, keys: [...keys, other] })).toBe(false);
    expect(await isBuildFresh({ ...copy, version, keys })).toBe(true);
  });

  it("is stale when the bundle differs from what the served manifest names", async () => {
    const copy = await copyOfBuild("changed-bundle");
    await appendFile(path.join(copy.distDir, "outpost-agent.mjs"), "\n");
    expect(await isBuildFresh({ ...copy, version, keys })).toBe(false);
  });

  it("is stale when a piece is missing", async () => {
    for (const piece of [
      ["dist", "outpost.mjs"],
      ["dist", `outpost-agent-${version}.tgz`],
      ["dist", "build-inputs.sha256"],
      ["assets", RELEASE_MANIFEST_PATH],
      ["assets", RELEASE_SIGNATURE_PATH],
    ] as const) {
      const copy = await copyOfBuild(`missing-${piece[1].replaceAll("/", "-")}`);
      await rm(path.join(piece[0] === "dist" ? copy.distDir : copy.assetsDir, piece[1]));
      expect(await isBuildFresh({ ...copy, version, keys }), piece.join("/")).toBe(false);
    }
  });
});
