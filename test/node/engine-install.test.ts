import { execFile, spawn } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { DRIVERS, driverFor } from "../../agent/src/engines/drivers.ts";
import { type InstallOptions, installEngine } from "../../agent/src/engines/install.ts";
import { locatePulumi, PULUMI_RELEASE } from "../../agent/src/engines/pulumi-release.ts";
import { type EngineRelease, parseSha256Sums } from "../../agent/src/engines/release.ts";
import { resolveEngineVersion } from "../../agent/src/engines/resolve.ts";
import { MirrorServer, releaseZip, sha256Hex, standinSource } from "./helpers/mirror.ts";
import { type TestSigner, testSigner, trustedKeyOf, writeKeyring } from "./helpers/signing.ts";

const run = promisify(execFile);
const LINUX = { os: "linux", arch: "amd64" };
const mirror = new MirrorServer();
let dataDir: string;
let signer: TestSigner;

beforeAll(async () => {
  // The mirror re-signs every checksums file with a key of this test's, given as the keyring.
  [signer] = await Promise.all([testSigner(), mirror.start()]);
  mirror.signer = signer;
});
afterAll(() => mirror.stop());
beforeEach(() => {
  dataDir = mkdtempSync(path.join(tmpdir(), "outpost-engines-"));
  mirror.files.clear();
  mirror.requests.length = 0;
  mirror.delayMs = 0;
});
afterEach(() => rmSync(dataDir, { recursive: true, force: true }));

/** The release of `engine` as the agent's drivers describe it. */
function releaseOf(engine: string): EngineRelease {
  const driver = driverFor(engine, DRIVERS);
  if (driver === null) {
    throw new Error(`no driver for ${engine}`);
  }
  return driver.release(engine);
}

/** The one installer, for any engine. */
function ensureEngine(options: { engine: string; version: string } & Partial<InstallOptions>) {
  const { engine, version, ...rest } = options;
  return installEngine(releaseOf(engine), version, {
    dataDir,
    releaseMirror: mirror.url,
    platform: LINUX,
    searchPath: "",
    engineKeyring: [trustedKeyOf(signer)],
    ...rest,
  });
}

function install(engine: "terraform" | "tofu", version: string, searchPath = "") {
  return ensureEngine({ engine, version, searchPath });
}

async function reportedVersion(binary: string): Promise<string> {
  const { stdout } = await run(binary, ["version", "-json"]);
  return (JSON.parse(stdout) as { terraform_version: string }).terraform_version;
}

function leftovers(engine: string): string[] {
  return readdirSync(path.join(dataDir, "engines", engine)).filter((f) => f.startsWith(".tmp"));
}

