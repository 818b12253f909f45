import type { OfferedEngineVersion, ReceivedJob as WireAssignment } from "@outpost/protocol";
import type { AgentApi } from "./client/agent-api.ts";
import { isAgentUnknown, isLeaseGone } from "./client/agent-api.ts";
import { toRunnerJob } from "./client/assignment.ts";
import { ProtocolError } from "./client/http.ts";
import { ExitRequest, TransientError } from "./errors.ts";
import { EXIT_CODES, type ExitCode } from "./exit-codes.ts";
import { runHeartbeats } from "./heartbeats.ts";
import { readPredecessorId, writeAgentId } from "./identity-file.ts";
import { startJob } from "./job/runner.ts";
import type { AgentIdentity, CoordinatorPort, JobSettings } from "./job/types.ts";
import type { Logger } from "./logger.ts";
import { isPassing, refusedJob, registrationRefused, toldToExit } from "./loop-outcomes.ts";
import { retry } from "./retry.ts";
import { errorText, RunningJobs } from "./running-jobs.ts";
import type { StagedUpdate, Updater } from "./update/updater.ts";
import { AGENT_VERSION } from "./version.ts";

export type AgentLoopOptions = {
  api: Pick<AgentApi, "register" | "next" | "start" | "heartbeat" | "finish" | "goodbye">;
  logger: Logger;
  /** Coordinator base URL (configuration and state addresses are built from it). */
  address: string;
  name: string | null;
  concurrency: number;
  accept: Array<"plan" | "apply">;
  single: boolean;
  /** How this agent confines its jobs, as the pool page shows it. */
  isolation: "bwrap" | "none";
  /** The engine versions it offers, reported at each registration (none when absent). */
  offeredEngines?: () => Promise<OfferedEngineVersion[]>;
  /** How long running jobs may take after the first SIGTERM/SIGINT before they are canceled. */
  shutdownGraceMs: number;
  settings: JobSettings;
  portFor(job: WireAssignment): CoordinatorPort;
  startJob?: typeof startJob;
  /** Keeps the agent at the coordinator's build between jobs; none in tests of the loop. */
  updater?: Pick<Updater, "offer" | "isDue" | "prepare" | "install">;
  /** Replaces the process with the installed update; returns only if that failed. */
  restart?: (update: StagedUpdate) => void;
};

/**
 * The agent's life: register, long-poll for jobs (up to the configured concurrency), start each
 * lease at once, heartbeat every interval the coordinator gives, relay cancel requests to jobs,
 * report every ending, update itself between jobs, and leave. Transient failures (network, 429,
 * 5xx) are retried with capped exponential backoff and jitter honouring `Retry-After`, so a
 * coordinator restart costs time, never a job. `run()` resolves with exit code 0 (single job
 * done, or clean shutdown) and rejects with an {@link ExitRequest} (token revoked, told to
 * exit) once running jobs were stopped.
 */
export class AgentLoop {
  private readonly o: AgentLoopOptions;
  private readonly log: Logger;
  private readonly running: RunningJobs;
  /** Aborted when no more work may be taken (signal, exit request, bug). */
  private readonly lifetime = new AbortController();
  /** Aborted when waiting politely is over (second signal, exit request). */
  private readonly forced = new AbortController();
  private readonly heartbeatStop = new AbortController();
  private stopMode: "graceful" | "force" | null = null;
  private ending: ExitRequest | null = null;
  private registering: Promise<boolean> | null = null;
  private isPolling = false;
  private taken = 0;
  private heartbeatMs = 10_000;
  private pollWaitSeconds = 50;
  private identity: AgentIdentity | null = null;

  constructor(options: AgentLoopOptions) {
    this.o = options;
    this.log = options.logger;
    this.running = new RunningJobs({
      api: options.api,
      logger: options.logger,
      forced: this.forced.signal,
      onExitRequest: (request) => this.end(request),
    });
  }

  private get capacity(): number {
    return this.o.single ? 1 : this.o.concurrency;
  }

