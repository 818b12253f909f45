/**
 * Engine version constraints: the protocol's parser, the agent's resolution with Terraform's
 * rules, and resolution against a real (loopback) mirror's release index.
 */
import { parseVersionConstraint } from "@outpost/protocol";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EngineInstallError } from "../../agent/src/engines/install.ts";
import { versionsOfIndex } from "../../agent/src/engines/release-index.ts";
import { resolveEngineVersion } from "../../agent/src/engines/resolve.ts";
import { resolveVersion } from "../../agent/src/engines/version-constraint.ts";
import { MirrorServer } from "./helpers/mirror.ts";

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

describe("versionsOfIndex", () => {
  it("reads the releases.hashicorp.com and get.opentofu.org shapes", () => {
    expect(versionsOfIndex({ name: "terraform", versions: { "1.9.5": {}, "1.9.4": {} } })).toEqual([
      "1.9.5",
      "1.9.4",
    ]);
    expect(versionsOfIndex({ versions: [{ id: "1.8.0" }, { id: "v1.7.1" }] })).toEqual([
      "1.8.0",
      "1.7.1",
    ]);
    expect(versionsOfIndex({ nothing: true })).toEqual([]);
    expect(versionsOfIndex(null)).toEqual([]);
  });
});

describe("resolveEngineVersion against a mirror", () => {
  const mirror = new MirrorServer();
  beforeAll(async () => {
    await mirror.start();
    for (const version of ["1.8.5", "1.9.5", "1.9.7", "1.10.0-rc1"]) {
      mirror.listInIndex("terraform", version);
    }
  });
  afterAll(() => mirror.stop());

  it("resolves a constraint with the newest listed version and says so", async () => {
    const lines: string[] = [];
    const version = await resolveEngineVersion({
      engine: "terraform",
      constraint: "~> 1.9.0",
      releaseMirror: mirror.url,
      onProgress: (line) => lines.push(line),
    });
    expect(version).toBe("1.9.7");
    expect(lines).toEqual([
      `Resolving terraform "~> 1.9.0" against ${mirror.url}/terraform/index.json`,
      'Using terraform 1.9.7 (newest for "~> 1.9.0")',
    ]);
    expect(
      await resolveEngineVersion({
        engine: "terraform",
        constraint: "latest",
        releaseMirror: mirror.url,
      }),
    ).toBe("1.9.7");
  });

  it("uses an exact version without reading the index", async () => {
    const before = mirror.requests.length;
    const version = await resolveEngineVersion({
      engine: "terraform",
      constraint: "1.2.3",
      releaseMirror: mirror.url,
    });
    expect(version).toBe("1.2.3");
    expect(mirror.requests.length).toBe(before);
  });

  it("fails in words when the index is missing or nothing matches", async () => {
    await expect(
      resolveEngineVersion({
        engine: "tofu",
        constraint: "latest",
        releaseMirror: mirror.url,
        retryBaseMs: 1,
      }),
    ).rejects.toThrow(
      new EngineInstallError(`the release index ${mirror.url}/tofu/index.json answered 404`),
    );
    await expect(
      resolveEngineVersion({
        engine: "terraform",
        constraint: ">= 2.0",
        releaseMirror: mirror.url,
      }),
    ).rejects.toThrow(/no version satisfies ">= 2.0"; the newest offered are 1.10.0-rc1, 1.9.7/);
  });
});
