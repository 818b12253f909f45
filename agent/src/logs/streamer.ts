import { closeSync, openSync, readSync, writeSync } from "node:fs";
import { retry } from "../retry.ts";
import { StreamMasker } from "./masker.ts";

/** What the coordinator answered to one chunk. */
export type LogSendResult = { ok: true } | { rangeMismatch: number };

/**
 * Sends `bytes` to be stored at byte `offset` of the job log. Answers `{ rangeMismatch: n }`
 * when the coordinator holds n bytes and the offset was not n (HTTP 416). Throws
 * {@link TransientError} for a failure worth retrying; any other error stops the stream.
 */
export type LogSender = (offset: number, bytes: Uint8Array) => Promise<LogSendResult>;

export const MAX_CHUNK_BYTES = 1024 * 1024;

export type LogStreamerOptions = {
  send: LogSender;
  /** Append-only file holding the masked log, so any offset can be re-sent after a 416. */
  spoolFile: string;
  secrets: Iterable<string>;
  maxChunkBytes?: number;
  flushIntervalMs?: number;
  retryBaseMs?: number;
  retryCapMs?: number;
};

/**
 * A job log on its way to the coordinator. Bytes are masked (see {@link StreamMasker}) before
 * they are spooled, then sent in order in chunks of at most `maxChunkBytes`, at the latest
 * `flushIntervalMs` after they were written. A 416 moves the send position to exactly the
 * length the coordinator holds; transient send failures are retried with backoff, forever,
 * until {@link close} completes or a non-transient error ends the stream.
 */
export class LogStreamer {
  private readonly options: Required<Omit<LogStreamerOptions, "secrets">>;
  private readonly masker: StreamMasker;
  private readonly fd: number;
  private produced = 0;
  private acked = 0;
  private timer: NodeJS.Timeout | null = null;
  private pumping: Promise<void> | null = null;
  private failure: unknown = null;
  private closed = false;

  constructor(options: LogStreamerOptions) {
    this.options = {
      maxChunkBytes: MAX_CHUNK_BYTES,
      flushIntervalMs: 1000,
      retryBaseMs: 250,
      retryCapMs: 10_000,
      ...options,
    };
    this.masker = new StreamMasker(options.secrets);
    this.fd = openSync(options.spoolFile, "w+");
  }

  /** Masked bytes produced so far (the final log length once closed). */
  get length(): number {
    return this.produced;
  }

  /**
   * Masks these strings too (each exactly as given; pass them through `secretVariants` for the
   * encoded forms) in everything written from now on, and in the tail not yet released.
   */
  addSecrets(secrets: Iterable<string>): void {
    this.masker.add(secrets);
  }

  /** Queues output; never blocks on the network. Ignored after close or failure. */
  write(chunk: Uint8Array | string): void {
    if (this.closed || this.failure !== null) {
      return;
    }
    this.append(this.masker.write(typeof chunk === "string" ? Buffer.from(chunk) : chunk));
    if (this.produced - this.acked >= this.options.maxChunkBytes) {
      this.kick();
    } else if (this.timer === null && this.pumping === null) {
      this.timer = setTimeout(() => this.kick(), this.options.flushIntervalMs);
    }
  }

  /**
   * Flushes the masker's held tail and resolves once the coordinator holds every byte.
   * Rejects with the error that stopped the stream, if any.
   */
  async close(): Promise<void> {
    if (!this.closed) {
      this.closed = true;
      if (this.failure === null) {
        this.append(this.masker.end());
      }
    }
    while (this.failure === null && (this.acked < this.produced || this.pumping !== null)) {
      this.kick();
      await this.pumping;
    }
    closeSync(this.fd);
    if (this.failure !== null) {
      throw this.failure;
    }
  }

  private append(bytes: Buffer): void {
    if (bytes.length > 0) {
      writeSync(this.fd, bytes, 0, bytes.length, this.produced);
      this.produced += bytes.length;
    }
  }

  private kick(): void {
    if (this.timer !== null) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    if (this.pumping === null && this.failure === null) {
      this.pumping = this.pump().finally(() => {
        this.pumping = null;
      });
    }
  }

  private async pump(): Promise<void> {
    while (this.acked < this.produced && this.failure === null) {
      const length = Math.min(this.options.maxChunkBytes, this.produced - this.acked);
      const bytes = Buffer.alloc(length);
      readSync(this.fd, bytes, 0, length, this.acked);
      const offset = this.acked;
      try {
        // Transient failures are retried here for as long as it takes; anything else ends it.
        const result = await retry(() => this.options.send(offset, bytes), {
          retries: Number.POSITIVE_INFINITY,
          baseMs: this.options.retryBaseMs,
          capMs: this.options.retryCapMs,
        });
        if ("ok" in result) {
          this.acked += length;
        } else if (result.rangeMismatch > this.produced || result.rangeMismatch < 0) {
          this.failure = new Error(
            `the coordinator holds ${result.rangeMismatch} log bytes but only ${this.produced} were written`,
          );
        } else {
          this.acked = result.rangeMismatch;
        }
      } catch (error) {
        this.failure = error;
      }
    }
  }
}
