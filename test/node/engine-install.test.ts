import { execFile, spawn } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { ensureEngine } from "../../agent/src/engines/install.ts";
import { parseSha256Sums, releaseLocation } from "../../agent/src/engines/release.ts";
import { MirrorServer, releaseZip, sha256Hex, standinSource } from "./helpers/mirror.ts";

const run = promisify(execFile);
const LINUX = { os: "linux", arch: "amd64" };
const mirror = new MirrorServer();
let dataDir: string;

beforeAll(() => mirror.start());
afterAll(() => mirror.stop());
beforeEach(() => {
  dataDir = mkdtempSync(path.join(tmpdir(), "outpost-engines-"));
  mirror.files.clear();
  mirror.requests.length = 0;
  mirror.delayMs = 0;
});
afterEach(() => rmSync(dataDir, { recursive: true, force: true }));

function install(engine: "terraform" | "tofu", version: string, searchPath = "") {
  return ensureEngine({
    engine,
    version,
    dataDir,
    releaseMirror: mirror.url,
    platform: LINUX,
    searchPath,
  });
}

async function reportedVersion(binary: string): Promise<string> {
  const { stdout } = await run(binary, ["version", "-json"]);
  return (JSON.parse(stdout) as { terraform_version: string }).terraform_version;
}

function leftovers(engine: string): string[] {
  return readdirSync(path.join(dataDir, "engines", engine)).filter((f) => f.startsWith(".tmp"));
}

describe("ensureEngine", () => {
  it("downloads, verifies against SHA256SUMS, extracts and caches per version", async () => {
    mirror.publish("terraform", "1.9.5");
    const first = await install("terraform", "1.9.5");
    expect(first).toEqual({
      path: path.join(dataDir, "engines/terraform/1.9.5/terraform"),
      source: "download",
    });
    expect(await reportedVersion(first.path)).toBe("1.9.5");
    expect(mirror.requests).toEqual([
      "/terraform/1.9.5/terraform_1.9.5_SHA256SUMS",
      "/terraform/1.9.5/terraform_1.9.5_linux_amd64.zip",
    ]);

    const second = await install("terraform", "1.9.5");
    expect(second.source).toBe("cache");
    expect(mirror.requests).toHaveLength(2);
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
    const script = `
      import { ensureEngine } from ${JSON.stringify(path.resolve("agent/src/engines/install.ts"))};
      const r = await ensureEngine({ engine: "terraform", version: "1.7.0", dataDir: process.argv[1],
        releaseMirror: process.argv[2], platform: { os: "linux", arch: "amd64" } });
      process.stdout.write(r.path);`;
    const child = () =>
      new Promise<string>((resolve, reject) => {
        const p = spawn(process.execPath, [
          "--input-type=module",
          "-e",
          script,
          dataDir,
          mirror.url,
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
      platform: LINUX,
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
    expect(found).toEqual({ path: path.join(bin, "terraform"), source: "path" });
    expect(mirror.requests).toEqual([]);

    mirror.publish("terraform", "1.9.5");
    const downloaded = await install("terraform", "1.9.5", searchPath);
    expect(downloaded.source).toBe("download");
  });
});

describe("releaseLocation", () => {
  it("defaults to the official release sites and file names", () => {
    expect(releaseLocation("terraform", "1.9.5", LINUX, null)).toEqual({
      zipName: "terraform_1.9.5_linux_amd64.zip",
      zipUrl: "https://releases.hashicorp.com/terraform/1.9.5/terraform_1.9.5_linux_amd64.zip",
      sumsUrl: "https://releases.hashicorp.com/terraform/1.9.5/terraform_1.9.5_SHA256SUMS",
    });
    expect(releaseLocation("tofu", "1.8.3", { os: "darwin", arch: "arm64" }, null)).toEqual({
      zipName: "tofu_1.8.3_darwin_arm64.zip",
      zipUrl:
        "https://github.com/opentofu/opentofu/releases/download/v1.8.3/tofu_1.8.3_darwin_arm64.zip",
      sumsUrl:
        "https://github.com/opentofu/opentofu/releases/download/v1.8.3/tofu_1.8.3_SHA256SUMS",
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