  /** Runs until done; see the class comment for how it ends. */
  async run(): Promise<ExitCode> {
    if (!(await this.register())) {
      return EXIT_CODES.ok;
    }
    const heartbeats = this.heartbeatLoop();
    let bug: unknown = null;
    try {
      await this.pollLoop();
    } catch (error) {
      if (error instanceof ExitRequest) {
        this.end(error);
      } else {
        bug = error;
        this.lifetime.abort();
      }
    }
    const isGraceful = this.ending === null && this.stopMode === "graceful";
    await this.running.drain({
      graceMs: isGraceful ? this.o.shutdownGraceMs : null,
      cancelWaitMs: 2 * this.o.settings.cancelGraceMs + 5_000,
    });
    this.heartbeatStop.abort();
    await heartbeats;
    if (bug !== null) {
      throw bug;
    }
    if (this.ending !== null) {
      throw this.ending;
    }
    await this.goodbye(this.o.single ? "single job done" : "shut down");
    return EXIT_CODES.ok;
  }

  /**
   * SIGTERM/SIGINT: the first stops polling and lets running jobs finish within the grace
   * period (then cancels them); the second cancels them by force and leaves at once.
   */
  stop(): void {
    if (this.stopMode === null) {
      this.stopMode = "graceful";
      this.log.info(
        { runningJobs: this.running.size, graceSeconds: this.o.shutdownGraceMs / 1000 },
        "shutting down: taking no more jobs (signal again to force)",
      );
      this.lifetime.abort();
    } else if (this.stopMode === "graceful") {
      this.stopMode = "force";
      this.log.warn({ runningJobs: this.running.size }, "forced shutdown: killing running jobs");
      this.forced.abort();
      this.running.cancelAll(true);
    }
  }

  /** Stops everything for an exit request; running jobs lost their leases, so they are killed. */
  private end(request: ExitRequest): void {
    if (this.ending !== null) {
      return;
    }
    this.ending = request;
    this.log.error({ exitCode: request.exitCode }, request.message);
    this.lifetime.abort();
    this.forced.abort();
    this.running.cancelAll(true);
  }

  /** Registers (again); false when a shutdown came first. Concurrent callers share one attempt. */
  private register(): Promise<boolean> {
    this.registering ??= this.registerOnce().finally(() => {
      this.registering = null;
    });
    return this.registering;
  }

  private async registerOnce(): Promise<boolean> {
    const { dataDir } = this.o.settings;
    // After a restart, the id in the data directory; on a re-registration, the one we had.
    const predecessor = this.identity?.id ?? (await readPredecessorId(dataDir));
    // Asked again at each registration: jobs add versions to the cache.
    const engines = (await this.o.offeredEngines?.()) ?? null;
    const request = {
      name: this.o.name,
      version: AGENT_VERSION,
      os: process.platform,
      arch: process.arch,
      capacity: this.capacity,
      acceptedPhases: this.o.accept,
      isolation: this.o.isolation,
      ...(predecessor === null ? {} : { predecessorAgentId: predecessor }),
      ...(engines === null ? {} : { engines }),
    };
    try {
      const answer = await retry(() => this.o.api.register(request), {
        retries: Number.POSITIVE_INFINITY,
        signal: this.lifetime.signal,
        isRetryable: isPassing,
        onRetry: ({ error, waitMs }) => this.retrying("register", error, waitMs),
      });
      this.heartbeatMs = answer.heartbeatIntervalSeconds * 1000;
      this.identity = {
        id: answer.agentId,
        name: this.o.name ?? null,
        version: AGENT_VERSION,
        poolId: answer.poolId,
        isolation: this.o.isolation,
      };
      this.pollWaitSeconds = answer.pollWaitSeconds;
      this.log.info(
        {
          agentId: answer.agentId,
          poolId: answer.poolId,
          version: AGENT_VERSION,
          ...(predecessor === null ? {} : { predecessorAgentId: predecessor }),
        },
        "registered",
      );
      await writeAgentId(dataDir, answer.agentId).catch((error: unknown) => {
        this.log.warn(
          { error: String(error) },
          "could not record the agent id in the data directory; a restart will not release this agent's jobs at once",
        );
      });
      this.o.updater?.offer(answer.agentVersion);
      return true;
    } catch (error) {
      if (this.lifetime.signal.aborted) {
        return false;
      }
      throw registrationRefused(error);
    }
  }

