/**
 * Durations as operators write them: a number of seconds (`3600`), or Go-style units as
 * Pulumi's agent takes `token_expiration` (`90m`, `2h`, `1h30m`, `45s`).
 */
const UNIT_SECONDS: Record<string, number> = { s: 1, m: 60, h: 3600 };
const GO_DURATION = /^(\d+(?:\.\d+)?[hms])+$/;

/** Seconds in `text`, or null when it is neither a number nor a duration like `1h30m`. */
export function parseDurationSeconds(text: string | number): number | null {
  if (typeof text === "number") {
    return Number.isFinite(text) ? text : null;
  }
  const trimmed = text.trim();
  if (/^\d+(\.\d+)?$/.test(trimmed)) {
    return Number(trimmed);
  }
  if (!GO_DURATION.test(trimmed)) {
    return null;
  }
  let total = 0;
  for (const [, amount, unit] of trimmed.matchAll(/(\d+(?:\.\d+)?)([hms])/g)) {
    total += Number(amount) * (UNIT_SECONDS[unit ?? "s"] ?? 1);
  }
  return total;
}
