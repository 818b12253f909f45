import { type ChildProcess, spawn } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { setTimeout as delay } from "node:timers/promises";
import { type LocalCoordinator, startCoordinator } from "../../../scripts/local-coordinator.ts";
import { MirrorServer } from "../../node/helpers/mirror.ts";
import { type TestSigner, testSigner, writeKeyring } from "../../node/helpers/signing.ts";
import { buildTarGz } from "../../node/helpers/tarball.ts";

export const AGENT_BIN = path.resolve(
  import.meta.dirname,
  "../../../agent/src/bin/outpost-agent.ts",
);
export const CLI_BIN = path.resolve(import.meta.dirname, "../../../agent/src/bin/outpost.ts");
/** The stand-in engine's version as the loopback mirror publishes it. */
export const ENGINE_VERSION = "1.9.5";

export type Json = Record<string, unknown>;
export type Answer = { status: number; body: Json; headers: Headers };

/**
 * A started coordinator with one org, one pool and its agent token, and a mirror whose
 * checksums files are signed by `signer`, whose public key is in `keyringFile` (every agent gets
 * it as `--engine-keyring`, so every run checks the signature).
 */
export type World = {
  coordinator: LocalCoordinator;
  mirror: MirrorServer;
  signer: TestSigner;
  keyringFile: string;
  ownerToken: string;
  poolId: string;
  agentToken: string;
  /** Temp dir for agent data dirs, hooks and CLI homes; removed by `close`. */
  dir: string;
  api(method: string, route: string, body?: unknown): Promise<Answer>;
  close(): Promise<void>;
};

