import type { ReceivedJob as WireAssignment } from "@outpost/protocol";
import { computeBackoffMs } from "./backoff.ts";
import type { AgentApi } from "./client/agent-api.ts";
import { isAgentUnknown, isLeaseGone } from "./client/agent-api.ts";
import { toRunnerAssignment } from "./client/assignment.ts";
import { CoordinatorError, PACKAGE_VERSION, ProtocolError } from "./client/http.ts";
import { ExitRequest, TransientError } from "./errors.ts";
import { EXIT_CODES, type ExitCode } from "./exit-codes.ts";
import { type JobHandle, startJob } from "./job/runner.ts";
import type { CoordinatorPort, JobOutcome, JobSettings } from "./job/types.ts";
import type { Logger } from "./logger.ts";
import { errorText, RunningJobs, sleep } from "./running-jobs.ts";

export type AgentLoopOptions = {
  api: Pick<AgentApi, "register" | "next" | "start" | "heartbeat" | "finish" | "goodbye">;
  logger: Logger;
  /** Coordinator base URL (configuration and state addresses are built from it). */
  address: string;
  name: string | null;
  concurrency: number;
  accept: Array<"plan" | "apply">;
  single: boolean;
  /** How long running jobs may take after the first SIGTERM/SIGINT before they are canceled. */
  shutdownGraceMs: number;
  settings: JobSettings;
  portFor(job: WireAssignment): CoordinatorPort;
  startJob?: typeof startJob;
};

