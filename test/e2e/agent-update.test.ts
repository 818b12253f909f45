/**
 * Automatic updates between jobs, end to end with two builds of different versions: an older
 * built agent (0.0.1) against the real coordinator shipping the current build updates itself
 * from the coordinator, restarts in place (same process), registers with the new version and
 * runs jobs; against a coordinator whose signed manifest names a wrong SHA-256 it keeps running
 * as it was, its file untouched, and logs why.
 */
import { createHash } from "node:crypto";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { RELEASE_MANIFEST_PATH, RELEASE_SIGNATURE_PATH, ReleaseManifest } from "@outpost/protocol";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import agentPackage from "../../agent/package.json" with { type: "json" };
import { type BuiltAgent, buildAgent, DEFAULT_ASSETS_DIR } from "../../agent/scripts/build.ts";
import { signManifest } from "../../agent/src/update/release-signature.ts";
import { testReleaseSigningKey } from "../node/helpers/release-key.ts";
import {
  createWorkspace,
  expectStatus,
  queueRun,
  uploadConfiguration,
  waitForRun,
} from "./helpers/e2e.ts";
import { exitWithin } from "./helpers/processes.ts";
import { useWorld, type World } from "./helpers/world.ts";

const OLD_VERSION = "0.0.1";
const sha256 = (file: string) => createHash("sha256").update(readFileSync(file)).digest("hex");

const buildDir = mkdtempSync(path.join(tmpdir(), "outpost-old-build-"));
let oldBuild: Promise<BuiltAgent>;
// Registered before the world's: the old agent is built while the coordinator starts.
beforeAll(() => {
  oldBuild = buildAgent({
    version: OLD_VERSION,
    distDir: path.join(buildDir, "dist"),
    assetsDir: path.join(buildDir, "assets"),
  });
  // Awaited by the tests; a failed build fails them, not the run as an unhandled rejection.
  oldBuild.catch(() => {});
});
const world = useWorld();
afterAll(() => rmSync(buildDir, { recursive: true, force: true }));

/** Installs the old build the way install.sh does: one file under a prefix the agent owns. */
async function installOld(prefix: string): Promise<string> {
  mkdirSync(path.join(prefix, "lib"), { recursive: true });
  const file = path.join(prefix, "lib", "outpost-agent.mjs");
  cpSync((await oldBuild).agentFile, file);
  return file;
}

/**
 * The current build's assets with a manifest naming a wrong SHA-256 for the agent, signed by the
 * release key (as a builder's mistake would be): only the digest is wrong.
 */
async function tamperedAssets(): Promise<string> {
  const assets = path.join(buildDir, "tampered-assets");
  cpSync(DEFAULT_ASSETS_DIR, assets, { recursive: true });
  const manifestFile = path.join(assets, RELEASE_MANIFEST_PATH);
  const manifest = ReleaseManifest.parse(JSON.parse(readFileSync(manifestFile, "utf8")));
  const text = JSON.stringify({
    ...manifest,
    agent: { ...manifest.agent, sha256: "0".repeat(64) },
  });
  writeFileSync(manifestFile, text);
  writeFileSync(
    path.join(assets, RELEASE_SIGNATURE_PATH),
    JSON.stringify(signManifest(text, testReleaseSigningKey())),
  );
  return assets;
}

async function agentsOfPool(target: World): Promise<Array<Record<string, unknown>>> {
  const pool = await expectStatus(target.api("GET", `/api/v1/pools/${target.poolId}`), 200);
  return pool.agents as Array<Record<string, unknown>>;
}

describe("automatic updates", () => {
  it("updates an older agent between jobs, restarts it in place, and the new version runs jobs", async () => {
    const manifest = ReleaseManifest.parse(
      JSON.parse(readFileSync(path.join(DEFAULT_ASSETS_DIR, RELEASE_MANIFEST_PATH), "utf8")),
    );
    expect(manifest.version).toBe(agentPackage.version);
    const file = await installOld(world.freshDir("update-prefix"));
    const agent = world.startAgent({ bin: file });
    await agent.waitForOutput(/agent updated; restarting in place/, 40_000);
    await agent.waitForOutput(
      new RegExp(`registered \\{[^}]*"version":"${agentPackage.version.replaceAll(".", "\\.")}"`),
      60_000,
    );
    expect(agent.child.exitCode).toBeNull();
    expect(agent.output()).toContain(`"from":"${OLD_VERSION}","to":"${agentPackage.version}"`);
    expect(sha256(file)).toBe(manifest.agent.sha256);
    expect(agent.output()).toMatch(/said goodbye to the coordinator \{"reason":"updating to /);
    const listed = await agentsOfPool(world);
    expect(listed).toContainEqual(
      expect.objectContaining({ version: OLD_VERSION, status: "exited" }),
    );
    expect(listed).toContainEqual(
      expect.objectContaining({ version: agentPackage.version, status: "idle" }),
    );

    const ws = await createWorkspace(world, "after-update");
    await uploadConfiguration(world, ws, { "main.tf": 'resource "null_resource" "a" {}\n' });
    const runId = await queueRun(world, ws, { operation: "plan", isSpeculative: true });
    const run = await waitForRun(world, runId, ["planned_and_finished", "errored"], 60_000);
    expect(run.status, agent.output()).toBe("planned_and_finished");
    agent.kill("SIGTERM");
    expect((await exitWithin(agent, 30_000)).code).toBe(0);
  });
});

describe("automatic updates from a coordinator whose manifest names a wrong SHA-256", () => {
  const tampered = useWorld(async () => ({ assetsDir: await tamperedAssets() }));

  it("keeps running the old build, its file untouched, when the checksum does not match", async () => {
    const manifest = ReleaseManifest.parse(
      JSON.parse(readFileSync(path.join(DEFAULT_ASSETS_DIR, RELEASE_MANIFEST_PATH), "utf8")),
    );
    const file = await installOld(tampered.freshDir("tampered-prefix"));
    const before = sha256(file);
    const agent = tampered.startAgent({ bin: file });
    await agent.waitForOutput(
      /agent update failed \(download\); keeping the running version/,
      60_000,
    );
    expect(agent.output()).toContain(
      `checksum mismatch: expected sha256 ${"0".repeat(64)}, downloaded ${manifest.agent.sha256}`,
    );
    expect(agent.output()).toContain('"retryInSeconds":60');
    expect(sha256(file)).toBe(before);
    expect(agent.child.exitCode).toBeNull();
    const ws = await createWorkspace(tampered, "old-still-works");
    await uploadConfiguration(tampered, ws, { "main.tf": 'resource "null_resource" "b" {}\n' });
    const runId = await queueRun(tampered, ws, { operation: "plan", isSpeculative: true });
    const run = await waitForRun(tampered, runId, ["planned_and_finished", "errored"], 60_000);
    expect(run.status).toBe("planned_and_finished");
    expect(await agentsOfPool(tampered)).toEqual([
      expect.objectContaining({ version: OLD_VERSION, status: "idle" }),
    ]);
    agent.kill("SIGTERM");
    expect((await exitWithin(agent, 30_000)).code).toBe(0);
  });
});