describe("the installer, for Terraform and OpenTofu", () => {
  it("downloads, verifies SHA256SUMS's signature then the zip, extracts and caches per version", async () => {
    mirror.publish("terraform", "1.9.5");
    const progress: string[] = [];
    const first = await ensureEngine({
      engine: "terraform",
      version: "1.9.5",
      onProgress: (line) => progress.push(line),
    });
    expect(first).toEqual({
      path: path.join(dataDir, "engines/terraform/1.9.5/terraform"),
      version: "1.9.5",
      source: "download",
    });
    expect(await reportedVersion(first.path)).toBe("1.9.5");
    expect(mirror.requests).toEqual([
      "/terraform/1.9.5/terraform_1.9.5_SHA256SUMS",
      "/terraform/1.9.5/terraform_1.9.5_SHA256SUMS.sig",
      "/terraform/1.9.5/terraform_1.9.5_linux_amd64.zip",
    ]);
    expect(progress).toContain(`terraform_1.9.5_SHA256SUMS is signed by ${signer.label}`);

    const second = await install("terraform", "1.9.5");
    expect(second.source).toBe("cache");
    expect(mirror.requests).toHaveLength(3);
    expect(leftovers("terraform")).toEqual([]);
  });

  it("installs tofu with OpenTofu's file names", async () => {
    mirror.publish("tofu", "1.8.3");
    const tofu = await install("tofu", "1.8.3");
    expect(tofu.path.endsWith("engines/tofu/1.8.3/tofu")).toBe(true);
    expect((await run(tofu.path, ["version"])).stdout).toContain("OpenTofu v1.8.3");
  });

  it("refuses a tampered zip and caches nothing", async () => {
    mirror.publish("terraform", "1.9.5");
    const key = "/terraform/1.9.5/terraform_1.9.5_linux_amd64.zip";
    const evil = Buffer.from(releaseZip("terraform", "1.9.5"));
    evil[evil.length - 30] = (evil[evil.length - 30] ?? 0) ^ 0xff;
    mirror.files.set(key, evil);
    await expect(install("terraform", "1.9.5")).rejects.toThrow(/checksum mismatch.*refusing/);
    expect(readdirSync(path.join(dataDir, "engines/terraform"))).toEqual([]);
  });

  it("refuses when SHA256SUMS carries a wrong checksum", async () => {
    mirror.publish("terraform", "1.9.5");
    mirror.files.set(
      "/terraform/1.9.5/terraform_1.9.5_SHA256SUMS",
      Buffer.from(`${sha256Hex(Buffer.from("x"))}  terraform_1.9.5_linux_amd64.zip\n`),
    );
    await expect(install("terraform", "1.9.5")).rejects.toThrow(/checksum mismatch/);
  });

  it("refuses when SHA256SUMS has no entry for the zip", async () => {
    mirror.publish("terraform", "1.9.5");
    mirror.files.set(
      "/terraform/1.9.5/terraform_1.9.5_SHA256SUMS",
      Buffer.from(`${sha256Hex(Buffer.from("x"))}  terraform_1.9.5_darwin_arm64.zip\n`),
    );
    await expect(install("terraform", "1.9.5")).rejects.toThrow(
      /no checksum for terraform_1\.9\.5_linux_amd64\.zip/,
    );
    expect(mirror.requests.some((r) => r.endsWith(".zip"))).toBe(false);
  });

  it("fails clearly for a version the mirror does not have, and for an unsafe version", async () => {
    await expect(install("terraform", "9.9.9")).rejects.toThrow(
      /terraform_9\.9\.9_SHA256SUMS answered 404/,
    );
    await expect(install("terraform", "1.0.0/../../x")).rejects.toThrow(
      /invalid terraform version/,
    );
  });

  it("is safe when separate processes install the same version at once", async () => {
    mirror.publish("terraform", "1.7.0");
    mirror.delayMs = 300;
    const keyring = writeKeyring(dataDir, signer);
    const script = `
      import { installEngine } from ${JSON.stringify(path.resolve("agent/src/engines/install.ts"))};
      import { terraformDriver } from ${JSON.stringify(path.resolve("agent/src/engines/terraform.ts"))};
      import { readEngineKeyring } from ${JSON.stringify(path.resolve("agent/src/engines/signatures.ts"))};
      const r = await installEngine(terraformDriver.release("terraform"), "1.7.0", {
        dataDir: process.argv[1], releaseMirror: process.argv[2], searchPath: "",
        engineKeyring: await readEngineKeyring(process.argv[3], "--engine-keyring"),
        platform: { os: "linux", arch: "amd64" } });
      process.stdout.write(r.path);`;
    const child = () =>
      new Promise<string>((resolve, reject) => {
        const p = spawn(process.execPath, [
          "--input-type=module",
          "-e",
          script,
          dataDir,
          mirror.url,
          keyring,
        ]);
        let out = "";
        let err = "";
        p.stdout.on("data", (d) => {
          out += d;
        });
        p.stderr.on("data", (d) => {
          err += d;
        });
        p.on("close", (code) => (code === 0 ? resolve(out) : reject(new Error(err))));
      });
    const paths = await Promise.all([child(), child(), child()]);
    expect(new Set(paths).size).toBe(1);
    // Each process downloads unless another finished first: under load a late starter finds
    // the cache, so the count is 1 to 3; what must hold is one path, the right binary, no debris.
    const downloads = mirror.requests.filter((r) => r.endsWith(".zip")).length;
    expect(downloads).toBeGreaterThanOrEqual(1);
    expect(downloads).toBeLessThanOrEqual(3);
    expect(await reportedVersion(paths[0] ?? "")).toBe("1.7.0");
    expect(leftovers("terraform")).toEqual([]);
  }, 30_000);

  it("downloads once when jobs in one process ask for the same version together", async () => {
    mirror.publish("terraform", "1.7.0");
    mirror.delayMs = 100;
    const all = await Promise.all([1, 2, 3].map(() => install("terraform", "1.7.0")));
    expect(new Set(all.map((r) => r.path)).size).toBe(1);
    expect(mirror.requests.filter((r) => r.endsWith(".zip"))).toHaveLength(1);
  });

  it("names the cause, the attempts and the engines on PATH it did not use when it fails", async () => {
    const bin = path.join(dataDir, "host-bin");
    mkdirSync(bin);
    writeFileSync(path.join(bin, "terraform"), standinSource("1.5.7"));
    chmodSync(path.join(bin, "terraform"), 0o755);
    const notFound = install("terraform", "9.9.9", `${bin}${path.delimiter}/usr/bin`);
    await expect(notFound).rejects.toThrow(
      `cannot install terraform 9.9.9: ${mirror.url}/terraform/9.9.9/terraform_9.9.9_SHA256SUMS answered 404 (1 attempt); found on PATH but not used: ${bin}/terraform (reports 1.5.7)`,
    );
    // A mirror that keeps failing with 503: retried with backoff, every attempt counted.
    const progress: string[] = [];
    const unavailable = ensureEngine({
      engine: "terraform",
      version: "1.9.5",
      dataDir,
      releaseMirror: "http://127.0.0.1:1",
      retryBaseMs: 1,
      onProgress: (line) => progress.push(line),
    });
    await expect(unavailable).rejects.toThrow(
      /^cannot install terraform 1\.9\.5: cannot download http:\/\/127\.0\.0\.1:1\/terraform\/1\.9\.5\/terraform_1\.9\.5_SHA256SUMS: .+ \(5 attempts\); no terraform on PATH$/,
    );
    expect(progress.filter((l) => l.startsWith("Download attempt"))).toHaveLength(4);
  });

  it("uses a binary already on PATH when its version matches, and downloads otherwise", async () => {
    const bin = path.join(dataDir, "host-bin");
    mkdirSync(bin);
    writeFileSync(path.join(bin, "terraform"), standinSource("1.6.6"));
    chmodSync(path.join(bin, "terraform"), 0o755);
    const searchPath = `${bin}${path.delimiter}${process.env.PATH ?? ""}`;

    const found = await install("terraform", "1.6.6", searchPath);
    expect(found).toEqual({ path: path.join(bin, "terraform"), version: "1.6.6", source: "path" });
    expect(mirror.requests).toEqual([]);

    mirror.publish("terraform", "1.9.5");
    const downloaded = await install("terraform", "1.9.5", searchPath);
    expect(downloaded.source).toBe("download");
  });
});