/** Starts everything one test file shares. */
export async function startWorld(
  options: { vars?: Record<string, string>; assetsDir?: string } = {},
): Promise<World> {
  const mirror = new MirrorServer();
  const [coordinator, signer] = await Promise.all([
    startCoordinator({
      ...(options.vars ? { vars: options.vars } : {}),
      ...(options.assetsDir ? { assetsDir: options.assetsDir } : {}),
    }),
    testSigner(),
    mirror.start(),
  ]);
  mirror.signer = signer;
  mirror.publish("terraform", ENGINE_VERSION, {
    os: process.platform,
    arch: process.arch === "x64" ? "amd64" : process.arch,
  });
  const ownerToken = await coordinator.bootstrap();
  const dir = mkdtempSync(path.join(tmpdir(), "outpost-e2e-"));
  const keyringFile = writeKeyring(dir, signer);
  const api = async (method: string, route: string, body?: unknown): Promise<Answer> => {
    const res = await fetch(`${coordinator.url}${route}`, {
      method,
      headers: {
        authorization: `Bearer ${ownerToken}`,
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
  };
  const pool = await expectStatus(api("POST", "/api/v1/pools", { name: "e2e" }), 201);
  const poolId = String(pool.id);
  const token = await expectStatus(
    api("POST", `/api/v1/pools/${poolId}/tokens`, { description: "e2e agents" }),
    201,
  );
  return {
    coordinator,
    mirror,
    signer,
    keyringFile,
    ownerToken,
    poolId,
    agentToken: String(token.token),
    dir,
    api,
    async close() {
      await Promise.all([coordinator.dispose(), mirror.stop()]);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Awaits an API answer and returns its body, or throws with the body when the status differs. */
export async function expectStatus(answer: Promise<Answer>, status: number): Promise<Json> {
  const a = await answer;
  if (a.status !== status) {
    throw new Error(`expected ${status}, got ${a.status}: ${JSON.stringify(a.body)}`);
  }
  return a.body;
}

/** Creates an agent-mode workspace on the world's pool, with env variables for the stand-in. */
export async function createWorkspace(
  world: World,
  name: string,
  options: { autoApply?: boolean; env?: Record<string, string> } = {},
): Promise<string> {
  const ws = await expectStatus(
    world.api("POST", "/api/v1/workspaces", {
      name,
      engineVersion: ENGINE_VERSION,
      engine: "terraform",
      executionMode: "agent",
      poolId: world.poolId,
      autoApply: options.autoApply ?? false,
    }),
    201,
  );
  const id = String(ws.id);
  for (const [key, value] of Object.entries(options.env ?? {})) {
    await setVariable(world, id, key, value, { category: "env" });
  }
  return id;
}

export async function setVariable(
  world: World,
  workspaceId: string,
  key: string,
  value: string,
  options: { category: "env" | "terraform"; sensitive?: boolean },
): Promise<void> {
  const answer = await world.api("PUT", `/api/v1/workspaces/${workspaceId}/vars/${key}`, {
    value,
    category: options.category,
    sensitive: options.sensitive ?? false,
  });
  if (answer.status !== 201 && answer.status !== 200) {
    throw new Error(`variable ${key}: ${answer.status} ${JSON.stringify(answer.body)}`);
  }
}

/** Uploads a configuration made of `files` and returns its id. */
export async function uploadConfiguration(
  world: World,
  workspaceId: string,
  files: Record<string, string>,
): Promise<string> {
  const body = buildTarGz(Object.entries(files).map(([name, text]) => ({ name, body: text })));
  const res = await fetch(
    `${world.coordinator.url}/api/v1/workspaces/${workspaceId}/configuration-versions`,
    {
      method: "POST",
      headers: { authorization: `Bearer ${world.ownerToken}`, "content-type": "application/gzip" },
      body,
    },
  );
  const answer = (await res.json()) as Json;
  if (res.status !== 201) {
    throw new Error(`upload answered ${res.status}: ${JSON.stringify(answer)}`);
  }
  return String(answer.id);
}

export async function queueRun(
  world: World,
  workspaceId: string,
  body: { operation?: "plan" | "apply" | "destroy" | "refresh"; isSpeculative?: boolean } = {},
): Promise<string> {
  const run = await expectStatus(
    world.api("POST", `/api/v1/workspaces/${workspaceId}/runs`, body),
    201,
  );
  return String(run.id);
}

/**
 * Polls the run until its status is one of `statuses` (bounded by `timeoutMs`); throws with the
 * last status and reason otherwise.
 */
export async function waitForRun(
  world: World,
  runId: string,
  statuses: string[],
  timeoutMs = 30_000,
): Promise<Json> {
  const deadline = Date.now() + timeoutMs;
  let last: Json = {};
  while (Date.now() < deadline) {
    last = await expectStatus(world.api("GET", `/api/v1/runs/${runId}`), 200);
    if (statuses.includes(String(last.status))) {
      return last;
    }
    await delay(150);
  }
  throw new Error(
    `run ${runId} is ${String(last.status)} (${String(last.statusReason ?? last.waitingReason)}), not ${statuses.join("|")}, after ${timeoutMs} ms`,
  );
}

/** The whole stored log of one phase. */
export async function readRunLog(world: World, runId: string, phase: "plan" | "apply") {
  const res = await fetch(
    `${world.coordinator.url}/api/v1/runs/${runId}/logs?phase=${phase}&offset=0`,
    { headers: { authorization: `Bearer ${world.ownerToken}` } },
  );
  return res.text();
}

export async function stateVersions(world: World, workspaceId: string): Promise<Json[]> {
  const body = await expectStatus(
    world.api("GET", `/api/v1/workspaces/${workspaceId}/state-versions`),
    200,
  );
  return body.stateVersions as Json[];
}

/** A running agent process and everything it printed. */
export type AgentProcess = {
  child: ChildProcess;
  output(): string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Resolves once the output matches (bounded). */
  waitForOutput(pattern: RegExp, timeoutMs?: number): Promise<void>;
  kill(signal?: NodeJS.Signals): void;
};

/**
 * Starts the real agent bin against the world's coordinator, with the loopback mirror (or
 * `releaseMirror`; null: none) and the world's keyring (or `engineKeyring`; null: none).
 */
export function startAgent(
  world: World,
  options: {
    args?: string[];
    env?: Record<string, string>;
    token?: string;
    /** Read the token from this file (`--token-file`) instead of `OUTPOST_TOKEN`. */
    tokenFile?: string;
    dataDir?: string;
    /** Another agent entry point, e.g. a built single-file agent; the sources by default. */
    bin?: string;
    releaseMirror?: string | null;
    engineKeyring?: string | null;
  } = {},
): AgentProcess {
  const mirror = options.releaseMirror === undefined ? world.mirror.url : options.releaseMirror;
  const keyring = options.engineKeyring === undefined ? world.keyringFile : options.engineKeyring;
  const dataDir = options.dataDir ?? path.join(world.dir, "agent-data");
  mkdirSync(dataDir, { recursive: true });
  const child = spawn(
    process.execPath,
    [
      options.bin ?? AGENT_BIN,
      ...(mirror === null ? [] : ["--release-mirror", mirror]),
      ...(keyring === null ? [] : ["--engine-keyring", keyring]),
      "--data-dir",
      dataDir,
      "--hooks-dir",
      path.join(dataDir, "hooks"),
      ...(options.tokenFile === undefined ? [] : ["--token-file", options.tokenFile]),
      ...(options.args ?? []),
    ],
    {
      env: {
        PATH: process.env.PATH ?? "",
        HOME: world.dir,
        OUTPOST_ADDRESS: world.coordinator.url,
        ...(options.tokenFile === undefined
          ? { OUTPOST_TOKEN: options.token ?? world.agentToken }
          : {}),
        ...options.env,
      },
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  return watch(child, (signal) => child.kill(signal));
}

/**
 * Runs `command` with `sh -c` in `cwd` and its own process group (killed as a group), as an
 * operator pastes it: for the install commands the dashboard shows. The process is the shell; its exit
 * is that of the last command.
 */
export function runShellCommand(
  command: string,
  env: NodeJS.ProcessEnv,
  cwd: string,
): AgentProcess {
  const child = spawn("sh", ["-c", command], {
    env,
    cwd,
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
  });
  return watch(child, (signal) => {
    if (child.pid !== undefined && child.exitCode === null) {
      try {
        process.kill(-child.pid, signal);
      } catch {
        // Already gone.
      }
    }
  });
}

function watch(child: ChildProcess, kill: (signal: NodeJS.Signals) => void): AgentProcess {
  let text = "";
  child.stdout?.on("data", (d) => {
    text += d;
  });
  child.stderr?.on("data", (d) => {
    text += d;
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on("exit", (code, signal) => resolve({ code, signal })),
  );
  return {
    child,
    output: () => text,
    exited,
    async waitForOutput(pattern, timeoutMs = 20_000) {
      const deadline = Date.now() + timeoutMs;
      while (!pattern.test(text)) {
        if (Date.now() > deadline || child.exitCode !== null) {
          throw new Error(`agent output never matched ${pattern}:\n${text}`);
        }
        await delay(50);
      }
    },
    kill(signal = "SIGTERM") {
      kill(signal);
    },
  };
}

/** Resolves with the exit, or throws (after killing it) when the process outlives `timeoutMs`. */
export async function exitWithin(
  agent: AgentProcess,
  timeoutMs: number,
): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  const timeout = delay(timeoutMs).then(() => null);
  const result = await Promise.race([agent.exited, timeout]);
  if (result === null) {
    agent.kill("SIGKILL");
    throw new Error(`the agent did not exit within ${timeoutMs} ms:\n${agent.output()}`);
  }
  return result;
}

/** Writes an executable hook script into the agent data dir's hooks folder. */
export function writeHook(dataDir: string, name: string, script: string): void {
  const hooks = path.join(dataDir, "hooks");
  mkdirSync(hooks, { recursive: true });
  const file = path.join(hooks, name);
  writeFileSync(file, `#!/bin/sh\n${script}\n`);
  chmodSync(file, 0o755);
}

/** A fresh dir under the world's temp dir. */
export function freshDir(world: World, prefix: string): string {
  return mkdtempSync(path.join(world.dir, `${prefix}-`));
}
