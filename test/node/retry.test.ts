/**
 * The one retry helper of the agent and CLI (p-retry underneath): capped exponential backoff
 * with jitter, a Retry-After floor, abort and give-up rules. Time is fake: every wait is
 * driven by the test, never slept.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { TransientError } from "../../agent/src/errors.ts";
import { parseRetryAfterMs, retry } from "../../agent/src/retry.ts";

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
  vi.restoreAllMocks();
});

/** A function failing with `errors` in turn, then answering "ok"; records when it was called. */
function flaky(errors: unknown[]) {
  const calls: number[] = [];
  const fn = async () => {
    calls.push(Date.now());
    const next = errors.shift();
    if (next !== undefined) {
      throw next;
    }
    return "ok";
  };
  return { fn, calls };
}

describe("retry", () => {
  it("waits base·2^n stretched ×1–2, capped, between attempts", async () => {
    vi.spyOn(Math, "random").mockReturnValue(0.5);
    const waits: number[] = [];
    const { fn } = flaky(Array.from({ length: 7 }, () => new TransientError("503")));
    const done = retry(fn, {
      retries: 10,
      baseMs: 100,
      capMs: 2_000,
      onRetry: ({ waitMs }) => waits.push(waitMs),
    });
    await vi.runAllTimersAsync();
    expect(await done).toBe("ok");
    expect(waits).toEqual([150, 300, 600, 1200, 2000, 2000, 2000]);
  });

  it("never waits less than Retry-After (seconds or an HTTP-date), clamped to 5 minutes", async () => {
    vi.spyOn(Math, "random").mockReturnValue(0);
    vi.setSystemTime(Date.parse("2026-11-22T06:00:00Z"));
    const { fn, calls } = flaky([
      new TransientError("429", { retryAfter: "7" }),
      new TransientError("503", { retryAfter: "Sun, 22 Nov 2026 06:00:20 GMT" }),
      new TransientError("429", { retryAfter: "99999" }),
    ]);
    const done = retry(fn, { retries: 5, baseMs: 100 });
    await vi.advanceTimersByTimeAsync(6_999);
    expect(calls).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(calls).toHaveLength(2);
    await vi.advanceTimersByTimeAsync(12_999);
    expect(calls).toHaveLength(2);
    await vi.advanceTimersByTimeAsync(1);
    expect(calls).toHaveLength(3);
    await vi.advanceTimersByTimeAsync(299_999);
    expect(calls).toHaveLength(3);
    await vi.advanceTimersByTimeAsync(1);
    expect(await done).toBe("ok");
    expect(calls.map((t) => t - (calls[0] ?? 0))).toEqual([0, 7_000, 20_000, 320_000]);
  });

  it("gives up on a failure that is not retryable, and after the retries run out", async () => {
    const refused = new Error("404");
    await expect(retry(flaky([refused]).fn, { retries: 5 })).rejects.toBe(refused);
    const last = new TransientError("third");
    const exhausted = retry(flaky([new TransientError("1"), new TransientError("2"), last]).fn, {
      retries: 2,
    });
    const settled = expect(exhausted).rejects.toBe(last);
    await vi.runAllTimersAsync();
    await settled;
  });

  it("ends at once when the signal aborts during a wait, with the signal's reason", async () => {
    const stop = new AbortController();
    const { fn, calls } = flaky([new TransientError("a", { retryAfter: "60" })]);
    const done = retry(fn, { retries: 5, signal: stop.signal });
    const settled = expect(done).rejects.toThrow("shutting down");
    await vi.advanceTimersByTimeAsync(1_000);
    stop.abort(new Error("shutting down"));
    await vi.advanceTimersByTimeAsync(0);
    await settled;
    expect(calls).toHaveLength(1);
  });
});

describe("parseRetryAfterMs", () => {
  const nowMs = Date.parse("2026-11-22T06:00:00Z");
  it.each([
    ["120", 120_000],
    [" 3 ", 3000],
    ["Sun, 22 Nov 2026 06:01:00 GMT", 60_000],
    ["Sun, 22 Nov 2026 05:00:00 GMT", 0],
    ["-5", null],
    ["1.5", null],
    ["tomorrow", null],
    ["", null],
  ])("%j → %j", (value, expected) => {
    expect(parseRetryAfterMs(value, nowMs)).toBe(expected);
  });
  it("treats an absent header as no hint", () => {
    expect(parseRetryAfterMs(null, nowMs)).toBeNull();
  });
});
