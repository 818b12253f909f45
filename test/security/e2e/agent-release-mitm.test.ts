/**
 * Issue 25, finding 8: a man in the middle between the agent and its coordinator announced
 * `Outpost-Agent-Version: 9.9.9` and served a release whose SHA-256 it chose, and the agent ran
 * it as itself. Here a real loopback proxy does exactly that to the real built agent (installed
 * as install.sh installs it, so it can update itself) talking to the real coordinator: it
 * forwards everything, adds the header to every agent answer, and answers the release itself.
 * Each forgery is refused, saying which check failed, the agent's file is untouched, nothing of
 * the attacker's is downloaded or run, and the agent keeps working.
 *
 * The agent also refuses a plain-http coordinator address that is not loopback unless
 * `--insecure-http` says so; with it, the same forgery is still refused.
 */
import { createHash, generateKeyPairSync } from "node:crypto";
import { cpSync, existsSync, mkdirSync, readFileSync } from "node:fs";
import { createServer, type IncomingMessage, request, type Server } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import path from "node:path";
import { AgentRelease } from "@outpost/protocol";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import agentPackage from "../../../agent/package.json" with { type: "json" };
import { DEFAULT_DIST_DIR } from "../../../agent/scripts/build.ts";
import { releaseKeyText, signManifest } from "../../../agent/src/update/release-signature.ts";
import { createWorkspace, queueRun, uploadConfiguration } from "../../e2e/helpers/e2e.ts";
import { type AgentProcess, exitWithin } from "../../e2e/helpers/processes.ts";
import { useWorld } from "../../e2e/helpers/world.ts";
import { testReleaseKey, testReleaseSigningKey } from "../../node/helpers/release-key.ts";

const FORGED_VERSION = "9.9.9";
const EVIL_PATH = `/agent/v1/releases/${FORGED_VERSION}/outpost-agent.mjs`;
const sha256 = (bytes: Buffer) => createHash("sha256").update(bytes).digest("hex");

const world = useWorld();
let mitm: Mitm;
let marker = "";
/** The attacker's build: it leaves {@link marker} behind if it ever runs. */
let evil: Buffer = Buffer.alloc(0);
/** What the man in the middle serves at {@link EVIL_PATH} (the attacker's build unless told). */
let served: Buffer = Buffer.alloc(0);

/** What the man in the middle answers for `GET /agent/v1/release`. */
type Forgery = (real: AgentRelease) => AgentRelease;

/**
 * A forward proxy (the agent's HTTP_PROXY and so its jobs') that sends requests for the
 * coordinator, under whatever host name the agent was given for it, to the coordinator (other
 * hosts, the engine mirror, as they are), adds `Outpost-Agent-Version: 9.9.9` to each agent answer, answers the release
 * with `forgery`, and serves its own build at {@link EVIL_PATH}.
 */
class Mitm {
  forgery: Forgery = (real) => real;
  /** Requests for the attacker's build. */
  evilDownloads = 0;
  private server: Server | null = null;
  private readonly sockets = new Set<Socket>();

  /** Host names (`host:port`) the agent may call the coordinator by. */
  readonly coordinatorHosts = new Set<string>();

  private readonly coordinator: string;

  constructor(coordinator: string) {
    this.coordinator = coordinator;
    this.coordinatorHosts.add(new URL(coordinator).host);
  }

  get url(): string {
    const address = this.server?.address() as AddressInfo | null | undefined;
    return `http://127.0.0.1:${address?.port ?? 0}`;
  }

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      const target = new URL(req.url ?? "/", this.coordinator);
      if (!this.coordinatorHosts.has(target.host)) {
        this.forward(req, target, target.origin, (status, headers, body) => {
          res.writeHead(status, headers);
          body.pipe(res);
        });
        return;
      }
      if (target.pathname === EVIL_PATH) {
        this.evilDownloads += 1;
        res.writeHead(200).end(served);
        return;
      }
      if (target.pathname === "/agent/v1/release") {
        this.forgedRelease().then(
          (body) => {
            res.writeHead(200, { "content-type": "application/json" });
            res.end(JSON.stringify(body));
          },
          () => res.writeHead(502).end(),
        );
        return;
      }
      this.forward(req, target, this.coordinator, (status, headers, body) => {
        if (target.pathname.startsWith("/agent/v1/")) {
          headers["outpost-agent-version"] = FORGED_VERSION;
        }
        res.writeHead(status, headers);
        body.pipe(res);
      });
    });
    this.server.on("connection", (socket) => {
      this.sockets.add(socket);
      socket.on("close", () => this.sockets.delete(socket));
    });
    await new Promise<void>((resolve) => this.server?.listen(0, "127.0.0.1", resolve));
  }

  private async forgedRelease(): Promise<AgentRelease> {
    const real = AgentRelease.parse(
      await (await fetch(`${this.coordinator}/agent/v1/release`)).json(),
    );
    return this.forgery(real);
  }

  /** Sends `req` (for `target`) to `origin` and hands its answer to `answer`. */
  private forward(
    req: IncomingMessage,
    target: URL,
    origin: string,
    answer: (status: number, headers: IncomingMessage["headers"], body: IncomingMessage) => void,
  ): void {
    const to = new URL(origin);
    const upstream = request(
      {
        host: to.hostname,
        port: to.port,
        path: `${target.pathname}${target.search}`,
        method: req.method,
        headers: { ...req.headers, host: to.host },
      },
      (res) => answer(res.statusCode ?? 502, { ...res.headers }, res),
    );
    upstream.on("error", () => undefined);
    req.pipe(upstream);
  }

  async stop(): Promise<void> {
    for (const socket of this.sockets) {
      socket.destroy();
    }
    await new Promise((resolve) => this.server?.close(resolve));
  }
}

