/**
 * The one test world of the end-to-end files: the real coordinator (scripts/local-coordinator.ts)
 * with an organization, a pool and an agent token, the loopback engine mirror (its checksums
 * files signed by a key every agent trusts through `--engine-keyring`), optionally a git server,
 * and real agent processes. `useWorld` starts it for a file (or a describe block) and
 * stops it after; when a test fails, the coordinator's log and every process's output are printed
 * (and only then).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, beforeEach, inject } from "vitest";
import { type LocalCoordinator, startCoordinator } from "../../../scripts/local-coordinator.ts";
import { MirrorServer } from "../../node/helpers/mirror.ts";
import { type TestSigner, testSigner, writeKeyring } from "../../node/helpers/signing.ts";
import { makeTestCa, type TestCa } from "../../node/helpers/tls.ts";
import { type Answer, ENGINE_VERSION, expectStatus, type Json } from "./e2e.ts";
import { FailureLog } from "./failure-log.ts";
import { agentGitEnv, type GitServer, startGitServer } from "./git-server.ts";
import { type AgentOptions, type AgentProcess, spawnAgent } from "./processes.ts";

export type WorldOptions = {
  /** Agents started once the coordinator is up, each awaited until it registered. */
  agents?: AgentOptions[];
  /** A git server over HTTPS; every agent gets its CA and credentials in its environment. */
  git?: boolean;
  /** Releases the mirror publishes for the stand-in engines (terraform ENGINE_VERSION by default). */
  engines?: { terraform?: string[]; pulumi?: string[] };
  /** An https mirror with a certificate from a test CA (`world.ca`), for agents told `--ca-cert`. */
  httpsMirror?: boolean;
  /** Liveness windows of the world's pool. */
  pool?: { unknownAfterSeconds?: number; erroredAfterSeconds?: number };
  /** Overrides of wrangler.toml vars. */
  vars?: Record<string, string>;
  /** Static assets to serve instead of the build in `dist/assets`. */
  assetsDir?: string;
};

/** Options, or a function making them as the world starts (after the file's earlier hooks). */
export type WorldOptionsSource = WorldOptions | (() => WorldOptions | Promise<WorldOptions>);

/** A started world; its parts throw when read before `useWorld`'s `beforeAll` has run. */
export class World {
  private parts: {
    coordinator: LocalCoordinator;
    mirror: MirrorServer;
    git: GitServer | null;
    ca: TestCa | null;
    signer: TestSigner;
    keyringFile: string;
    ownerToken: string;
    poolId: string;
    agentToken: string;
    dir: string;
  } | null = null;
  /** Every process started through the world, in order. */
  readonly processes: AgentProcess[] = [];
  /** The coordinator's log and the processes' output, printed when a test fails. */
  private readonly failureLog = new FailureLog();
  private readonly source: WorldOptionsSource;
  private options: WorldOptions = {};

  constructor(source: WorldOptionsSource = {}) {
    this.source = source;
  }

  private get started() {
    if (this.parts === null) {
      throw new Error("the world is not started: call useWorld() at the top of the file");
    }
    return this.parts;
  }

  get coordinator(): LocalCoordinator {
    return this.started.coordinator;
  }
  get mirror(): MirrorServer {
    return this.started.mirror;
  }
  /** The git server (`git: true`). */
  get git(): GitServer {
    const { git } = this.started;
    if (git === null) {
      throw new Error("this world has no git server: useWorld({ git: true })");
    }
    return git;
  }
  /** The CA that signed the mirror's certificate (`httpsMirror: true`). */
  get ca(): TestCa {
    const { ca } = this.started;
    if (ca === null) {
      throw new Error("this world's mirror is plain http: useWorld({ httpsMirror: true })");
    }
    return ca;
  }
  /** The key that signs the mirror's checksums files. */
  get signer(): TestSigner {
    return this.started.signer;
  }
  /** The keyring holding the signer's public key, which every agent is given by default. */
  get keyringFile(): string {
    return this.started.keyringFile;
  }
  get ownerToken(): string {
    return this.started.ownerToken;
  }
  get poolId(): string {
    return this.started.poolId;
  }
  get agentToken(): string {
    return this.started.agentToken;
  }
  /** Temp dir for agent data dirs, hooks, repositories and CLI homes; removed by `close`. */
  get dir(): string {
    return this.started.dir;
  }
  /** The first agent of `options.agents`. */
  get agent(): AgentProcess {
    const [first] = this.processes;
    if (first === undefined || !this.options.agents?.length) {
      throw new Error("this world starts no agent: useWorld({ agents: [{}] })");
    }
    return first;
  }

  /** Starts the coordinator, mirror and git server at once, then the pool and the agents. */
  async start(): Promise<void> {
    const dir = mkdtempSync(path.join(tmpdir(), "outpost-e2e-"));
    this.options = typeof this.source === "function" ? await this.source() : this.source;
    const { options } = this;
    const [coordinator, git, { mirror, ca }, signer] = await Promise.all([
      startCoordinator({
        ...(options.vars ? { vars: options.vars } : {}),
        ...(options.assetsDir ? { assetsDir: options.assetsDir } : {}),
        // Migrated once per run by test/setup/migrated-state.ts.
        migratedState: inject("migratedState"),
        onLog: (level, message) => this.failureLog.coordinator(level, message),
      }),
      options.git ? startGitServer(path.join(dir, "git")) : null,
      startMirror(options.httpsMirror ?? false),
      testSigner(),
    ]);
    mirror.signer = signer;
    const keyringFile = writeKeyring(dir, signer);
    const [ownerToken, poolId, agentToken] = ["", "", ""];
    this.parts = {
      coordinator,
      mirror,
      git,
      ca,
      signer,
      keyringFile,
      dir,
      ownerToken,
      poolId,
      agentToken,
    };
    this.publishEngines();
    await this.createPool();
    await Promise.all(
      (options.agents ?? []).map((agent) => this.startAgent(agent).waitForOutput(/registered/)),
    );
  }

