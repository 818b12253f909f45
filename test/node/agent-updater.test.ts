/**
 * The updater against a loopback coordinator stand-in serving `/agent/v1/release` and the
 * build over real HTTP: it believes only a manifest signed by a key it trusts (refusing an
 * unsigned release, another key, a changed manifest, a downgrade, saying which), downloads only
 * from the configured address, checks the SHA-256 the signed manifest gives and that the build
 * runs, replaces the agent file by rename, and on any failure leaves the file as it was, logs
 * the cause and tries again later.
 */
import { createHash, generateKeyPairSync, type KeyObject } from "node:crypto";
import {
  chmodSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createLogger } from "../../agent/src/logger.ts";
import { releaseKeyText, signManifest } from "../../agent/src/update/release-signature.ts";
import { Updater } from "../../agent/src/update/updater.ts";

const base = mkdtempSync(path.join(tmpdir(), "outpost-updater-"));
let server: Server;
let address = "";
/** What the stand-in serves: the release answer and the file bytes by path. */
let served: { release: Record<string, unknown> | null; files: Map<string, Buffer> };
const requests: string[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    requests.push(req.url ?? "");
    if (req.url === "/agent/v1/release" && served.release !== null) {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify(served.release));
      return;
    }
    const file = served.files.get(req.url ?? "");
    if (file === undefined) {
      res.writeHead(404).end("not found");
      return;
    }
    res.writeHead(200).end(file);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const bound = server.address();
  address = `http://127.0.0.1:${typeof bound === "object" && bound ? bound.port : 0}`;
});
afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
  rmSync(base, { recursive: true, force: true });
});

const script = (version: string) => Buffer.from(`console.log(${JSON.stringify(version)});\n`);
const digest = (bytes: Buffer) => createHash("sha256").update(bytes).digest("hex");

/** The release key this agent trusts, and another one (an attacker's, or a stale one). */
const releaseKey = generateKeyPairSync("ed25519").privateKey;
const otherKey = generateKeyPairSync("ed25519").privateKey;
const TRUSTED = releaseKeyText(releaseKey);

/** A manifest as the build writes it, naming `sha256` for every file of `version`. */
function manifestText(version: string, sizeBytes: number, sha256: string): string {
  const file = (name: string) => ({
    path: `/agent/v1/releases/${version}/${name}`,
    sha256,
    sizeBytes,
  });
  const manifest = {
    version,
    agent: file("outpost-agent.mjs"),
    npmPackage: file(`outpost-agent-${version}.tgz`),
    dockerfile: file("Dockerfile"),
    systemdUnit: file("outpost-agent.service"),
  };
  return `${JSON.stringify(manifest, null, 2)}\n`;
}

/**
 * Serves `bytes` as build `version`: a manifest saying `sha256` (the real digest by default),
 * signed by `signer` (the trusted key by default; null: unsigned) and then changed by `tamper`;
 * the answer's own `url` says `url`.
 */
function serve(
  version: string,
  bytes: Buffer,
  options: {
    sha256?: string;
    url?: string;
    signer?: KeyObject | null;
    tamper?: (text: string) => string;
  } = {},
) {
  const sha256 = options.sha256 ?? digest(bytes);
  const url = options.url ?? `${address}/agent/v1/releases/${version}/outpost-agent.mjs`;
  const text = manifestText(version, bytes.length, sha256);
  const signer = options.signer === undefined ? releaseKey : options.signer;
  const file = { url, sha256, sizeBytes: bytes.length };
  served = {
    release: {
      version,
      ...file,
      npmPackage: file,
      dockerfile: file,
      systemdUnit: file,
      manifest: options.tamper ? options.tamper(text) : text,
      signature: signer === null ? null : signManifest(text, signer),
    },
    files: new Map([[`/agent/v1/releases/${version}/outpost-agent.mjs`, bytes]]),
  };
}

let dir = "";
let agentFile = "";
let now = 0;
let lines: Array<Record<string, unknown>> = [];

