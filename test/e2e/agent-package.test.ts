/**
 * The agent as a product, the way an operator gets it: `npm pack -w agent` installed into an
 * empty folder with `npm install --omit=dev` (the same commands agent/Dockerfile runs), whose
 * bins run a real job against the real coordinator; the build the coordinator serves as static
 * assets; and its install script, run with `sh` and checked with shellcheck.
 */
import { type ExecFileException, execFile, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { promisify } from "node:util";
import { AgentRelease } from "@outpost/protocol";
import { beforeAll, describe, expect, it } from "vitest";
import agentPackage from "../../agent/package.json" with { type: "json" };
import {
  createWorkspace,
  expectStatus,
  queueRun,
  readRunLog,
  uploadConfiguration,
  waitForRun,
} from "./helpers/e2e.ts";
import { watch } from "./helpers/processes.ts";
import { useWorld } from "./helpers/world.ts";

const run = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, "../..");
/** What agent/Dockerfile runs to install the packed agent; asserted below to stay the same. */
const INSTALL_ARGS = ["install", "--omit=dev", "--no-audit", "--no-fund"];

const world = useWorld();
let tarball = "";
let installDir = "";

beforeAll(async () => {
  const packDir = world.freshDir("pack");
  const { stdout } = await run(
    "npm",
    ["pack", "-w", "agent", "--pack-destination", packDir, "--json"],
    {
      cwd: ROOT,
    },
  );
  const [packed] = JSON.parse(stdout) as Array<{ filename: string }>;
  tarball = path.join(packDir, packed?.filename ?? "");
  installDir = world.freshDir("installed");
  await run("npm", [...INSTALL_ARGS, tarball], { cwd: installDir });
}, 120_000);

/** Runs a command, resolving with its exit code and output whatever the code. */
async function attempt(
  command: string,
  args: string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv; input?: string } = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = execFile(
      command,
      args,
      { ...options, timeout: 60_000 },
      (error, stdout, stderr) => {
        const code = error ? Number((error as ExecFileException).code ?? 1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
    child.stdin?.end(options.input ?? "");
  });
}

const sha256 = (file: string) => createHash("sha256").update(readFileSync(file)).digest("hex");
const nodeDir = path.dirname(process.execPath);
/** A host with only Node (and the base system): no repository, no npx, no TypeScript. */
const hostEnv = (extra: Record<string, string> = {}) => ({
  PATH: `${nodeDir}:/usr/local/bin:/usr/bin:/bin`,
  HOME: world.dir,
  ...extra,
});

