/**
 * Where the agent's engines come from, end to end: the real coordinator and the real agent.
 * A release whose signed checksums were changed on the mirror fails the run with a sentence
 * naming the key; with no reachable mirror, a new workspace's default `latest` runs the
 * terraform on the agent's PATH and the log says why.
 */
import { chmodSync, mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { standinSource } from "../node/helpers/mirror.ts";
import { detachedSignature } from "../node/helpers/signing.ts";
import {
  expectStatus,
  queueRun,
  readRunLog,
  uploadConfiguration,
  waitForRun,
} from "./helpers/e2e.ts";
import { type AgentOptions, exitWithin } from "./helpers/processes.ts";
import { useWorld } from "./helpers/world.ts";

const world = useWorld();
const PLATFORM = { os: process.platform, arch: process.arch === "x64" ? "amd64" : process.arch };

/** A workspace on the world's pool with `engineVersion` (the API's default when absent). */
async function workspace(name: string, engineVersion?: string): Promise<string> {
  const ws = await expectStatus(
    world.api("POST", "/api/v1/workspaces", {
      name,
      engine: "terraform",
      executionMode: "agent",
      poolId: world.poolId,
      ...(engineVersion === undefined ? {} : { engineVersion }),
    }),
    201,
  );
  await uploadConfiguration(world, String(ws.id), {
    "main.tf": 'resource "terraform_data" "a" {}\n',
  });
  return String(ws.id);
}

/** One speculative plan by a `--single` agent started with `options`. */
async function planOnce(ws: string, options: AgentOptions) {
  const runId = await queueRun(world, ws, { operation: "plan", isSpeculative: true });
  const agent = world.startAgent({ ...options, args: ["--single"] });
  const run = await waitForRun(world, runId, ["planned_and_finished", "errored"], 90_000);
  await exitWithin(agent, 30_000);
  return { run, log: await readRunLog(world, runId, "plan") };
}

describe("signed engine downloads through the real agent", () => {
  it("fails the run, naming the key, when the mirror changed a signed checksums file", async () => {
    world.mirror.publish("terraform", "1.9.6", PLATFORM);
    const sums = "/terraform/1.9.6/terraform_1.9.6_SHA256SUMS";
    const signed = world.mirror.files.get(sums) ?? Buffer.alloc(0);
    world.mirror.files.set(`${sums}.sig`, await detachedSignature(world.signer, signed));
    world.mirror.files.set(sums, Buffer.concat([signed, Buffer.from(`${"0".repeat(64)}  x\n`)]));
    const { run, log } = await planOnce(await workspace("bad-signature", "1.9.6"), {
      dataDir: world.freshDir("bad-signature"),
    });
    expect(run.status).toBe("errored");
    const sentence = `terraform_1.9.6_SHA256SUMS: its signature by ${world.signer.label} does not verify (Signed digest did not match): the file was changed after it was signed, or the signature is not of this file; refusing to install`;
    expect(String(run.statusReason)).toContain(sentence);
    expect(log).toContain(sentence);
    expect(world.mirror.requests).not.toContain(
      `/terraform/1.9.6/terraform_1.9.6_${PLATFORM.os}_${PLATFORM.arch}.zip`,
    );
  });

  it("checks the signature on every download: the log names the signer", async () => {
    const { run, log } = await planOnce(await workspace("good-signature", "1.9.5"), {
      dataDir: world.freshDir("good-signature"),
    });
    expect(run.status).toBe("planned_and_finished");
    expect(log).toContain(`terraform_1.9.5_SHA256SUMS is signed by ${world.signer.label}`);
  });
});

describe("engines without internet", () => {
  it("runs a new workspace's default latest with the terraform on PATH, saying why", async () => {
    const bin = world.freshDir("host-bin");
    writeFileSync(path.join(bin, "terraform"), standinSource("1.9.5"));
    chmodSync(path.join(bin, "terraform"), 0o755);
    const dataDir = world.freshDir("offline");
    mkdirSync(dataDir, { recursive: true });
    const ws = await workspace("first-run-offline");
    const created = await expectStatus(world.api("GET", `/api/v1/workspaces/${ws}`), 200);
    expect(created.engineVersion).toBe("latest");
    const offline = "http://127.0.0.1:1";
    const { run, log } = await planOnce(ws, {
      dataDir,
      releaseMirror: offline,
      // Only the stand-in and node: this host's own /usr/local/bin/terraform stays out of it.
      env: { PATH: `${bin}:${path.dirname(process.execPath)}:/usr/bin:/bin` },
    });
    expect(run.status, log).toBe("planned_and_finished");
    expect(run.jobs).toEqual([expect.objectContaining({ engineVersion: "1.9.5" })]);
    expect(log).toContain(
      `Resolving terraform "latest" against the engines on this agent (its cache and PATH): the release index ${offline}/terraform/index.json is unreachable`,
    );
    expect(log).toContain(
      `Using terraform 1.9.5 at ${bin}/terraform: the newest on this agent for "latest", because the release index ${offline}/terraform/index.json is unreachable`,
    );
    expect(log).toContain("Plan: 1 to add");
  }, 120_000);

  it("fails a constraint nothing on the agent satisfies with what was asked and found", async () => {
    const ws = await workspace("offline-nothing", "~> 1.10");
    const { run } = await planOnce(ws, {
      dataDir: world.freshDir("offline-nothing"),
      releaseMirror: "http://127.0.0.1:1",
      env: { PATH: `${path.dirname(process.execPath)}:/usr/bin:/bin` },
    });
    expect(run.status).toBe("errored");
    expect(String(run.statusReason)).toMatch(
      /cannot resolve terraform "~> 1\.10": the release index http:\/\/127\.0\.0\.1:1\/terraform\/index\.json is unreachable \(.+\), and no terraform on this agent satisfies it \(found: none in the agent's cache or on its PATH\); pin the workspace's engine version to one this agent has, or set --release-mirror to a mirror it can reach/,
    );
  }, 120_000);
});