  private async pollLoop(): Promise<void> {
    while (!this.lifetime.signal.aborted) {
      if (this.o.single && this.taken > 0) {
        await this.running.until(() => this.running.size === 0, this.lifetime.signal);
        return;
      }
      if (this.running.size >= this.capacity) {
        await this.running.until(() => this.running.size < this.capacity, this.lifetime.signal);
        continue;
      }
      if (this.running.size === 0 && this.o.updater?.isDue) {
        await this.update();
        continue;
      }
      try {
        this.isPolling = true;
        const answer = await retry(
          () => this.o.api.next(this.pollWaitSeconds, this.lifetime.signal),
          {
            retries: Number.POSITIVE_INFINITY,
            signal: this.lifetime.signal,
            isRetryable: isPassing,
            onRetry: ({ error, waitMs }) => this.retrying("jobs/next", error, waitMs),
          },
        );
        this.isPolling = false;
        if (answer?.action === "exit") {
          throw await toldToExit(this.o.api, this.running.list(), answer.exit.reason);
        }
        if (answer?.action === "run") {
          await this.take(answer.job);
        }
      } catch (error) {
        this.isPolling = false;
        if (this.lifetime.signal.aborted) {
          return;
        }
        if (!isAgentUnknown(error)) {
          throw error;
        }
        this.log.warn("the coordinator does not know this agent (any more): registering again");
        await this.register();
      }
    }
  }

  /**
   * Between jobs: download and verify the coordinator's build, put it in place, say goodbye
   * and restart in place (the new process registers anew). A failure anywhere before the
   * goodbye leaves this agent running as it was; one after it registers this agent again.
   */
  private async update(): Promise<void> {
    const updater = this.o.updater;
    const staged = await updater?.prepare(this.lifetime.signal);
    if (!updater || !staged || this.lifetime.signal.aborted || !(await updater.install(staged))) {
      return;
    }
    await this.goodbye(`updating to ${staged.version}`);
    this.o.restart?.(staged);
    this.log.error("restarting into the update failed; registering this process again");
    await this.register();
  }

  /** Acknowledges the lease and starts the job; a lease lost before the start is skipped. */
  private async take(job: WireAssignment): Promise<void> {
    const log = this.log.child({ jobId: job.jobId });
    const startBy = Date.parse(job.startBy);
    try {
      await retry(() => this.o.api.start(job.jobId, job.leaseId), {
        retries: Number.POSITIVE_INFINITY,
        signal: this.forced.signal,
        // Past the start deadline the lease went back to the queue; another agent takes it.
        isRetryable: (e) => e instanceof TransientError && Date.now() <= startBy,
        onRetry: ({ error, waitMs }) => this.retrying("start", error, waitMs),
      });
    } catch (error) {
      if (isLeaseGone(error)) {
        log.warn({ err: errorText(error) }, "lease lost before the job started; skipping it");
        return;
      }
      if (error instanceof TransientError || this.forced.signal.aborted) {
        log.warn({ err: errorText(error) }, "could not start the job before its lease expired");
        return;
      }
      throw error;
    }
    this.taken += 1;
    const mapped = toRunnerJob(job, this.o.address);
    const handle = mapped.ok
      ? (this.o.startJob ?? startJob)(mapped.value, this.o.portFor(job), {
          ...this.o.settings,
          ...(this.identity ? { agent: this.identity } : {}),
        })
      : refusedJob(mapped.reason);
    log.info({ phase: job.phase, runId: job.runId }, "job started");
    this.running.add(job.jobId, job.leaseId, handle);
  }

  private heartbeatLoop(): Promise<void> {
    return runHeartbeats({
      api: this.o.api,
      logger: this.log,
      running: this.running,
      signal: this.heartbeatStop.signal,
      intervalMs: () => this.heartbeatMs,
      setIntervalMs: (ms) => {
        this.heartbeatMs = ms;
      },
      isPolling: () => this.isPolling,
      isStopping: () => this.lifetime.signal.aborted,
      end: (request) => this.end(request),
      register: () => this.register(),
    });
  }

  private async goodbye(reason: string): Promise<void> {
    try {
      await this.o.api.goodbye(reason);
      this.log.info({ reason }, "said goodbye to the coordinator");
    } catch (error) {
      this.log.warn({ err: errorText(error) }, "goodbye failed; the coordinator will notice");
    }
  }

  /** A retry of `what` is coming; protocol errors (version skew, a proxy page) are errors. */
  private retrying(what: string, error: unknown, waitMs: number): void {
    const level = error instanceof ProtocolError ? "error" : "debug";
    this.log[level]({ err: errorText(error), retryInMs: waitMs }, `${what} failed; retrying`);
  }
}
