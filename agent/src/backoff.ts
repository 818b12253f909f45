/** Parameters of the retry delay; all durations in milliseconds. */
export type BackoffOptions = {
  /** 0 for the first retry, 1 for the second, … */
  attempt: number;
  baseMs?: number;
  capMs?: number;
  /** The `Retry-After` header of the failed response (delta-seconds or an HTTP-date), if any. */
  retryAfter?: string | null;
  /** Upper bound for a server-given Retry-After, so a bogus header cannot park the agent. */
  maxRetryAfterMs?: number;
  nowMs?: number;
  /** A uniform random number in [0, 1); injectable for tests. */
  random?: () => number;
};

export const DEFAULT_BACKOFF = { baseMs: 500, capMs: 30_000, maxRetryAfterMs: 300_000 } as const;

/**
 * Delay before retry number `attempt + 1`: capped exponential backoff with full jitter
 * (uniform in [0, min(cap, base·2^attempt)]), so many agents hitting a restarted coordinator
 * spread out. A valid `Retry-After` is a floor: the delay is never shorter than what the server
 * asked for (clamped to `maxRetryAfterMs`). The result is an integer ≥ 0.
 */
export function computeBackoffMs(options: BackoffOptions): number {
  const baseMs = options.baseMs ?? DEFAULT_BACKOFF.baseMs;
  const capMs = options.capMs ?? DEFAULT_BACKOFF.capMs;
  const random = options.random ?? Math.random;
  const attempt = Math.max(0, Math.floor(options.attempt));
  // 2^attempt overflows to Infinity for huge attempts; Math.min keeps it at the cap.
  const ceiling = Math.min(capMs, baseMs * 2 ** attempt);
  const jittered = Math.floor(random() * ceiling);
  const retryAfterMs = parseRetryAfterMs(options.retryAfter ?? null, options.nowMs ?? Date.now());
  if (retryAfterMs === null) {
    return jittered;
  }
  const maxRetryAfterMs = options.maxRetryAfterMs ?? DEFAULT_BACKOFF.maxRetryAfterMs;
  return Math.max(jittered, Math.min(retryAfterMs, maxRetryAfterMs));
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
  if (Number.isNaN(at)) {
    return null;
  }
  return Math.max(0, at - nowMs);
}