beforeEach(() => {
  dir = mkdtempSync(path.join(base, "install-"));
  agentFile = path.join(dir, "outpost-agent.mjs");
  writeFileSync(agentFile, script("1.0.0"));
  chmodSync(agentFile, 0o750);
  now = 1_000_000;
  lines = [];
  requests.length = 0;
});

function updater(
  options: { enabled?: boolean; fromSources?: boolean; trustedKeys?: string[] } = {},
) {
  return new Updater({
    enabled: options.enabled ?? true,
    currentVersion: "1.0.0",
    agentFile: options.fromSources ? null : agentFile,
    address,
    trustedKeys: options.trustedKeys ?? [TRUSTED],
    userAgent: "test",
    logger: createLogger({
      level: "trace",
      json: true,
      destination: { write: (line) => lines.push(JSON.parse(line) as Record<string, unknown>) },
    }),
    now: () => now,
  });
}

const lastError = () => lines.filter((l) => l.level === 50).at(-1);

describe("Updater", () => {
  it("stages a verified newer build and renames it over the agent file, keeping its mode", async () => {
    serve("1.1.0", script("1.1.0"));
    const u = updater();
    u.offer("1.1.0");
    expect(u.isDue).toBe(true);
    const staged = await u.prepare();
    expect(staged).toMatchObject({ version: "1.1.0", sha256: digest(script("1.1.0")) });
    expect(readFileSync(agentFile, "utf8")).toBe(script("1.0.0").toString());
    expect(staged && (await u.install(staged))).toBe(true);
    expect(readFileSync(agentFile, "utf8")).toBe(script("1.1.0").toString());
    expect(statSync(agentFile).mode & 0o777).toBe(0o750);
    expect(readdirSync(dir)).toEqual(["outpost-agent.mjs"]);
  });

  it("downloads from the configured coordinator whatever origin the release names", async () => {
    serve("1.1.0", script("1.1.0"), {
      url: "http://elsewhere.invalid/agent/v1/releases/1.1.0/outpost-agent.mjs",
    });
    const u = updater();
    u.offer("1.1.0");
    expect(await u.prepare()).not.toBeNull();
    expect(requests).toEqual(["/agent/v1/release", "/agent/v1/releases/1.1.0/outpost-agent.mjs"]);
  });

  it.each([
    [
      "a checksum mismatch",
      () => serve("1.1.0", script("1.1.0"), { sha256: "0".repeat(64) }),
      "checksum mismatch: expected sha256 0000",
    ],
    [
      "a failed download",
      () => {
        serve("1.1.0", script("1.1.0"));
        served.files.clear();
      },
      "answered 404",
    ],
    [
      "a build that does not start",
      () => serve("1.1.0", Buffer.from("this is not javascript(\n")),
      "the new build does not start here: SyntaxError",
    ],
    [
      "a build of another version",
      () => serve("1.1.0", script("2.0.0")),
      "the new build says it is 2.0.0, not 1.1.0",
    ],
    [
      "no release at all",
      () => {
        serve("1.1.0", script("1.1.0"));
        served.release = null;
      },
      "answered 404",
    ],
  ])(
    "leaves the agent file untouched on %s, logs why, and waits before trying again",
    async (_case, setUp, cause) => {
      setUp();
      const u = updater();
      u.offer("1.1.0");
      expect(await u.prepare()).toBeNull();
      expect(readFileSync(agentFile, "utf8")).toBe(script("1.0.0").toString());
      expect(readdirSync(dir)).toEqual(["outpost-agent.mjs"]);
      expect(lastError()).toMatchObject({
        msg: "agent update failed (download); keeping the running version",
        current: "1.0.0",
        available: "1.1.0",
        attempt: 1,
        retryInSeconds: 60,
      });
      expect(String(lastError()?.err)).toContain(cause);
      expect(u.isDue).toBe(false);
      now += 60_000;
      expect(u.isDue).toBe(true);
      expect(await u.prepare()).toBeNull();
      expect(lastError()).toMatchObject({ attempt: 2, retryInSeconds: 120 });
    },
  );

  const evil = Buffer.from('require("node:fs").writeFileSync("pwned", "");console.log("9.9.9");\n');
  it.each([
    [
      "an unsigned release",
      () => serve("1.1.0", script("1.1.0"), { signer: null }),
      `the release is not signed; this agent trusts ${TRUSTED}`,
    ],
    [
      "a release signed by another key",
      () => serve("9.9.9", evil, { signer: otherKey }),
      `the release is signed by a different key, ${releaseKeyText(otherKey)}; this agent trusts ${TRUSTED}`,
    ],
    [
      "a signed manifest changed to name another file's SHA-256",
      () => {
        serve("1.1.0", script("1.1.0"));
        const release = served.release as { manifest: string };
        release.manifest = release.manifest.replaceAll(digest(script("1.1.0")), digest(evil));
        served.files.set("/agent/v1/releases/1.1.0/outpost-agent.mjs", evil);
      },
      `the release's signature by ${TRUSTED} does not verify: the manifest was changed after it was signed`,
    ],
    [
      "a signed older release (a downgrade)",
      () => serve("0.9.0", script("0.9.0")),
      "a downgrade: the signed release is 0.9.0 and this agent is 1.0.0",
    ],
    [
      "the signed release of this very version",
      () => serve("1.0.0", script("1.0.0")),
      "not newer: the signed release is 1.0.0, as this agent is",
    ],
  ])("refuses %s, saying so, before downloading anything", async (_case, setUp, cause) => {
    setUp();
    const u = updater();
    u.offer("1.1.0");
    expect(await u.prepare()).toBeNull();
    expect(requests).toEqual(["/agent/v1/release"]);
    expect(readFileSync(agentFile, "utf8")).toBe(script("1.0.0").toString());
    expect(readdirSync(dir)).toEqual(["outpost-agent.mjs"]);
    expect(lastError()).toMatchObject({
      msg: "agent update refused; keeping the running version",
      current: "1.0.0",
      available: "1.1.0",
      err: cause,
      retryInSeconds: 60,
    });
  });

  it("refuses every release when it trusts no key (built without one, no --release-key)", async () => {
    serve("1.1.0", script("1.1.0"));
    const u = updater({ trustedKeys: [] });
    u.offer("1.1.0");
    expect(await u.prepare()).toBeNull();
    expect(String(lastError()?.err)).toContain("this agent trusts no release key");
    expect(requests).toEqual(["/agent/v1/release"]);
  });

  it("trusts a key given besides the build's (--release-key), e.g. the next key of a rotation", async () => {
    serve("1.1.0", script("1.1.0"), { signer: otherKey });
    const u = updater({ trustedKeys: [TRUSTED, releaseKeyText(otherKey)] });
    u.offer("1.1.0");
    expect(await u.prepare()).toMatchObject({ version: "1.1.0" });
  });

  it("reports a failed rename and keeps the running file", async () => {
    serve("1.1.0", script("1.1.0"));
    const u = updater();
    u.offer("1.1.0");
    const staged = await u.prepare();
    expect(staged).not.toBeNull();
    // The agent file became a directory: rename cannot replace it.
    rmSync(agentFile);
    mkdirSync(agentFile);
    expect(staged && (await u.install(staged))).toBe(false);
    expect(lastError()?.msg).toBe("agent update failed (install); keeping the running version");
    expect(readdirSync(dir)).toEqual(["outpost-agent.mjs"]);
  });

  it("ignores older, equal and malformed versions; does not update when off or from sources", () => {
    const u = updater();
    for (const version of [null, "0.9.0", "1.0.0", "latest"]) {
      u.offer(version);
      expect(u.isDue).toBe(false);
    }
    const off = updater({ enabled: false });
    off.offer("1.1.0");
    expect(off.isDue).toBe(false);
    expect(lines.at(-1)?.msg).toBe("the coordinator ships a newer agent; auto-update is off");
    const sources = updater({ fromSources: true });
    sources.offer("1.1.0");
    expect(sources.isDue).toBe(false);
  });
});
