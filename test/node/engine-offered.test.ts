/**
 * What an agent reports at registration as the engine versions it offers: the newest its
 * mirror's index lists (the real loopback mirror), the verified installs in its cache (a real
 * install), and the stand-in binaries on its PATH with the version each reports. No mirror: only
 * what it has. A mirror that does not answer only leaves its versions out.
 */
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { DRIVERS, driverFor } from "../../agent/src/engines/drivers.ts";
import { installEngine } from "../../agent/src/engines/install.ts";
import { OFFERED_PER_SOURCE, offeredEngineVersions } from "../../agent/src/engines/offered.ts";
import { MirrorServer, standinSource } from "./helpers/mirror.ts";
import { type TestSigner, testSigner, trustedKeyOf } from "./helpers/signing.ts";

const mirror = new MirrorServer();
let signer: TestSigner;
let dataDir: string;
let bin: string;
/** The host bin directory of the test and the stand-ins' interpreter. */
const searchPath = () => `${bin}${path.delimiter}${path.dirname(process.execPath)}`;

beforeAll(async () => {
  [signer] = await Promise.all([testSigner(), mirror.start()]);
  mirror.signer = signer;
});
afterAll(() => mirror.stop());
beforeEach(() => {
  dataDir = mkdtempSync(path.join(tmpdir(), "outpost-offered-"));
  bin = path.join(dataDir, "host-bin");
  mkdirSync(bin);
  mirror.files.clear();
});
afterEach(() => rmSync(dataDir, { recursive: true, force: true }));

function onPath(engine: string, version: string): void {
  writeFileSync(path.join(bin, engine), standinSource(version));
  chmodSync(path.join(bin, engine), 0o755);
}

describe("the engine versions an agent offers", () => {
  it("lists the mirror's newest, its cache and its PATH, each with its source", async () => {
    for (const version of ["1.8.0", "1.9.5", "1.10.0-beta1"]) {
      mirror.publish("terraform", version, { os: process.platform, arch: "amd64" });
    }
    mirror.publish("tofu", "1.8.3", { os: process.platform, arch: "amd64" });
    const release = driverFor("terraform", DRIVERS)?.release("terraform");
    if (!release) {
      throw new Error("no terraform driver");
    }
    await installEngine(release, "1.8.0", {
      dataDir,
      releaseMirror: mirror.url,
      platform: { os: process.platform, arch: "amd64" },
      searchPath: "",
      engineKeyring: [trustedKeyOf(signer)],
    });
    onPath("terraform", "1.6.6");

    const offered = await offeredEngineVersions({
      releaseMirror: mirror.url,
      dataDir,
      searchPath: searchPath(),
    });
    expect(offered).toEqual([
      { engine: "terraform", version: "1.10.0-beta1", source: "mirror" },
      { engine: "terraform", version: "1.9.5", source: "mirror" },
      { engine: "terraform", version: "1.8.0", source: "mirror" },
      { engine: "terraform", version: "1.8.0", source: "cache" },
      { engine: "terraform", version: "1.6.6", source: "path" },
      { engine: "tofu", version: "1.8.3", source: "mirror" },
    ]);
  });

  it("reports only the newest releases of a long index", async () => {
    for (let patch = 0; patch < OFFERED_PER_SOURCE + 5; patch++) {
      mirror.publish("terraform", `1.9.${patch}`, { os: process.platform, arch: "amd64" });
    }
    const offered = await offeredEngineVersions({
      releaseMirror: mirror.url,
      dataDir,
      searchPath: "",
    });
    expect(offered).toHaveLength(OFFERED_PER_SOURCE);
    expect(offered[0]).toEqual({ engine: "terraform", version: "1.9.24", source: "mirror" });
  });

  it("without a mirror, or with one that does not answer, reports what the agent has", async () => {
    onPath("tofu", "1.7.2");
    for (const releaseMirror of [null, "http://127.0.0.1:1"]) {
      expect(
        await offeredEngineVersions({ releaseMirror, dataDir, searchPath: searchPath() }),
      ).toEqual([{ engine: "tofu", version: "1.7.2", source: "path" }]);
    }
  });
});