/** A manifest naming the served build as `version`. */
function forgedManifest(version: string): string {
  const file = { path: EVIL_PATH, sha256: sha256(served), sizeBytes: served.length };
  return `${JSON.stringify(
    { version, agent: file, npmPackage: file, dockerfile: file, systemdUnit: file },
    null,
    2,
  )}\n`;
}

/** The release answer pointing at the served build, with `manifest` and `signature`. */
function forged(
  real: AgentRelease,
  manifest: string,
  signature: AgentRelease["signature"],
): AgentRelease {
  return {
    ...real,
    version: FORGED_VERSION,
    url: `${world.coordinator.url}${EVIL_PATH}`,
    sha256: sha256(served),
    sizeBytes: served.length,
    manifest,
    signature,
  };
}

/** An agent build claiming {@link FORGED_VERSION} that writes its uid to `file` whenever it runs. */
function buildThatLeaves(file: string): Buffer {
  return Buffer.from(
    `import { writeFileSync } from "node:fs";\nwriteFileSync(${JSON.stringify(file)}, String(process.getuid()));\nconsole.log(${JSON.stringify(FORGED_VERSION)});\n`,
  );
}

beforeAll(async () => {
  mitm = new Mitm(world.coordinator.url);
  await mitm.start();
  marker = path.join(world.dir, "attacker-code-ran");
  evil = buildThatLeaves(marker);
  served = evil;
}, 120_000);

afterAll(async () => {
  await mitm?.stop();
});

/** The built agent, installed as install.sh installs it: a file it may replace. */
function installBuiltAgent(): string {
  const lib = path.join(world.freshDir("mitm-prefix"), "lib");
  mkdirSync(lib);
  const file = path.join(lib, "outpost-agent.mjs");
  cpSync(path.join(DEFAULT_DIST_DIR, "outpost-agent.mjs"), file);
  return file;
}

/** Starts the built agent behind the man in the middle; resolves once it refused the update. */
async function refusedBehindMitm(
  forgery: Forgery,
  options: { address?: string; args?: string[] } = {},
): Promise<{ agent: AgentProcess; file: string; before: string }> {
  mitm.forgery = forgery;
  const file = installBuiltAgent();
  const before = sha256(readFileSync(file));
  const agent = world.startAgent({
    bin: file,
    dataDir: world.freshDir("mitm-data"),
    args: options.args ?? [],
    env: {
      HTTP_PROXY: mitm.url,
      ...(options.address ? { OUTPOST_ADDRESS: options.address } : {}),
    },
  });
  await agent.waitForOutput(/agent update refused; keeping the running version/, 40_000);
  return { agent, file, before };
}

/**
 * The agent refused, kept its file, ran nothing of the attacker's and still runs; then it is
 * stopped (unless `keep`), so the next test's jobs go to the next test's agent.
 */
async function expectUntouched(
  outcome: { agent: AgentProcess; file: string; before: string },
  keep = false,
): Promise<void> {
  expect(sha256(readFileSync(outcome.file))).toBe(outcome.before);
  expect(existsSync(marker)).toBe(false);
  expect(outcome.agent.child.exitCode).toBeNull();
  expect(outcome.agent.output()).not.toContain("agent updated; restarting in place");
  if (!keep) {
    outcome.agent.kill("SIGTERM");
    expect((await exitWithin(outcome.agent, 30_000)).code).toBe(0);
  }
}

