/**
 * Engine version constraints: the protocol's parser, the one resolver with Terraform's rules
 * and with Pulumi's semver ranges, each engine's index shape, and resolution against a real
 * (loopback) mirror's release index, with the same failures for every engine.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { parseVersionConstraint } from "@outpost/protocol";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MAX_LIST_BYTES } from "../../agent/src/engines/fetch.ts";
import {
  PULUMI_RELEASE,
  parsePulumiVersionOutput,
} from "../../agent/src/engines/pulumi-release.ts";
import { EngineInstallError, type EngineRelease } from "../../agent/src/engines/release.ts";
import { type ResolveOptions, resolveEngineVersion } from "../../agent/src/engines/resolve.ts";
import { terraformDriver } from "../../agent/src/engines/terraform.ts";
import { isExactVersion, resolveVersion } from "../../agent/src/engines/versions.ts";
import { MirrorServer, standinSource } from "./helpers/mirror.ts";

const TERRAFORM = terraformDriver.release("terraform");
const TOFU = terraformDriver.release("tofu");
const RELEASES: Record<string, EngineRelease> = {
  terraform: TERRAFORM,
  tofu: TOFU,
  pulumi: PULUMI_RELEASE,
};
const dataDir = mkdtempSync(path.join(tmpdir(), "outpost-versions-"));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

const OFFERED = [
  "1.5.7",
  "1.6.0",
  "1.6.2",
  "1.7.5",
  "1.8.0",
  "1.9.0",
  "1.9.8",
  "1.10.0-beta1",
  "1.10.1",
  "2.0.0-alpha1",
  "2.0.1",
];

describe("resolveVersion", () => {
  it.each([
    ["latest", "2.0.1"],
    ["1.9.0", "1.9.0"],
    ["~> 1.9", "1.10.1"],
    ["~> 1.9.0", "1.9.8"],
    ["~> 1.6.1", "1.6.2"],
    [">= 1.6, < 2.0", "1.10.1"],
    [">= 1.6, < 1.9", "1.8.0"],
    ["> 1.9.8, != 1.10.1, < 2.1", "2.0.1"],
    [">= 1.9, != 1.10.1, < 2", "1.9.8"],
    ["<= 1.7.5", "1.7.5"],
    ["= 1.10.0-beta1", "1.10.0-beta1"],
    ["1.10.0-beta1", "1.10.0-beta1"],
    ["~> 2.0", "2.0.1"],
    ["~> 1", "2.0.1"],
  ])("%s resolves to %s", (constraint, expected) => {
    expect(resolveVersion(constraint, OFFERED)).toEqual({ ok: true, version: expected });
  });

  it("never picks a pre-release unless it is named", () => {
    expect(resolveVersion(">= 1.10.0-beta1, < 1.10.1", OFFERED)).toMatchObject({ ok: false });
    expect(resolveVersion("latest", ["1.0.0", "1.1.0-rc1"])).toEqual({
      ok: true,
      version: "1.0.0",
    });
  });

  it("explains what is offered when nothing matches", () => {
    const none = resolveVersion("~> 3.1", OFFERED);
    expect(none.ok).toBe(false);
    expect(!none.ok && none.reason).toMatch(
      /no version satisfies "~> 3.1"; the newest offered are 2.0.1, 2.0.0-alpha1/,
    );
    expect(resolveVersion("latest", [])).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/lists no versions/),
    });
  });

  it("refuses what does not parse, with the part that is wrong", () => {
    for (const bad of [
      "",
      "newest",
      "~> 1.9.x",
      ">= 1.6,",
      "^1.9",
      "1.9.5 || 2.0.0",
      "~> 1.9.0-rc1",
      "01.2.3",
    ]) {
      const parsed = parseVersionConstraint(bad);
      expect(parsed.ok, bad).toBe(false);
    }
    expect(parseVersionConstraint(">= 1.6, < 2.0")).toEqual({
      ok: true,
      value: {
        kind: "range",
        comparators: [
          { operator: ">=", version: "1.6.0", segments: 2 },
          { operator: "<", version: "2.0.0", segments: 2 },
        ],
      },
    });
  });
});

describe("each engine's index shape", () => {
  it("reads the releases.hashicorp.com and get.opentofu.org shapes", () => {
    expect(
      TERRAFORM.versionsOf({ name: "terraform", versions: { "1.9.5": {}, "1.9.4": {} } }),
    ).toEqual(["1.9.5", "1.9.4"]);
    expect(TOFU.versionsOf({ versions: [{ id: "1.8.0" }, { id: "v1.7.1" }] })).toEqual([
      "1.8.0",
      "1.7.1",
    ]);
    for (const release of [TERRAFORM, TOFU, PULUMI_RELEASE]) {
      expect(release.versionsOf({ nothing: true })).toEqual([]);
      expect(release.versionsOf(null)).toEqual([]);
    }
  });

  it("reads Pulumi's mirror index (the releases.hashicorp.com shape) and pulumi's version line", () => {
    expect(PULUMI_RELEASE.versionsOf({ versions: { "3.1.0": {}, junk: {} } })).toEqual(["3.1.0"]);
    // One shape per engine: a bare list is not Pulumi's index.
    expect(PULUMI_RELEASE.versionsOf(["3.2.0", 7])).toEqual([]);
    expect(parsePulumiVersionOutput("v3.150.0\n")).toBe("3.150.0");
    expect(parsePulumiVersionOutput("warning: something")).toBeNull();
  });
});

describe("what an exact version is", () => {
  it("is the protocol's rule for every engine: no v, no build metadata, no leading zeros", () => {
    for (const exact of ["1.9.5", "1.10.0-beta1", "3.150.0", "4.0.0-beta.1", "0.0.0"]) {
      expect(isExactVersion(exact), exact).toBe(true);
    }
    for (const not of ["v1.9.5", "3.150.0+build.7", "01.2.3", "1.9", "latest", "^3.150"]) {
      expect(isExactVersion(not), not).toBe(false);
    }
    // A pulumi that reports build metadata offers no version, rather than a wrong one.
    expect(parsePulumiVersionOutput("v3.150.0+dirty")).toBeNull();
  });
});

describe("resolveVersion with semver ranges (Pulumi)", () => {
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
    const resolved = resolveVersion(constraint, offered, "semver");
    expect(resolved.ok ? resolved.version : null).toBe(expected);
  });
});

describe("resolveEngineVersion against a mirror", () => {
  const mirror = new MirrorServer();
  beforeAll(async () => {
    await mirror.start();
    for (const version of ["1.8.5", "1.9.5", "1.9.7", "1.10.0-rc1"]) {
      mirror.listInIndex("terraform", version);
    }
    mirror.publishPulumi("3.150.0");
    mirror.publishPulumi("3.151.2");
  });
  afterAll(() => mirror.stop());

  /** The resolver as a job calls it, against the loopback mirror. */
  function resolve(engine: string, constraint: string, options: Partial<ResolveOptions> = {}) {
    const release = RELEASES[engine];
    if (release === undefined) {
      throw new Error(`no release for ${engine}`);
    }
    return resolveEngineVersion(release, constraint, {
      releaseMirror: mirror.url,
      dataDir,
      searchPath: "",
      retryBaseMs: 1,
      ...options,
    });
  }

  it("resolves a constraint with the newest listed version and says so", async () => {
    const lines: string[] = [];
    const version = await resolve("terraform", "~> 1.9.0", {
      onProgress: (line) => lines.push(line),
    });
    expect(version).toBe("1.9.7");
    expect(lines).toEqual([
      `Resolving terraform "~> 1.9.0" against ${mirror.url}/terraform/index.json`,
      `Using terraform 1.9.7 (newest for "~> 1.9.0" in ${mirror.url}/terraform/index.json)`,
    ]);
    expect(await resolve("terraform", "latest")).toBe("1.9.7");
    const pulumi: string[] = [];
    expect(await resolve("pulumi", "^3.150", { onProgress: (l) => pulumi.push(l) })).toBe(
      "3.151.2",
    );
    expect(pulumi).toEqual([
      `Resolving pulumi "^3.150" against ${mirror.url}/pulumi/index.json`,
      `Using pulumi 3.151.2 (newest for "^3.150" in ${mirror.url}/pulumi/index.json)`,
    ]);
  });

  it("reads a mirror's OpenTofu index in get.opentofu.org's shape", async () => {
    const mirrorOfTofu = new MirrorServer();
    await mirrorOfTofu.start();
    try {
      mirrorOfTofu.listInIndex("tofu", "1.8.3");
      mirrorOfTofu.listInIndex("tofu", "1.9.0");
      expect(await resolve("tofu", "~> 1.8.0", { releaseMirror: mirrorOfTofu.url })).toBe("1.8.3");
      expect(await resolve("tofu", "latest", { releaseMirror: mirrorOfTofu.url })).toBe("1.9.0");
    } finally {
      await mirrorOfTofu.stop();
    }
  });

  it("uses an exact version without reading the index", async () => {
    const before = mirror.requests.length;
    expect(await resolve("terraform", "1.2.3")).toBe("1.2.3");
    expect(await resolve("pulumi", "3.0.0")).toBe("3.0.0");
    expect(mirror.requests.length).toBe(before);
  });

  it("resolves against the index when there is one, else against the cache and PATH", async () => {
    const bin = path.join(dataDir, "host-bin");
    mkdirSync(bin, { recursive: true });
    writeFileSync(path.join(bin, "terraform"), standinSource("1.9.9"), { mode: 0o755 });
    writeFileSync(path.join(bin, "pulumi"), "#!/bin/sh\necho v3.160.0\n", { mode: 0o755 });
    mkdirSync(path.join(dataDir, "engines/pulumi/3.155.0/pulumi"), { recursive: true });
    writeFileSync(path.join(dataDir, "engines/pulumi/3.155.0/pulumi/pulumi"), "", { mode: 0o755 });
    // The stand-in terraform is a Node script: PATH must find node too.
    const searchPath = `${bin}${path.delimiter}${process.env.PATH ?? ""}`;
    // A newer engine on the host's PATH is not what the mirror offers: the index decides.
    expect(await resolve("terraform", "~> 1.9.0", { searchPath })).toBe("1.9.7");
    expect(await resolve("pulumi", "^3", { searchPath: bin })).toBe("3.151.2");
    // Pulumi publishes no index: without a mirror, the cache and PATH offer its versions.
    const lines: string[] = [];
    expect(
      await resolve("pulumi", "<3.158", { releaseMirror: null, onProgress: (l) => lines.push(l) }),
    ).toBe("3.155.0");
    expect(lines).toEqual([
      'Resolving pulumi "<3.158" against the engines on this agent (its cache and PATH): pulumi publishes no release index and --release-mirror is not set (the official release sites)',
      'Using pulumi 3.155.0 in the agent\'s cache: the newest on this agent for "<3.158", because pulumi publishes no release index and --release-mirror is not set (the official release sites)',
    ]);
    expect(await resolve("pulumi", "^3", { releaseMirror: null, searchPath: bin })).toBe("3.160.0");
    await expect(resolve("pulumi", "^4", { releaseMirror: null })).rejects.toThrow(
      new EngineInstallError(
        "cannot resolve pulumi \"^4\": pulumi publishes no release index and --release-mirror is not set (the official release sites), and no pulumi on this agent satisfies it (found: 3.155.0 in the agent's cache); pin the workspace's engine version to one this agent has, or set --release-mirror to a mirror it can reach",
      ),
    );
  });

  it("fails in words when the index is missing or nothing matches", async () => {
    await expect(resolve("tofu", "latest")).rejects.toThrow(
      new EngineInstallError(`the release index ${mirror.url}/tofu/index.json answered 404`),
    );
    await expect(resolve("terraform", ">= 2.0")).rejects.toThrow(
      /no version satisfies ">= 2.0"; the newest offered are 1.10.0-rc1, 1.9.7/,
    );
  });

  it("fails every engine the same way when the index cannot be read", async () => {
    mirror.files.set("/tofu/index.json", Buffer.from("{not json"));
    mirror.files.set("/pulumi/index.json", Buffer.alloc(MAX_LIST_BYTES + 1, 32));
    await expect(resolve("tofu", "latest")).rejects.toThrow(
      new EngineInstallError(`the release index ${mirror.url}/tofu/index.json is not JSON`),
    );
    await expect(resolve("pulumi", "^3.150")).rejects.toThrow(
      new EngineInstallError(
        `the release index ${mirror.url}/pulumi/index.json is larger than ${MAX_LIST_BYTES} bytes`,
      ),
    );
    mirror.files.set("/tofu/index.json", Buffer.from(JSON.stringify({ versions: [] })));
    await expect(resolve("tofu", "latest")).rejects.toThrow(
      new EngineInstallError(`the release index ${mirror.url}/tofu/index.json lists no versions`),
    );
    // Unreachable is another matter: see "without a reachable index".
    await expect(resolve("terraform", ">= 2.0")).rejects.toThrow(
      `(release index ${mirror.url}/terraform/index.json; --release-mirror is ${mirror.url})`,
    );
  });
});