/**
 * The agent's life: register, long-poll for jobs (up to the configured concurrency), start each
 * lease at once, heartbeat every interval the coordinator gives, relay cancel requests to jobs,
 * report every ending, and leave. Transient failures (network, 429, 5xx) are retried with capped
 * exponential backoff and full jitter, so a coordinator restart costs time, never a job.
 * `run()` resolves with exit code 0 (single job done, or clean shutdown) and rejects with an
 * {@link ExitRequest} (token revoked, told to exit) once running jobs were stopped.
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
    for (let attempt = 0; !this.lifetime.signal.aborted; attempt++) {
      try {
        const answer = await this.o.api.register({
          name: this.o.name,
          version: PACKAGE_VERSION,
          os: process.platform,
          arch: process.arch,
          capacity: this.capacity,
          acceptedPhases: this.o.accept,
        });
        this.heartbeatMs = answer.heartbeatIntervalSeconds * 1000;
        this.pollWaitSeconds = answer.pollWaitSeconds;
        this.log.info({ agentId: answer.agentId, poolId: answer.poolId }, "registered");
        return true;
      } catch (error) {
        if (error instanceof CoordinatorError && error.status === 404) {
          throw new ExitRequest(
            "the agent pool of this token no longer exists",
            EXIT_CODES.toldToExit,
          );
        }
        if (!(error instanceof TransientError || error instanceof ProtocolError)) {
          throw error;
        }
        await this.pause(attempt, error, "register");
      }
    }
    return false;
  }

  private async pollLoop(): Promise<void> {
    let attempt = 0;
    while (!this.lifetime.signal.aborted) {
      if (this.o.single && this.taken > 0) {
        await this.running.until(() => this.running.size === 0, this.lifetime.signal);
        return;
      }
      if (this.running.size >= this.capacity) {
        await this.running.until(() => this.running.size < this.capacity, this.lifetime.signal);
        continue;
      }
      try {
        this.isPolling = true;
        const answer = await this.o.api.next(this.pollWaitSeconds, this.lifetime.signal);
        this.isPolling = false;
        attempt = 0;
        if (answer?.action === "exit") {
          throw await this.toldToExit(answer.exit.reason);
        }
        if (answer?.action === "run") {
          await this.take(answer.job);
        }
      } catch (error) {
        this.isPolling = false;
        if (this.lifetime.signal.aborted) {
          return;
        }
        if (error instanceof TransientError || error instanceof ProtocolError) {
          await this.pause(attempt++, error, "jobs/next");
        } else if (isAgentUnknown(error)) {
          this.log.warn("the coordinator does not know this agent (any more): registering again");
          await this.register();
        } else {
          throw error;
        }
      }
    }
  }

  /** Acknowledges the lease and starts the job; a lease lost before the start is skipped. */
  private async take(job: WireAssignment): Promise<void> {
    const log = this.log.child({ jobId: job.jobId });
    const startBy = Date.parse(job.startBy);
    for (let attempt = 0; ; attempt++) {
      try {
        await this.o.api.start(job.jobId, job.leaseId);
        break;
      } catch (error) {
        if (isLeaseGone(error)) {
          log.warn({ err: errorText(error) }, "lease lost before the job started; skipping it");
          return;
        }
        if (!(error instanceof TransientError)) {
          throw error;
        }
        if (Date.now() > startBy || this.forced.signal.aborted) {
          // The lease went back to the queue by now; another agent (or this one) takes it.
          log.warn({ err: error.message }, "could not start the job before its lease expired");
          return;
        }
        await this.pause(attempt, error, "start", this.forced.signal);
      }
    }
    this.taken += 1;
    const mapped = toRunnerAssignment(job, this.o.address);
    const handle = mapped.ok
      ? (this.o.startJob ?? startJob)(mapped.value, this.o.portFor(job), this.o.settings)
      : refusedJob(mapped.reason);
    log.info({ phase: job.phase, runId: job.runId }, "job started");
    this.running.add(job.jobId, job.leaseId, handle);
  }

  private async heartbeatLoop(): Promise<void> {
    const signal = this.heartbeatStop.signal;
    while (!signal.aborted) {
      await sleep(this.heartbeatMs, signal);
      // A held long-poll counts as contact; busy agents must speak up themselves.
      if (signal.aborted || (this.running.size === 0 && this.isPolling)) {
        continue;
      }
      try {
        const answer = await this.o.api.heartbeat(this.running.list());
        this.heartbeatMs = answer.heartbeatIntervalSeconds * 1000;
        for (const request of answer.cancel) {
          if (this.running.cancel(request.jobId, request.leaseId, request.mode === "force")) {
            this.log.info(
              { jobId: request.jobId, mode: request.mode },
              `cancel: ${request.reason}`,
            );
          }
        }
        if (answer.exit !== null) {
          this.end(await this.toldToExit(answer.exit.reason));
        }
      } catch (error) {
        if (error instanceof ExitRequest) {
          this.end(error);
        } else if (isAgentUnknown(error) && !this.lifetime.signal.aborted) {
          this.log.warn("heartbeat: the coordinator does not know this agent; registering again");
          await this.register().catch((e: unknown) => {
            if (e instanceof ExitRequest) {
              this.end(e);
            }
          });
        } else {
          this.log.warn({ err: errorText(error) }, "heartbeat failed; retrying next interval");
        }
      }
    }
  }

  /**
   * The exit request for an `exit` instruction. Revoking a token makes the coordinator tell its
   * agents to exit; one more call tells that apart (401 TOKEN_REVOKED), so scripts see exit
   * code 3 for a revoked token and 4 for everything else.
   */
  private async toldToExit(reason: string): Promise<ExitRequest> {
    try {
      await this.o.api.heartbeat(this.running.list());
    } catch (error) {
      if (error instanceof ExitRequest) {
        return error;
      }
    }
    return new ExitRequest(
      `the coordinator told this agent to exit: ${reason}`,
      EXIT_CODES.toldToExit,
    );
  }

  private async goodbye(reason: string): Promise<void> {
    try {
      await this.o.api.goodbye(reason);
      this.log.info("said goodbye to the coordinator");
    } catch (error) {
      this.log.warn({ err: errorText(error) }, "goodbye failed; the coordinator will notice");
    }
  }

  /** Backoff before retry `attempt + 1`; cut short when the agent stops. */
  private async pause(
    attempt: number,
    error: TransientError | ProtocolError,
    what: string,
    signal: AbortSignal = this.lifetime.signal,
  ): Promise<void> {
    const waitMs = computeBackoffMs({
      attempt,
      retryAfter: error instanceof TransientError ? error.retryAfter : null,
    });
    const level = error instanceof ProtocolError ? "error" : "warn";
    this.log[level]({ err: error.message, retryInMs: waitMs }, `${what} failed; retrying`);
    await sleep(waitMs, signal);
  }
}

/** A job the agent cannot run (unreadable spec, no token): it ends at once as failed. */
function refusedJob(reason: string): JobHandle {
  const outcome: JobOutcome = {
    status: "failed",
    message: reason,
    exitCode: null,
    planSummary: null,
    logLength: 0,
  };
  return { done: Promise.resolve(outcome), cancel: () => {} };
}
