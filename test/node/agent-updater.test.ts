/**
 * The updater against a loopback coordinator stand-in serving `/agent/v1/release` and the
 * build over real HTTP: it downloads only from the configured address, checks the SHA-256 and
 * that the build runs, replaces the agent file by rename, and on any failure leaves the file
 * as it was, logs the cause and tries again later.
 */
import { createHash } from "node:crypto";
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

/** Serves `bytes` as build `version`, its answer saying `sha256` (the real digest by default). */
function serve(
  version: string,
  bytes: Buffer,
  sha256 = digest(bytes),
  url = `${address}/agent/v1/releases/${version}/outpost-agent.mjs`,
) {
  const file = { url, sha256, sizeBytes: bytes.length };
  served = {
    release: { version, ...file, npmPackage: file, dockerfile: file, systemdUnit: file },
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

function updater(options: { enabled?: boolean; fromSources?: boolean } = {}) {
  return new Updater({
    enabled: options.enabled ?? true,
    currentVersion: "1.0.0",
    agentFile: options.fromSources ? null : agentFile,
    address,
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
    serve(
      "1.1.0",
      script("1.1.0"),
      undefined,
      "http://elsewhere.invalid/agent/v1/releases/1.1.0/outpost-agent.mjs",
    );
    const u = updater();
    u.offer("1.1.0");
    expect(await u.prepare()).not.toBeNull();
    expect(requests).toEqual(["/agent/v1/release", "/agent/v1/releases/1.1.0/outpost-agent.mjs"]);
  });

  it.each([
    [
      "a checksum mismatch",
      () => serve("1.1.0", script("1.1.0"), "0".repeat(64)),
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