/**
 * No internet: when the release index cannot be reached at all, `latest` and constraints resolve
 * against the engines the agent has (cache and PATH), and the log says which and why; an index
 * that answers always decides, whatever is on PATH.
 */
describe("without a reachable index", () => {
  const offline = "http://127.0.0.1:1";
  let home: string;
  let searchPath: string;
  beforeAll(() => {
    home = mkdtempSync(path.join(tmpdir(), "outpost-offline-"));
    const bin = path.join(home, "bin");
    mkdirSync(bin);
    writeFileSync(path.join(bin, "terraform"), standinSource("1.9.5"), { mode: 0o755 });
    // A binary that answers nothing usable is listed, not chosen.
    writeFileSync(path.join(bin, "tofu"), "#!/bin/sh\nexit 3\n", { mode: 0o755 });
    const cached = path.join(home, "data/engines/terraform/1.8.0");
    mkdirSync(cached, { recursive: true });
    writeFileSync(path.join(cached, "terraform"), "", { mode: 0o755 });
    // The stand-in is a Node script: PATH must find node too, and nothing else (this host has a
    // real terraform in /usr/local/bin, which must not decide these answers).
    searchPath = `${bin}${path.delimiter}${path.dirname(process.execPath)}`;
  });
  afterAll(() => rmSync(home, { recursive: true, force: true }));

  function resolveOffline(engine: string, constraint: string, lines: string[] = []) {
    const release = RELEASES[engine];
    if (release === undefined) {
      throw new Error(`no release for ${engine}`);
    }
    return resolveEngineVersion(release, constraint, {
      releaseMirror: offline,
      dataDir: path.join(home, "data"),
      searchPath,
      retryBaseMs: 1,
      onProgress: (line) => lines.push(line),
    });
  }

  it("resolves latest to the newest engine on PATH or in the cache, and says why", async () => {
    const lines: string[] = [];
    expect(await resolveOffline("terraform", "latest", lines)).toBe("1.9.5");
    const why = `the release index ${offline}/terraform/index.json is unreachable (cannot download ${offline}/terraform/index.json: `;
    expect(lines[0]).toBe(`Resolving terraform "latest" against ${offline}/terraform/index.json`);
    // Every attempt is tried first, and each retry is in the log.
    expect(lines.filter((l) => l.startsWith("Release index attempt"))).toHaveLength(4);
    expect(lines.at(-2)).toContain(
      `Resolving terraform "latest" against the engines on this agent (its cache and PATH): ${why}`,
    );
    expect(lines.at(-1)).toMatch(
      new RegExp(
        `^Using terraform 1\\.9\\.5 at ${home}/bin/terraform: the newest on this agent for "latest", because the release index .+ is unreachable`,
      ),
    );
    expect(await resolveOffline("terraform", "~> 1.8.0")).toBe("1.8.0");
  });

  it("names what was asked, what was found and the mirror setting when nothing matches", async () => {
    await expect(resolveOffline("terraform", "~> 1.10")).rejects.toThrow(
      new RegExp(
        `^cannot resolve terraform "~> 1\\.10": the release index ${offline}/terraform/index\\.json is unreachable \\(.+\\), and no terraform on this agent satisfies it \\(found: 1\\.8\\.0 in the agent's cache, 1\\.9\\.5 at ${home}/bin/terraform\\); pin the workspace's engine version to one this agent has, or set --release-mirror to a mirror it can reach$`,
      ),
    );
    await expect(resolveOffline("tofu", "latest")).rejects.toThrow(
      `and no tofu on this agent satisfies it (found: no version reported at ${home}/bin/tofu)`,
    );
  });

  it("never lets PATH or the cache compete with an index that answers", async () => {
    const answering = new MirrorServer();
    await answering.start();
    try {
      answering.listInIndex("terraform", "1.7.0");
      const release = TERRAFORM;
      const settings = { dataDir: path.join(home, "data"), searchPath, retryBaseMs: 1 };
      // Newer engines on PATH (1.9.5) and in the cache (1.8.0): the index's 1.7.0 is latest.
      expect(
        await resolveEngineVersion(release, "latest", {
          ...settings,
          releaseMirror: answering.url,
        }),
      ).toBe("1.7.0");
      // An index that answers 404 is a broken mirror, not an offline one: no fallback.
      await expect(
        resolveEngineVersion(TOFU, "latest", { ...settings, releaseMirror: answering.url }),
      ).rejects.toThrow(`the release index ${answering.url}/tofu/index.json answered 404`);
    } finally {
      await answering.stop();
    }
  });
});
