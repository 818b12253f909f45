import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { createWriteStream } from "node:fs";
import { chmod, rename, rm, stat } from "node:fs/promises";
import path from "node:path";
import { Readable, Transform } from "node:stream";
import { pipeline } from "node:stream/promises";
import type { ReadableStream as WebReadableStream } from "node:stream/web";
import { promisify } from "node:util";
import { AgentRelease, type ReleaseFile } from "@outpost/protocol";
import semver from "semver";
import { readJson, send } from "../client/http.ts";
import type { Logger } from "../logger.ts";
import { describeNetworkError } from "../net/errors.ts";
import { verifyRelease } from "./release-signature.ts";

const run = promisify(execFile);
/** The agent file is about 1 MiB; anything far larger is not an agent build. */
const MAX_AGENT_BYTES = 64 * 1024 * 1024;
const FIRST_RETRY_MS = 60_000;
const MAX_RETRY_MS = 60 * 60_000;

export type UpdaterOptions = {
  /** `--auto-update`. */
  enabled: boolean;
  currentVersion: string;
  /** The file this agent runs from; null when it runs from its TypeScript sources. */
  agentFile: string | null;
  /** The coordinator's origin: the release is always fetched from there. */
  address: string;
  /**
   * Release keys (`ed25519:…`) whose signature this agent believes: the build's own and any
   * `--release-key`. A release signed by no key here is refused.
   */
  trustedKeys: readonly string[];
  userAgent: string;
  logger: Logger;
  now?: () => number;
};

/** See {@link Updater.state}. */
export const UPDATE_STATES = ["current", "available", "pending", "failing"] as const;
export type UpdateState = (typeof UPDATE_STATES)[number];

/** A verified build, staged next to the agent file, ready to be renamed over it. */
export type StagedUpdate = { version: string; file: string; sha256: string };

/** A release this agent will not install; the message says which check refused it. */
export class ReleaseRefused extends Error {}

/**
 * Keeps this agent at the build its coordinator ships. The coordinator's version arrives with
 * every registration and agent API answer ({@link offer}); when it is newer, the agent loop asks
 * {@link isDue} between jobs, then {@link prepare} reads the release from the coordinator and
 * believes only its signed manifest: the signature must be by a trusted key and verify, and the
 * signed version must be newer than this agent (no downgrade); then it downloads the agent file
 * the manifest names, checks its SHA-256 against the manifest and that it runs
 * (`node <file> --version`), and {@link install} renames it over the running agent's file. The
 * header's version is only a hint to look: whoever answers the agent's requests can send any.
 * Any failure or refusal leaves the running agent and its file untouched, is logged saying why,
 * and is tried again later (1 minute, doubling up to an hour).
 */
export class Updater {
  private readonly o: UpdaterOptions;
  private readonly log: Logger;
  private wanted: string | null = null;
  private failures = 0;
  private retryAt = 0;

  constructor(options: UpdaterOptions) {
    this.o = options;
    this.log = options.logger;
  }

  /** Notes the coordinator's agent version (null: it ships none); logs a newer one once. */
  offer(version: string | null): void {
    if (version === null || version === this.wanted || semver.valid(version) === null) {
      return;
    }
    if (!semver.gt(version, this.o.currentVersion)) {
      return;
    }
    this.wanted = version;
    const fields = { current: this.o.currentVersion, available: version };
    if (!this.o.enabled) {
      this.log.info(fields, "the coordinator ships a newer agent; auto-update is off");
    } else if (this.o.agentFile === null) {
      this.log.info(
        fields,
        "the coordinator ships a newer agent; not updating an agent run from sources",
      );
    } else {
      this.log.info(fields, "the coordinator ships a newer agent; updating once no job runs");
    }
  }

  /** True when a newer build is known, updating is possible, and no failed try is cooling off. */
  get isDue(): boolean {
    return (
      this.wanted !== null &&
      this.o.enabled &&
      this.o.agentFile !== null &&
      (this.o.now ?? Date.now)() >= this.retryAt
    );
  }

  /**
   * Where this agent stands against the coordinator's build: `current` (no newer build known),
   * `available` (newer, but auto-update is off or the agent runs from its sources), `pending`
   * (will update once no job runs), `failing` (an update try failed; retried later).
   */
  get state(): UpdateState {
    if (this.wanted === null) {
      return "current";
    }
    if (!this.o.enabled || this.o.agentFile === null) {
      return "available";
    }
    return this.failures > 0 ? "failing" : "pending";
  }