describe("release locations", () => {
  it("defaults to the official release sites and file names", () => {
    expect(releaseOf("terraform").locate("1.9.5", LINUX, null)).toEqual({
      archiveName: "terraform_1.9.5_linux_amd64.zip",
      archiveUrl: "https://releases.hashicorp.com/terraform/1.9.5/terraform_1.9.5_linux_amd64.zip",
      sumsUrl: "https://releases.hashicorp.com/terraform/1.9.5/terraform_1.9.5_SHA256SUMS",
      signatureUrl: "https://releases.hashicorp.com/terraform/1.9.5/terraform_1.9.5_SHA256SUMS.sig",
    });
    expect(releaseOf("tofu").locate("1.8.3", { os: "darwin", arch: "arm64" }, null)).toEqual({
      archiveName: "tofu_1.8.3_darwin_arm64.zip",
      archiveUrl:
        "https://github.com/opentofu/opentofu/releases/download/v1.8.3/tofu_1.8.3_darwin_arm64.zip",
      sumsUrl:
        "https://github.com/opentofu/opentofu/releases/download/v1.8.3/tofu_1.8.3_SHA256SUMS",
      signatureUrl:
        "https://github.com/opentofu/opentofu/releases/download/v1.8.3/tofu_1.8.3_SHA256SUMS.gpgsig",
    });
  });

  it("parses SHA256SUMS lines and ignores anything else", () => {
    const a = "a".repeat(64);
    const sums = parseSha256Sums(`${a}  one.zip\n${"B".repeat(64)} *two.zip\ngarbage\n`);
    expect([...sums]).toEqual([
      ["one.zip", a],
      ["two.zip", "b".repeat(64)],
    ]);
  });
});

