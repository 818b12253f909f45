import { TransientError } from "../errors.ts";
import type { Logger } from "../logger.ts";
import { CoordinatorError } from "./http.ts";

/**
 * Logs an outage of the coordinator once, however many requests fail during it: the first
 * transient failure at warn with its cause, the rest at debug, and the first success after it
 * at info with how long it lasted.
 */
export class ContactMonitor {
  private readonly log: Logger;
  private readonly now: () => number;
  private downSince: number | null = null;
  private failures = 0;

  constructor(logger: Logger, now: () => number = Date.now) {
    this.log = logger;
    this.now = now;
  }

  /** True while the coordinator has not answered since a transient failure. */
  get isDown(): boolean {
    return this.downSince !== null;
  }

  failed(cause: string): void {
    this.failures += 1;
    if (this.downSince === null) {
      this.downSince = this.now();
      this.log.warn({ err: cause }, "lost contact with the coordinator; retrying with backoff");
    } else {
      this.log.debug(
        { err: cause, failures: this.failures },
        "the coordinator is still unreachable",
      );
    }
  }

  succeeded(): void {
    if (this.downSince === null) {
      return;
    }
    const seconds = Math.round((this.now() - this.downSince) / 100) / 10;
    this.log.info(
      { downSeconds: seconds, failedRequests: this.failures },
      "contact with the coordinator restored",
    );
    this.downSince = null;
    this.failures = 0;
  }
}

/**
 * Sends through `send`, telling `contact` how it went: transient failures count towards an
 * outage, any answer ends one.
 */
export async function observed<T>(
  contact: Pick<ContactMonitor, "failed" | "succeeded"> | undefined,
  request: () => Promise<T>,
): Promise<T> {
  try {
    const answer = await request();
    contact?.succeeded();
    return answer;
  } catch (error) {
    if (error instanceof TransientError) {
      contact?.failed(error.message);
    } else if (error instanceof CoordinatorError) {
      contact?.succeeded();
    }
    throw error;
  }
}
