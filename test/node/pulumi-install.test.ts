/**
 * Installing Pulumi from a loopback release mirror: range resolution against the mirror's
 * index, the SHA-256 check against the release's checksums file, the cache, and the names
 * Pulumi publishes its releases under.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensurePulumi } from "../../agent/src/engines/pulumi-install.ts";
import {
  parsePulumiVersionOutput,
  parseVersionIndex,
  pulumiReleaseLocation,
  resolvePulumiVersion,
} from "../../agent/src/engines/pulumi-release.ts";
import { MirrorServer } from "./helpers/mirror.ts";

const platform = { os: "linux", arch: "amd64" };
const mirror = new MirrorServer();
const dir = mkdtempSync(path.join(tmpdir(), "outpost-pulumi-install-"));

beforeAll(async () => {
  await mirror.start();
  mirror.publishPulumi("3.149.0");
  mirror.publishPulumi("3.150.0");
  mirror.publishPulumi("3.152.1");
  mirror.publishPulumi("4.0.0-beta.1");
});
afterAll(async () => {
  await mirror.stop();
  rmSync(dir, { recursive: true, force: true });
});

function install(constraint: string, dataDir: string) {
  return ensurePulumi({
    constraint,
    dataDir,
    releaseMirror: mirror.url,
    searchPath: "",
    platform,
    retryBaseMs: 1,
  });
}

describe("Pulumi releases", () => {
  it("names archives and checksums as Pulumi publishes them", () => {
    expect(pulumiReleaseLocation("3.150.0", platform, null)).toEqual({
      archiveName: "pulumi-v3.150.0-linux-x64.tar.gz",
      archiveUrl:
        "https://github.com/pulumi/pulumi/releases/download/v3.150.0/pulumi-v3.150.0-linux-x64.tar.gz",
      sumsUrl:
        "https://github.com/pulumi/pulumi/releases/download/v3.150.0/pulumi-3.150.0-checksums.txt",
    });
    expect(
      pulumiReleaseLocation("3.150.0", { os: "darwin", arch: "arm64" }, "https://m/").archiveUrl,
    ).toBe("https://m/pulumi/3.150.0/pulumi-v3.150.0-darwin-arm64.tar.gz");
  });

  it.each([
    ["^3.150", "3.152.1"],
    ["~3.150.0", "3.150.0"],
    [">=3.100 <3.150", "3.149.0"],
    ["latest", "3.152.1"],
    ["3.149.0", "3.149.0"],
    ["^5", null],
    ["not a range", null],
  ])("resolves %s to %s", (constraint, expected) => {
    const offered = ["3.149.0", "3.150.0", "3.152.1", "4.0.0-beta.1"];
    expect(resolvePulumiVersion(constraint, offered)).toBe(expected);
  });

  it("reads both index shapes and pulumi's version line", () => {
    expect(parseVersionIndex({ versions: { "3.1.0": {}, junk: {} } })).toEqual(["3.1.0"]);
    expect(parseVersionIndex(["3.2.0", 7])).toEqual(["3.2.0"]);
    expect(parsePulumiVersionOutput("v3.150.0\n")).toBe("3.150.0");
    expect(parsePulumiVersionOutput("warning: something")).toBeNull();
  });
});

describe("ensurePulumi against a loopback mirror", () => {
  it("resolves a range from the index, verifies the download, then uses the cache", async () => {
    const dataDir = path.join(dir, "data-a");
    const first = await install("^3.150", dataDir);
    expect(first).toMatchObject({ source: "download", version: "3.152.1" });
    expect(first.path).toBe(path.join(dataDir, "engines/pulumi/3.152.1/pulumi/pulumi"));
    const before = mirror.requests.length;
    const second = await install("3.152.1", dataDir);
    expect(second).toMatchObject({ source: "cache", version: "3.152.1" });
    expect(mirror.requests.length).toBe(before);
  });

  it("refuses an archive whose SHA-256 is not the listed one, and installs nothing", async () => {
    const dataDir = path.join(dir, "data-b");
    const key = "/pulumi/3.150.0/pulumi-v3.150.0-linux-x64.tar.gz";
    const good = mirror.files.get(key);
    mirror.files.set(key, Buffer.from("tampered"));
    try {
      await expect(install("3.150.0", dataDir)).rejects.toThrow(
        /checksum mismatch for pulumi-v3\.150\.0-linux-x64\.tar\.gz.*refusing to install/,
      );
    } finally {
      if (good) {
        mirror.files.set(key, good);
      }
    }
    await expect(install("3.150.0", dataDir)).resolves.toMatchObject({ source: "download" });
  });

  it("uses a pulumi on PATH at the resolved version, and downloads when PATH has another", async () => {
    const bin = mkdtempSync(path.join(dir, "bin-"));
    writeFileSync(path.join(bin, "pulumi"), "#!/bin/sh\necho v3.149.0\n", { mode: 0o755 });
    const onPath = await ensurePulumi({
      constraint: "<3.150",
      dataDir: path.join(dir, "data-d"),
      releaseMirror: null,
      searchPath: bin,
      platform,
    });
    expect(onPath).toEqual({ path: path.join(bin, "pulumi"), source: "path", version: "3.149.0" });
    const other = await ensurePulumi({
      constraint: "3.150.0",
      dataDir: path.join(dir, "data-d"),
      releaseMirror: mirror.url,
      searchPath: bin,
      platform,
    });
    expect(other).toMatchObject({ source: "download", version: "3.150.0" });
  });

  it("says which versions it saw when none satisfies the range", async () => {
    await expect(install("^9", path.join(dir, "data-c"))).rejects.toThrow(
      /no pulumi version satisfies "\^9".*3\.152\.1/,
    );
  });
});