/**
 * Pulumi through the same resolver and installer, as a job runs them: a range resolved against
 * the mirror's index, the tarball checked against the release's checksums file, the cache, and
 * the names Pulumi publishes its releases under.
 */
describe("the installer, for Pulumi", () => {
  const PULUMI_PLATFORM = { os: "linux", arch: "amd64" };
  beforeEach(() => {
    for (const version of ["3.149.0", "3.150.0", "3.152.1", "4.0.0-beta.1"]) {
      mirror.publishPulumi(version);
    }
  });

  /** Resolve, then install: what the job runner does with a workspace's `engineVersion`. */
  async function ensurePulumi(constraint: string, options: Partial<InstallOptions> = {}) {
    const settings = {
      dataDir,
      releaseMirror: mirror.url,
      searchPath: "",
      platform: PULUMI_PLATFORM,
      retryBaseMs: 1,
      ...options,
    };
    const version = await resolveEngineVersion(PULUMI_RELEASE, constraint, settings);
    return installEngine(PULUMI_RELEASE, version, settings);
  }

  it("names archives and checksums as Pulumi publishes them", () => {
    expect(locatePulumi("3.150.0", PULUMI_PLATFORM, null)).toEqual({
      archiveName: "pulumi-v3.150.0-linux-x64.tar.gz",
      archiveUrl:
        "https://github.com/pulumi/pulumi/releases/download/v3.150.0/pulumi-v3.150.0-linux-x64.tar.gz",
      sumsUrl:
        "https://github.com/pulumi/pulumi/releases/download/v3.150.0/pulumi-3.150.0-checksums.txt",
      // Pulumi's own `.sig` is a cosign bundle: an OpenPGP one is a mirror's, beside it.
      signatureUrl:
        "https://github.com/pulumi/pulumi/releases/download/v3.150.0/pulumi-3.150.0-checksums.txt.gpgsig",
    });
    expect(locatePulumi("3.150.0", { os: "darwin", arch: "arm64" }, "https://m/").archiveUrl).toBe(
      "https://m/pulumi/3.150.0/pulumi-v3.150.0-darwin-arm64.tar.gz",
    );
  });

  it("resolves a range from the index, verifies the download, then uses the cache", async () => {
    const first = await ensurePulumi("^3.150");
    expect(first).toMatchObject({ source: "download", version: "3.152.1" });
    expect(first.path).toBe(path.join(dataDir, "engines/pulumi/3.152.1/pulumi/pulumi"));
    const before = mirror.requests.length;
    const second = await ensurePulumi("3.152.1");
    expect(second).toMatchObject({ source: "cache", version: "3.152.1" });
    expect(mirror.requests.length).toBe(before);
  });

  it("refuses an archive whose SHA-256 is not the listed one, and installs nothing", async () => {
    const key = "/pulumi/3.150.0/pulumi-v3.150.0-linux-x64.tar.gz";
    const good = mirror.files.get(key);
    mirror.files.set(key, Buffer.from("tampered"));
    await expect(ensurePulumi("3.150.0")).rejects.toThrow(
      /checksum mismatch for pulumi-v3\.150\.0-linux-x64\.tar\.gz.*refusing to install/,
    );
    expect(readdirSync(path.join(dataDir, "engines/pulumi"))).toEqual([]);
    if (good) {
      mirror.files.set(key, good);
    }
    await expect(ensurePulumi("3.150.0")).resolves.toMatchObject({ source: "download" });
  });

  it("uses a pulumi on PATH at the resolved version, and downloads when PATH has another", async () => {
    const bin = path.join(dataDir, "host-bin");
    mkdirSync(bin);
    writeFileSync(path.join(bin, "pulumi"), "#!/bin/sh\necho v3.149.0\n", { mode: 0o755 });
    const onPath = await ensurePulumi("<3.150", { releaseMirror: null, searchPath: bin });
    expect(onPath).toEqual({ path: path.join(bin, "pulumi"), source: "path", version: "3.149.0" });
    const other = await ensurePulumi("3.150.0", { searchPath: bin });
    expect(other).toMatchObject({ source: "download", version: "3.150.0" });
  });

  it("says which versions it saw when none satisfies the range", async () => {
    await expect(ensurePulumi("^9")).rejects.toThrow(/no version satisfies "\^9".*3\.152\.1/);
  });
});