  /** Bootstraps the organization; creates its pool (with `options.pool`) and an agent token. */
  private async createPool(): Promise<void> {
    const parts = this.started;
    parts.ownerToken = await parts.coordinator.bootstrap();
    const pool = await expectStatus(this.api("POST", "/api/v1/pools", { name: "e2e" }), 201);
    parts.poolId = String(pool.id);
    const [token] = await Promise.all([
      expectStatus(
        this.api("POST", `/api/v1/pools/${parts.poolId}/tokens`, { description: "e2e agents" }),
        201,
      ),
      this.options.pool
        ? expectStatus(this.api("PATCH", `/api/v1/pools/${parts.poolId}`, this.options.pool), 200)
        : null,
    ]);
    parts.agentToken = String(token.token);
  }

  private publishEngines(): void {
    const engines = this.options.engines ?? { terraform: [ENGINE_VERSION] };
    for (const version of engines.terraform ?? []) {
      this.mirror.publish("terraform", version, {
        os: process.platform,
        arch: process.arch === "x64" ? "amd64" : process.arch,
      });
    }
    for (const version of engines.pulumi ?? []) {
      this.mirror.publishPulumi(version, { os: process.platform, arch: process.arch });
    }
  }

  /** A call to the API with the owner's token; the body is parsed JSON (`{}` when empty). */
  api(method: string, route: string, body?: unknown): Promise<Answer> {
    return this.apiAs(this.ownerToken, method, route, body);
  }

  /** A call to the API with `token` (another organization's owner, a member, ...). */
  async apiAs(token: string, method: string, route: string, body?: unknown): Promise<Answer> {
    const res = await fetch(`${this.coordinator.url}${route}`, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body === undefined ? {} : { "content-type": "application/json" }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return {
      status: res.status,
      body: text ? (JSON.parse(text) as Json) : {},
      headers: res.headers,
    };
  }

  /** Starts the real agent bin against the coordinator and the mirror (not awaited). */
  startAgent(options: AgentOptions = {}): AgentProcess {
    const label = `agent #${this.processes.length + 1} (${options.args?.join(" ") || "no flags"})`;
    const agent = spawnAgent(options, {
      label,
      address: this.coordinator.url,
      token: this.agentToken,
      dataDir: path.join(this.dir, "agent-data"),
      home: this.dir,
      releaseMirror: this.mirror.url,
      engineKeyring: this.keyringFile,
      env: this.parts?.git ? agentGitEnv(this.parts.git) : {},
    });
    return this.track(agent);
  }

  /** Keeps `process` for the log dump and stops it with the world. */
  track(process: AgentProcess): AgentProcess {
    this.processes.push(process);
    return process;
  }

  /** A fresh dir under the world's temp dir. */
  freshDir(prefix: string): string {
    return mkdtempSync(path.join(this.dir, `${prefix}-`));
  }

  /** Marks where the logs stand as a test begins. */
  markTestStart(): void {
    this.failureLog.markTestStart(this.processes);
  }

  /** Prints the coordinator's log and the processes' output since the test began. */
  dump(reason: string): void {
    this.failureLog.print(reason, this.processes);
  }

  /** Kills what is still running and stops the servers; removes the temp dir. */
  async close(): Promise<void> {
    for (const p of this.processes) {
      p.kill("SIGKILL");
    }
    const parts = this.parts;
    if (parts === null) {
      return;
    }
    await Promise.all([
      parts.coordinator.dispose(),
      parts.mirror.stop(),
      parts.git?.close(),
      parts.ca?.dispose(),
    ]);
    rmSync(parts.dir, { recursive: true, force: true });
  }
}

/** The loopback mirror, over https with a certificate from a fresh test CA when `isHttps`. */
async function startMirror(isHttps: boolean): Promise<{ mirror: MirrorServer; ca: TestCa | null }> {
  const ca = isHttps ? await makeTestCa() : null;
  const mirror = new MirrorServer(ca ? { tls: { key: ca.key, cert: ca.cert } } : {});
  await mirror.start();
  return { mirror, ca };
}

/**
 * The world of the current file or describe block: started in `beforeAll` (its parts readable
 * from then on), stopped in `afterAll`; a failing test prints the coordinator's log and every
 * process's output, a passing one prints nothing.
 */
export function useWorld(options: WorldOptionsSource = {}): World {
  const world = new World(options);
  beforeAll(async () => {
    try {
      await world.start();
    } catch (error) {
      world.dump("the world did not start");
      throw error;
    }
  }, 120_000);
  beforeEach(({ onTestFailed, task }) => {
    world.markTestStart();
    onTestFailed(() => world.dump(`"${task.name}" failed`));
  });
  afterAll(() => world.close());
  return world;
}