  /** Downloads and verifies the release; null (logged, retried later) when anything fails. */
  async prepare(signal?: AbortSignal): Promise<StagedUpdate | null> {
    const agentFile = this.o.agentFile;
    if (agentFile === null) {
      return null;
    }
    let staged: string | null = null;
    try {
      const { version, agent } = await this.release(signal);
      staged = path.join(
        path.dirname(agentFile),
        `.outpost-agent-${version}.${process.pid}.tmp.mjs`,
      );
      const sha256 = await this.download(agent, staged, signal);
      if (sha256 !== agent.sha256) {
        throw new Error(`checksum mismatch: expected sha256 ${agent.sha256}, downloaded ${sha256}`);
      }
      await chmod(staged, (await stat(agentFile)).mode & 0o777);
      await this.checkRuns(staged, version);
      return { version, file: staged, sha256 };
    } catch (error) {
      if (staged !== null) {
        await rm(staged, { force: true });
      }
      this.failed(error, error instanceof ReleaseRefused ? "refused" : "download");
      return null;
    }
  }

  /** Puts the staged build in place of the running agent's file; false (logged) on failure. */
  async install(update: StagedUpdate): Promise<boolean> {
    const agentFile = this.o.agentFile;
    if (agentFile === null) {
      return false;
    }
    try {
      await rename(update.file, agentFile);
    } catch (error) {
      await rm(update.file, { force: true });
      this.failed(error, "install");
      return false;
    }
    this.log.info(
      { from: this.o.currentVersion, to: update.version, file: agentFile, sha256: update.sha256 },
      "agent updated; restarting in place",
    );
    return true;
  }

  /**
   * The version and agent file of the coordinator's release, as its signed manifest names them;
   * {@link ReleaseRefused} when the signature or the version says no.
   */
  private async release(signal?: AbortSignal): Promise<{ version: string; agent: ReleaseFile }> {
    const target = { address: this.o.address, userAgent: this.o.userAgent };
    const res = await send(target, {
      method: "GET",
      path: "/agent/v1/release",
      ...(signal ? { signal } : {}),
    });
    const release = await readJson(res, AgentRelease, "release");
    const verdict = verifyRelease(release, this.o.trustedKeys);
    if (!verdict.ok) {
      throw new ReleaseRefused(verdict.message);
    }
    const { version, agent } = verdict.manifest;
    const current = this.o.currentVersion;
    if (semver.lt(version, current)) {
      throw new ReleaseRefused(
        `a downgrade: the signed release is ${version} and this agent is ${current}`,
      );
    }
    if (!semver.gt(version, current)) {
      throw new ReleaseRefused(`not newer: the signed release is ${version}, as this agent is`);
    }
    return { version, agent };
  }

  /** Streams the release to `file` and returns its SHA-256; only ever from the coordinator. */
  private async download(file: ReleaseFile, to: string, signal?: AbortSignal): Promise<string> {
    const url = new URL(file.path, this.o.address);
    const target = { address: this.o.address, userAgent: this.o.userAgent };
    const res = await send(target, {
      method: "GET",
      path: url.pathname,
      timeoutMs: 10 * 60_000,
      ...(signal ? { signal } : {}),
    });
    if (res.body === null) {
      throw new Error(`${url} answered without a body`);
    }
    const hash = createHash("sha256");
    let size = 0;
    const count = new Transform({
      transform(chunk: Buffer, _encoding, done) {
        size += chunk.length;
        if (size > MAX_AGENT_BYTES) {
          done(new Error(`${url} is larger than ${MAX_AGENT_BYTES} bytes`));
          return;
        }
        hash.update(chunk);
        done(null, chunk);
      },
    });
    try {
      await pipeline(
        Readable.fromWeb(res.body as WebReadableStream<Uint8Array>),
        count,
        createWriteStream(to, { mode: 0o600 }),
      );
    } catch (error) {
      throw new Error(`downloading ${url} failed (${describeNetworkError(error)})`);
    }
    return hash.digest("hex");
  }

  /** The new build must start on this Node and say the version it claims to be. */
  private async checkRuns(file: string, version: string): Promise<void> {
    let stdout: string;
    try {
      ({ stdout } = await run(process.execPath, [file, "--version"], { timeout: 30_000 }));
    } catch (error) {
      const stderr = String((error as { stderr?: unknown }).stderr ?? "");
      // Node prints where it failed first; the line naming the error says why.
      const why = /^\w*Error\b.*$/m.exec(stderr)?.[0] ?? stderr.trim().split("\n")[0];
      throw new Error(`the new build does not start here: ${why || String(error)}`);
    }
    if (stdout.trim() !== version) {
      throw new Error(`the new build says it is ${stdout.trim()}, not ${version}`);
    }
  }

  private failed(error: unknown, step: "download" | "install" | "refused"): void {
    this.failures += 1;
    const waitMs = Math.min(MAX_RETRY_MS, FIRST_RETRY_MS * 2 ** (this.failures - 1));
    this.retryAt = (this.o.now ?? Date.now)() + waitMs;
    this.log.error(
      {
        err: error instanceof Error ? error.message : String(error),
        current: this.o.currentVersion,
        available: this.wanted,
        attempt: this.failures,
        retryInSeconds: Math.round(waitMs / 1000),
      },
      step === "refused"
        ? "agent update refused; keeping the running version"
        : `agent update failed (${step}); keeping the running version`,
    );
  }
}