describe("the packed npm package", () => {
  it("holds only JavaScript bins, the unit and the README, and depends on nothing", async () => {
    const { stdout } = await run("tar", ["tzf", tarball]);
    expect(stdout.trim().split("\n").sort()).toEqual([
      "package/README.md",
      "package/dist/outpost-agent.mjs",
      "package/dist/outpost.mjs",
      "package/package.json",
      "package/packaging/outpost-agent.service",
    ]);
    const installed = JSON.parse(
      readFileSync(path.join(installDir, "node_modules/outpost-agent/package.json"), "utf8"),
    ) as Record<string, unknown>;
    expect(installed.dependencies).toBeUndefined();
    expect(installed.version).toBe(agentPackage.version);
    // Nothing else came with it: the bundles carry their dependencies.
    expect(
      readdirSync(path.join(installDir, "node_modules")).filter((n) => !n.startsWith(".")),
    ).toEqual(["outpost-agent"]);
    const dockerfile = readFileSync(path.join(ROOT, "agent/Dockerfile"), "utf8");
    expect(dockerfile).toContain(`npm ${INSTALL_ARGS.join(" ")} /tmp/outpost-agent.tgz`);
  });

  it("runs both bins from node_modules/.bin with --version and --help", async () => {
    for (const bin of ["outpost-agent", "outpost"]) {
      const file = path.join(installDir, "node_modules/.bin", bin);
      const version = await attempt(file, ["--version"], { env: hostEnv() });
      expect(version).toMatchObject({ code: 0, stdout: `${agentPackage.version}\n` });
      const help = await attempt(file, ["--help"], { env: hostEnv() });
      expect(help.code).toBe(0);
      expect(help.stdout).toContain(`Usage: ${bin}`);
    }
  });

  it("runs a real job with the installed agent (--single), and the installed CLI talks to the coordinator", async () => {
    const ws = await createWorkspace(world, "packaged-agent");
    await uploadConfiguration(world, ws, { "main.tf": 'resource "null_resource" "a" {}\n' });
    const runId = await queueRun(world, ws, { operation: "plan", isSpeculative: true });
    const dataDir = world.freshDir("packaged-data");
    const child = spawn(
      path.join(installDir, "node_modules/.bin/outpost-agent"),
      ["--single", "--release-mirror", world.mirror.url, "--data-dir", dataDir],
      {
        env: hostEnv({ OUTPOST_ADDRESS: world.coordinator.url, OUTPOST_TOKEN: world.agentToken }),
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    const agent = world.track(
      watch(child, { label: "installed agent", dataDir, kill: (signal) => child.kill(signal) }),
    );
    const done = await waitForRun(world, runId, ["planned_and_finished", "errored"], 60_000);
    expect(done.status).toBe("planned_and_finished");
    expect((await agent.exited).code).toBe(0);
    expect(await readRunLog(world, runId, "plan")).toContain("Plan: 1 to add");
    const pool = await expectStatus(world.api("GET", `/api/v1/pools/${world.poolId}`), 200);
    expect(pool.agents).toContainEqual(
      expect.objectContaining({ version: agentPackage.version, status: "exited" }),
    );
    const cli = await attempt(path.join(installDir, "node_modules/.bin/outpost"), ["whoami"], {
      env: hostEnv({ OUTPOST_ADDRESS: world.coordinator.url, OUTPOST_TOKEN: world.ownerToken }),
    });
    expect(cli.stdout).toContain("as owner on");
  });
});

describe("the build the coordinator serves", () => {
  it("answers GET /agent/v1/release with a URL whose bytes match and run with node --version", async () => {
    const res = await fetch(`${world.coordinator.url}/agent/v1/release`);
    expect(res.status).toBe(200);
    const release = AgentRelease.parse(await res.json());
    expect(release.version).toBe(agentPackage.version);
    expect(new URL(release.url).origin).toBe(world.coordinator.url);
    const file = path.join(world.freshDir("release"), "outpost-agent.mjs");
    const download = await fetch(release.url);
    expect(download.status).toBe(200);
    writeFileSync(file, Buffer.from(await download.arrayBuffer()));
    expect(sha256(file)).toBe(release.sha256);
    const version = await attempt(process.execPath, [file, "--version"], { env: hostEnv() });
    expect(version).toMatchObject({ code: 0, stdout: `${release.version}\n` });
    const packageBytes = Buffer.from(await (await fetch(release.npmPackage.url)).arrayBuffer());
    expect(createHash("sha256").update(packageBytes).digest("hex")).toBe(release.npmPackage.sha256);
  });
});

describe("GET /agent/v1/install.sh", () => {
  let script = "";
  beforeAll(async () => {
    const res = await fetch(`${world.coordinator.url}/agent/v1/install.sh`);
    expect(res.status).toBe(200);
    script = path.join(world.freshDir("script"), "install.sh");
    writeFileSync(script, await res.text());
  });

  it("passes shellcheck as POSIX sh", async () => {
    const checked = await attempt("shellcheck", ["--shell=sh", "--severity=style", script]);
    expect(checked, "install shellcheck (apt-get install shellcheck)").toMatchObject({
      code: 0,
      stdout: "",
    });
  });

  it("installs the verified agent under a prefix with an outpost-agent launcher", async () => {
    const prefix = path.join(world.freshDir("prefix"), "opt");
    const installed = await attempt("sh", [script, "--prefix", prefix], { env: hostEnv() });
    expect(installed.code, installed.stderr).toBe(0);
    expect(installed.stderr).toContain(`installed outpost-agent ${agentPackage.version}`);
    const launcher = path.join(prefix, "bin/outpost-agent");
    expect(statSync(launcher).mode & 0o111).not.toBe(0);
    const version = await attempt(launcher, ["--version"], { env: { PATH: "/usr/bin:/bin" } });
    expect(version).toMatchObject({ code: 0, stdout: `${agentPackage.version}\n` });
    expect(readdirSync(path.join(prefix, "lib"))).toEqual(["outpost-agent.mjs"]);
  });

  it("refuses a download whose digest differs, installing nothing", async () => {
    const tampered = path.join(path.dirname(script), "tampered.sh");
    writeFileSync(
      tampered,
      readFileSync(script, "utf8").replace(
        /^AGENT_SHA256='[0-9a-f]{64}'$/m,
        `AGENT_SHA256='${"0".repeat(64)}'`,
      ),
    );
    const prefix = world.freshDir("tampered-prefix");
    const refused = await attempt("sh", [tampered, "--prefix", prefix], { env: hostEnv() });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain("checksum mismatch");
    expect(refused.stderr).toContain("nothing was installed");
    expect(readdirSync(path.join(prefix, "lib"))).toEqual([]);
    expect(existsSync(path.join(prefix, "bin/outpost-agent"))).toBe(false);
  });

  it("prepares a verified docker build context: the served Dockerfile and npm package", async () => {
    const context = path.join(world.freshDir("docker"), "context");
    const prepared = await attempt("sh", [script, "--docker-context", context], { env: hostEnv() });
    expect(prepared.code, prepared.stderr).toBe(0);
    expect(readdirSync(context).sort()).toEqual(["Dockerfile", "outpost-agent.tgz"]);
    expect(readFileSync(path.join(context, "Dockerfile"), "utf8")).toBe(
      readFileSync(path.join(ROOT, "agent/Dockerfile"), "utf8"),
    );
    expect(prepared.stderr).toContain(`docker build -t outpost-agent:${agentPackage.version}`);
  });

  it("installs the systemd unit, its settings and the token for the service user", async () => {
    const base = world.freshDir("systemd");
    const dirs = {
      OUTPOST_SYSTEMD_DIR: path.join(base, "systemd"),
      OUTPOST_CONFIG_DIR: path.join(base, "etc"),
    };
    const prefix = path.join(base, "opt");
    const token = world.agentToken;
    const installed = await attempt(
      "sh",
      [script, "--systemd", "--no-start", "--token-stdin", "--prefix", prefix, "--user", "nobody"],
      { env: hostEnv(dirs), input: `${token}\n` },
    );
    expect(installed.code, installed.stderr).toBe(0);
    const unit = readFileSync(path.join(dirs.OUTPOST_SYSTEMD_DIR, "outpost-agent.service"), "utf8");
    expect(unit).toContain(`ExecStart=${prefix}/bin/outpost-agent\n`);
    expect(unit).toContain("User=nobody\n");
    expect(unit).toContain(`EnvironmentFile=${dirs.OUTPOST_CONFIG_DIR}/agent.env\n`);
    expect(unit).toContain(`ReadWritePaths=${prefix}\n`);
    expect(unit).toContain("Restart=always\n");
    const tokenFile = path.join(dirs.OUTPOST_CONFIG_DIR, "token");
    expect(readFileSync(tokenFile, "utf8")).toBe(`${token}\n`);
    expect(statSync(tokenFile).mode & 0o777).toBe(0o640);
    expect(readFileSync(path.join(dirs.OUTPOST_CONFIG_DIR, "agent.env"), "utf8")).toContain(
      `OUTPOST_ADDRESS=${world.coordinator.url}\nOUTPOST_TOKEN_FILE=${tokenFile}\n`,
    );
    expect(statSync(path.join(prefix, "lib/outpost-agent.mjs")).uid).not.toBe(0);
    expect(installed.stderr).toContain("systemctl daemon-reload && systemctl enable --now");
    mkdirSync(path.join(base, "data"));
  });
});