describe("a man in the middle announcing 9.9.9 with a release of its own", () => {
  it("an unsigned release is refused as unsigned, and nothing is downloaded", async () => {
    const outcome = await refusedBehindMitm((real) =>
      forged(real, forgedManifest(FORGED_VERSION), null),
    );
    expect(outcome.agent.output()).toContain(
      `keeping the running version: the release is not signed; this agent trusts ${testReleaseKey()}`,
    );
    await expectUntouched(outcome);
    expect(mitm.evilDownloads).toBe(0);
  });

  it("a release signed by the attacker's own key is refused as another key", async () => {
    const attacker = generateKeyPairSync("ed25519").privateKey;
    const manifest = forgedManifest(FORGED_VERSION);
    const outcome = await refusedBehindMitm((real) =>
      forged(real, manifest, signManifest(manifest, attacker)),
    );
    expect(outcome.agent.output()).toContain(
      `keeping the running version: the release is signed by a different key, ${releaseKeyText(attacker)}; this agent trusts ${testReleaseKey()}`,
    );
    await expectUntouched(outcome);
    expect(mitm.evilDownloads).toBe(0);
  });

  it("the real signature over a manifest changed to name the attacker's build does not verify", async () => {
    const outcome = await refusedBehindMitm((real) =>
      forged(real, forgedManifest(FORGED_VERSION), real.signature),
    );
    expect(outcome.agent.output()).toContain(
      `keeping the running version: the release's signature by ${testReleaseKey()} does not verify: the manifest was changed after it was signed`,
    );
    await expectUntouched(outcome);
    expect(mitm.evilDownloads).toBe(0);
  });

  it("the real signed release replayed under the 9.9.9 header is refused as not newer", async () => {
    const outcome = await refusedBehindMitm((real) => real);
    expect(outcome.agent.output()).toContain(
      `keeping the running version: not newer: the signed release is ${agentPackage.version}, as this agent is`,
    );
    await expectUntouched(outcome);
  });
});

describe("a plain-http coordinator address that is not loopback", () => {
  const address = "http://outpost.lan.example";

  it("is refused at start without --insecure-http", async () => {
    const agent = world.startAgent({ env: { OUTPOST_ADDRESS: address } });
    const exit = await exitWithin(agent, 30_000);
    expect(exit.code).toBe(2);
    expect(agent.output()).toContain(
      `outpost-agent: OUTPOST_ADDRESS ${address} is plain http to a host that is not loopback`,
    );
  });

  it("with --insecure-http, works (warning once), and the forged update is still refused", async () => {
    mitm.coordinatorHosts.add(new URL(address).host);
    const attacker = generateKeyPairSync("ed25519").privateKey;
    const manifest = forgedManifest(FORGED_VERSION);
    const outcome = await refusedBehindMitm(
      (real) => forged(real, manifest, signManifest(manifest, attacker)),
      // A short shutdown grace: the job below cannot finish (see there), so the stop cancels it.
      { address, args: ["--insecure-http", "--shutdown-grace", "1", "--cancel-grace", "2"] },
    );
    const warning = "--insecure-http: talking to the coordinator over plain http";
    expect(outcome.agent.output().split(warning)).toHaveLength(2);
    expect(outcome.agent.output()).toContain("the release is signed by a different key");
    await expectUntouched(outcome, true);
    expect(outcome.agent.output()).toMatch(/registered \{"agentId":"agt_/);
    // The agent still takes jobs through that address (the stand-in engine, which ignores
    // HTTP_PROXY, cannot reach its state there and retries it for minutes, so only the job's
    // start is this test's business; the graceful stop then cancels it and exits 0).
    const ws = await createWorkspace(world, "behind-insecure-http");
    await uploadConfiguration(world, ws, { "main.tf": 'resource "null_resource" "a" {}\n' });
    const runId = await queueRun(world, ws, { operation: "plan", isSpeculative: true });
    await outcome.agent.waitForOutput(new RegExp(`job started \\{"jobId":"${runId}:plan"`), 60_000);
    outcome.agent.kill("SIGTERM");
    expect((await exitWithin(outcome.agent, 30_000)).code).toBe(0);
  });
});

describe("the same man in the middle serving a 9.9.9 signed by the release key", () => {
  it("is believed: the agent downloads it, checks it and runs it in its place", async () => {
    // The control: the refusals above come from the signature, not from a proxy that cannot work.
    const ran = path.join(world.dir, "signed-build-ran");
    served = buildThatLeaves(ran);
    mitm.forgery = (real) => {
      const manifest = forgedManifest(FORGED_VERSION);
      return forged(real, manifest, signManifest(manifest, testReleaseSigningKey()));
    };
    const downloadsBefore = mitm.evilDownloads;
    const file = installBuiltAgent();
    const agent = world.startAgent({
      bin: file,
      dataDir: world.freshDir("mitm-data"),
      env: { HTTP_PROXY: mitm.url },
    });
    await agent.waitForOutput(/agent updated; restarting in place/, 40_000);
    // The update replaced the process with the signed build, which ran and exited.
    expect((await exitWithin(agent, 30_000)).code).toBe(0);
    expect(sha256(readFileSync(file))).toBe(sha256(served));
    expect(readFileSync(ran, "utf8")).toBe(String(process.getuid?.()));
    expect(mitm.evilDownloads).toBe(downloadsBefore + 1);
    expect(existsSync(marker)).toBe(false);
  });
});
