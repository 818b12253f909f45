import type { RunningJob } from "@outpost/protocol";
import { type AgentApi, isLeaseGone } from "./client/agent-api.ts";
import { ExitRequest, TransientError } from "./errors.ts";
import type { JobHandle } from "./job/runner.ts";
import type { JobResult } from "./job/types.ts";
import type { Logger } from "./logger.ts";
import { retry } from "./retry.ts";
import { sleep } from "./sleep.ts";

const FINISH_MESSAGE_MAX = 2000;

type Entry = { jobId: string; leaseId: string; handle: JobHandle; finished: Promise<void> };

/**
 * The jobs this agent has started and not yet reported. A job stays listed (and so in every
 * heartbeat) until its finish was accepted or refused, so the coordinator never sees it vanish
 * while its outcome is still on the way.
 */
export class RunningJobs {
  private readonly entries = new Map<string, Entry>();
  private readonly listeners = new Set<() => void>();
  private readonly o: {
    api: Pick<AgentApi, "finish">;
    logger: Logger;
    /** Aborted once waiting politely is over: finishes get two more attempts, sleeps end. */
    forced: AbortSignal;
    /** The token was refused while reporting. */
    onExitRequest(request: ExitRequest): void;
  };

  constructor(options: RunningJobs["o"]) {
    this.o = options;
  }

  get size(): number {
    return this.entries.size;
  }

  /** What the heartbeat reports. */
  list(): RunningJob[] {
    return [...this.entries.values()].map((e) => ({ jobId: e.jobId, leaseId: e.leaseId }));
  }

  /** Relays a cancel request to the job holding that lease; false when there is none. */
  cancel(jobId: string, leaseId: string, force: boolean): boolean {
    const entry = this.entries.get(jobId);
    if (entry?.leaseId !== leaseId) {
      return false;
    }
    entry.handle.cancel({ force });
    return true;
  }

  cancelAll(force: boolean): void {
    for (const entry of this.entries.values()) {
      entry.handle.cancel({ force });
    }
  }

  /** Tracks a started job: when it ends its outcome is reported, then it leaves the list. */
  add(jobId: string, leaseId: string, handle: JobHandle): void {
    const entry: Entry = { jobId, leaseId, handle, finished: Promise.resolve() };
    this.entries.set(jobId, entry);
    this.notify();
    entry.finished = handle.done
      .then((result) => this.report(entry, result))
      .catch((error: unknown) =>
        this.o.logger.error({ jobId, err: errorText(error) }, "reporting the job failed"),
      )
      .finally(() => {
        this.entries.delete(jobId);
        this.notify();
      });
  }

  /** Resolves once `condition` holds (checked on every change) or `signal` aborts. */
  until(condition: () => boolean, signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const check = () => {
        if (condition() || signal.aborted) {
          this.listeners.delete(check);
          signal.removeEventListener("abort", check);
          resolve();
        }
      };
      this.listeners.add(check);
      signal.addEventListener("abort", check);
      check();
    });
  }

  /**
   * Waits for every job to end and be reported. With `graceMs` (a graceful shutdown): that long
   * for them to finish, then a graceful cancel and `cancelWaitMs` more, then a forced cancel.
   * The final wait is bounded, so a stuck report cannot hold the process forever.
   */
  async drain(options: { graceMs: number | null; cancelWaitMs: number }): Promise<void> {
    const allDone = () => Promise.all([...this.entries.values()].map((e) => e.finished));
    if (this.entries.size === 0) {
      return;
    }
    if (options.graceMs !== null) {
      await Promise.race([allDone(), sleep(options.graceMs, this.o.forced)]);
      if (this.entries.size > 0 && !this.o.forced.aborted) {
        this.o.logger.warn({ runningJobs: this.size }, "grace period over: canceling jobs");
        this.cancelAll(false);
        await Promise.race([allDone(), sleep(options.cancelWaitMs, this.o.forced)]);
      }
      this.cancelAll(true);
    }
    await Promise.race([allDone(), sleep(30_000)]);
  }

  /** Sends the finish, retrying transient failures (only twice more once forced). */
  private async report(entry: Entry, result: JobResult): Promise<void> {
    const log = this.o.logger.child({ jobId: entry.jobId });
    const body = {
      outcome: result.outcome,
      exitCode:
        result.exitCode === null ? null : Math.min(255, Math.max(0, Math.trunc(result.exitCode))),
      planSummary: result.planSummary,
      message: result.message === null ? null : result.message.slice(0, FINISH_MESSAGE_MAX),
      ...(result.engineVersion ? { engineVersion: result.engineVersion } : {}),
    };
    let forcedTries = 0;
    try {
      const answer = await retry(() => this.o.api.finish(entry.jobId, entry.leaseId, body), {
        retries: Number.POSITIVE_INFINITY,
        // Once forced the process is about to leave: two more quick tries, then give up.
        isRetryable: (error) =>
          error instanceof TransientError && (!this.o.forced.aborted || forcedTries++ < 2),
        onRetry: ({ error, waitMs }) =>
          log.warn({ err: errorText(error), retryInMs: waitMs }, "finish failed; retrying"),
        capMs: this.o.forced.aborted ? 1000 : undefined,
      });
      const fields = { outcome: answer.outcome, logBytes: result.logLength };
      log.info(
        body.message === null ? fields : { ...fields, message: body.message },
        "job finished",
      );
    } catch (error) {
      if (error instanceof ExitRequest) {
        this.o.onExitRequest(error);
      } else if (isLeaseGone(error)) {
        log.warn({ err: errorText(error) }, "the coordinator had already ended this job");
      } else {
        log.error({ err: errorText(error), outcome: body.outcome }, "could not report the job");
      }
    }
  }

  private notify(): void {
    for (const listener of this.listeners) {
      listener();
    }
  }
}

export function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
