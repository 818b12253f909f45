import pRetry from "p-retry";
import { TransientError } from "./errors.ts";
import { sleep } from "./sleep.ts";

/** The agent's default backoff: 0.5 s doubling up to 30 s, each wait stretched ×1–2 at random. */
export const DEFAULT_BACKOFF = { baseMs: 500, capMs: 30_000, maxRetryAfterMs: 300_000 } as const;

export type RetryOptions = {
  /** Attempts after the first one; `Infinity` retries until success or `signal`. */
  retries: number;
  baseMs?: number;
  capMs?: number;
  /** Give up once retrying has taken this long (measured from the first failure). */
  maxRetryTimeMs?: number;
  /** Aborting it ends the wait at once; the call rejects with the signal's reason. */
  signal?: AbortSignal;
  /** Which failures another attempt may fix; {@link TransientError} by default. */
  isRetryable?: (error: unknown) => boolean;
  /** Told before each wait: the failure, the attempt that failed (1-based) and the wait. */
  onRetry?: (failure: { error: unknown; attempt: number; waitMs: number }) => void;
};

/**
 * Calls `fn` until it resolves, retrying failures that `isRetryable` accepts with capped
 * exponential backoff and jitter (p-retry), never waiting less than a `Retry-After` the
 * coordinator or a mirror asked for (clamped to 5 minutes). Rejects with the last failure when
 * retries run out or a failure is not retryable, and with the signal's reason once it aborts.
 */
export function retry<T>(fn: (attempt: number) => Promise<T>, options: RetryOptions): Promise<T> {
  const isRetryable = options.isRetryable ?? ((e: unknown) => e instanceof TransientError);
  return pRetry(fn, {
    retries: options.retries,
    factor: 2,
    minTimeout: options.baseMs ?? DEFAULT_BACKOFF.baseMs,
    maxTimeout: options.capMs ?? DEFAULT_BACKOFF.capMs,
    randomize: true,
    ...(options.maxRetryTimeMs === undefined ? {} : { maxRetryTime: options.maxRetryTimeMs }),
    ...(options.signal === undefined ? {} : { signal: options.signal }),
    // Called only when another attempt may follow; the Retry-After floor is waited here, on
    // top of p-retry's own delay, so the total is the larger of the two.
    shouldRetry: async ({ error, attemptNumber, retryDelay }) => {
      if (!isRetryable(error)) {
        return false;
      }
      const retryAfterMs = error instanceof TransientError ? retryAfterOf(error) : null;
      const extraMs = retryAfterMs === null ? 0 : Math.max(0, retryAfterMs - retryDelay);
      options.onRetry?.({ error, attempt: attemptNumber, waitMs: retryDelay + extraMs });
      if (extraMs > 0) {
        await sleep(extraMs, options.signal);
      }
      return true;
    },
  });
}

function retryAfterOf(error: TransientError): number | null {
  const ms = parseRetryAfterMs(error.retryAfter, Date.now());
  return ms === null ? null : Math.min(ms, DEFAULT_BACKOFF.maxRetryAfterMs);
}

/**
 * Parses a `Retry-After` value (RFC 9110 §10.2.3): delta-seconds or an HTTP-date. Returns the
 * wait in ms (0 for a date in the past) or null when the value is absent or malformed.
 */
export function parseRetryAfterMs(value: string | null, nowMs: number): number | null {
  if (value === null) {
    return null;
  }
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) {
    return Number(trimmed) * 1000;
  }
  // Date.parse accepts many shapes; require the IMF-fixdate shape servers actually send.
  if (!/^[A-Za-z]{3}, \d{2} [A-Za-z]{3} \d{4} \d{2}:\d{2}:\d{2} GMT$/.test(trimmed)) {
    return null;
  }
  const at = Date.parse(trimmed);
  return Number.isNaN(at) ? null : Math.max(0, at - nowMs);
}
