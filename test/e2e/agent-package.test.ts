/**
 * The agent as a product, the way an operator and a contributor get it: a fresh checkout (this
 * working tree's files, no build) after `npm ci`, whose `npx outpost-agent` and `npx outpost`
 * run at once; `npm pack -w agent` there (its `prepack` builds) installed into an empty folder
 * with `npm install --omit=dev` (the same commands agent/Dockerfile runs), whose bins run a
 * real job against the real coordinator; the build the coordinator serves as static assets;
 * and its install script, run with `sh` and checked with shellcheck.
 */
import { type ExecFileException, execFile, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { AgentRelease } from "@outpost/protocol";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
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

let tarball = "";
let installDir = "";
/** The checkout, the pack and the installed package: made while the world starts. */
const prepareDir = mkdtempSync(path.join(tmpdir(), "outpost-package-"));
/** A fresh checkout of this working tree after `npm ci`, before anything was built in it. */
const checkout = { dir: "", hadDist: true, bins: [] as Array<{ bin: string; version: string }> };

/** This working tree's files, as a clone would have them (nothing ignored, nothing built). */
async function freshCheckout(dir: string): Promise<void> {
  const { stdout } = await run("git", ["ls-files", "-co", "--exclude-standard", "-z"], {
    cwd: ROOT,
    maxBuffer: 16 * 1024 * 1024,
  });
  const files = stdout.split("\0").filter((f) => f !== "" && existsSync(path.join(ROOT, f)));
  const list = path.join(dir, "..", `${path.basename(dir)}.files`);
  writeFileSync(list, files.join("\0"));
  await run("tar", ["-c", "--null", "-T", list, "-f", path.join(dir, "..", "tree.tar")], {
    cwd: ROOT,
  });
  await run("tar", ["-x", "-f", path.join(dir, "..", "tree.tar")], { cwd: dir });
}

/** A fresh checkout and `npm ci` in it; its bins; `npm pack -w agent` there, installed. */
async function prepare(): Promise<void> {
  const dir = (name: string) => {
    mkdirSync(path.join(prepareDir, name));
    return path.join(prepareDir, name);
  };
  checkout.dir = dir("checkout");
  await freshCheckout(checkout.dir);
  await run("npm", ["ci", "--prefer-offline", "--no-audit", "--no-fund"], {
    cwd: checkout.dir,
    maxBuffer: 16 * 1024 * 1024,
  });
  checkout.hadDist = existsSync(path.join(checkout.dir, "agent", "dist"));
  for (const bin of ["outpost-agent", "outpost"]) {
    // --no: never fetch a package of that name from the registry instead.
    const { stdout } = await run("npx", ["--no", "--", bin, "--version"], { cwd: checkout.dir });
    checkout.bins.push({ bin, version: stdout });
  }
  // In the fresh checkout, so only the package's own prepack can have built what it packs.
  const packDir = dir("pack");
  await run("npm", ["pack", "-w", "agent", "--pack-destination", packDir], { cwd: checkout.dir });
  const packed = readdirSync(packDir).find((name) => name.endsWith(".tgz"));
  tarball = path.join(packDir, packed ?? "");
  installDir = dir("installed");
  await run("npm", [...INSTALL_ARGS, tarball], { cwd: installDir });
}

let prepared: Promise<void>;
// Registered before the world's: the checkout, npm ci and the pack run while the coordinator
// starts; the hook after the world's waits for them.
beforeAll(() => {
  prepared = prepare();
  // Awaited below; a failure fails that hook, not the run as an unhandled rejection.
  prepared.catch(() => {});
});
const world = useWorld();
beforeAll(() => prepared, 300_000);
afterAll(() => rmSync(prepareDir, { recursive: true, force: true }));

describe("a checkout after npm ci", () => {
  it("has both bins in node_modules/.bin, running the sources, with nothing built", () => {
    expect(checkout.hadDist).toBe(false);
    for (const bin of ["outpost-agent", "outpost"]) {
      const link = readlinkSync(path.join(checkout.dir, "node_modules/.bin", bin));
      // The bin is a file of the repository, so npm ci links it before any build.
      expect(link).toBe(`../outpost-agent/bin/${bin}.mjs`);
    }
    expect(checkout.bins).toEqual([
      { bin: "outpost-agent", version: `${agentPackage.version}\n` },
      { bin: "outpost", version: `${agentPackage.version}\n` },
    ]);
  });
});

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
      "package/bin/outpost-agent.mjs",
      "package/bin/outpost.mjs",
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
      [
        "--single",
        "--release-mirror",
        world.mirror.url,
        "--engine-keyring",
        world.keyringFile,
        "--data-dir",
        dataDir,
      ],
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

  it("with --with-cli also installs the outpost CLI from the verified npm package", async () => {
    const prefix = path.join(world.freshDir("cli-prefix"), "opt");
    const installed = await attempt("sh", [script, "--prefix", prefix, "--with-cli"], {
      env: hostEnv(),
    });
    expect(installed.code, installed.stderr).toBe(0);
    expect(installed.stderr).toContain(`installed outpost ${agentPackage.version}`);
    const cli = path.join(prefix, "bin/outpost");
    const version = await attempt(cli, ["--version"], { env: { PATH: "/usr/bin:/bin" } });
    expect(version).toMatchObject({ code: 0, stdout: `${agentPackage.version}\n` });
    // The CLI is the installing user's, beside (not in) the agent user's lib/.
    expect(readdirSync(path.join(prefix, "lib"))).toEqual(["outpost-agent.mjs"]);
    expect(readdirSync(path.join(prefix, "cli"))).toEqual(["outpost.mjs"]);
  });

  it("refuses a manifest changed after it was signed, installing nothing", async () => {
    const text = readFileSync(script, "utf8");
    const b64 = /^MANIFEST='([^']*)'$/m.exec(text)?.[1] ?? "";
    const manifest = Buffer.from(b64, "base64")
      .toString("utf8")
      .replace(/"sha256": "[0-9a-f]{64}"/, `"sha256": "${"0".repeat(64)}"`);
    const tampered = path.join(path.dirname(script), "tampered.sh");
    writeFileSync(tampered, text.replace(b64, Buffer.from(manifest).toString("base64")));
    const prefix = world.freshDir("tampered-prefix");
    const refused = await attempt("sh", [tampered, "--prefix", prefix], { env: hostEnv() });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain("the release signature does not verify");
    expect(refused.stderr).toContain("nothing was installed");
    expect(readdirSync(prefix)).toEqual([]);
  });

  it("refuses a download whose digest differs from the signed manifest, installing nothing", async () => {
    // Whoever answers at the address serves other bytes: the signed digests catch it.
    const liar = createServer((_req, res) => res.end("console.log('not the agent');\n"));
    await new Promise<void>((resolve) => liar.listen(0, "127.0.0.1", resolve));
    const { port } = liar.address() as AddressInfo;
    const tampered = path.join(path.dirname(script), "other-origin.sh");
    writeFileSync(
      tampered,
      readFileSync(script, "utf8").replace(
        /^OUTPOST_ADDRESS='[^']*'$/m,
        `OUTPOST_ADDRESS='http://127.0.0.1:${port}'`,
      ),
    );
    const prefix = world.freshDir("tampered-prefix");
    const refused = await attempt("sh", [tampered, "--prefix", prefix], { env: hostEnv() });
    liar.close();
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain("checksum mismatch");
    expect(refused.stderr).toContain("nothing was installed");
    expect(readdirSync(prefix)).toEqual([]);
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
