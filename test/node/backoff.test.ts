import { describe, expect, it } from "vitest";
import { computeBackoffMs, parseRetryAfterMs } from "../../agent/src/backoff.ts";

describe("computeBackoffMs", () => {
  it("grows exponentially up to the cap, with full jitter below the ceiling", () => {
    const top = (attempt: number) =>
      computeBackoffMs({ attempt, baseMs: 100, capMs: 5000, random: () => 0.999999 });
    expect([0, 1, 2, 3, 4, 5, 6, 50, 5000].map(top)).toEqual([
      99, 199, 399, 799, 1599, 3199, 4999, 4999, 4999,
    ]);
    expect(computeBackoffMs({ attempt: 7, baseMs: 100, capMs: 5000, random: () => 0 })).toBe(0);
  });

  it("spreads retries uniformly between 0 and the ceiling", () => {
    const samples = Array.from({ length: 2000 }, () =>
      computeBackoffMs({ attempt: 3, baseMs: 100, capMs: 10_000 }),
    );
    expect(Math.min(...samples)).toBeGreaterThanOrEqual(0);
    expect(Math.max(...samples)).toBeLessThan(800);
    const mean = samples.reduce((a, b) => a + b, 0) / samples.length;
    expect(mean).toBeGreaterThan(330);
    expect(mean).toBeLessThan(470);
  });

  it("never waits less than Retry-After in seconds, clamped to maxRetryAfterMs", () => {
    const base = { attempt: 0, baseMs: 100, capMs: 1000, random: () => 0.5 };
    expect(computeBackoffMs({ ...base, retryAfter: "7" })).toBe(7000);
    expect(computeBackoffMs({ ...base, retryAfter: "0" })).toBe(50);
    expect(computeBackoffMs({ ...base, retryAfter: "99999", maxRetryAfterMs: 60_000 })).toBe(
      60_000,
    );
    expect(computeBackoffMs({ ...base, retryAfter: "soon" })).toBe(50);
  });

  it("honours Retry-After as an HTTP-date", () => {
    const nowMs = Date.parse("2026-11-22T06:00:00Z");
    const retryAfter = "Sun, 22 Nov 2026 06:00:12 GMT";
    expect(computeBackoffMs({ attempt: 0, baseMs: 10, random: () => 0, retryAfter, nowMs })).toBe(
      12_000,
    );
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
