/**
 * A schedule's rules, pure: which cron expressions and time zones are accepted, when the next
 * occurrence is, and which occurrence a tick at a given time owes. Cron is read by `croner` in
 * its five-field mode (minute hour day-of-month month day-of-week, Vixie cron's meaning), so the
 * finest interval is one minute by construction.
 */
import { fail, ok, type Result } from "@outpost/common";
import { Cron } from "croner";

/** At most this many schedules per workspace. */
export const MAX_SCHEDULES_PER_WORKSPACE = 20;

/**
 * A parsed schedule: its five fields in a time zone. Built only through {@link parseSchedule}.
 */
export type CronSchedule = { readonly cron: Cron };

/** Whether `timezone` is an IANA time zone this runtime knows (`UTC`, `Europe/Berlin`). */
export function isTimeZone(timezone: string): boolean {
  if (timezone.length === 0 || timezone.length > 64) {
    return false;
  }
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: timezone });
    return true;
  } catch {
    return false;
  }
}

/**
 * Parses `expression` in `timezone`: exactly five whitespace-separated fields (no seconds, no
 * `@daily` nicknames), each valid, and at least one future occurrence (`0 0 30 2 *` never
 * comes). Answers the sentence to show when it is refused, naming the field.
 */
export function parseSchedule(
  expression: string,
  timezone: string,
  now: number,
): Result<CronSchedule, { field: "cron" | "timezone"; message: string }> {
  if (!isTimeZone(timezone)) {
    return fail({
      field: "timezone",
      message: `timezone "${timezone}" is not an IANA time zone (such as UTC or Europe/Berlin)`,
    });
  }
  const fields = expression.trim().split(/\s+/);
  if (fields.length !== 5) {
    return fail({
      field: "cron",
      message: `cron "${expression}" must have five fields (minute hour day-of-month month day-of-week), it has ${expression.trim() === "" ? 0 : fields.length}`,
    });
  }
  let cron: Cron;
  try {
    cron = new Cron(fields.join(" "), { timezone, paused: true, mode: "5-part" });
  } catch (error) {
    return fail({
      field: "cron",
      message: `cron "${expression}" is not valid: ${cronError(error)}`,
    });
  }
  const schedule = { cron };
  if (nextOccurrence(schedule, now) === null) {
    return fail({ field: "cron", message: `cron "${expression}" never occurs` });
  }
  return ok(schedule);
}

function cronError(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return message.replace(/^CronPattern: /, "");
}

/** The first occurrence strictly after `after` (ms), or null when there is none. */
export function nextOccurrence(schedule: CronSchedule, after: number): number | null {
  try {
    return schedule.cron.nextRun(new Date(after))?.getTime() ?? null;
  } catch {
    // croner throws on patterns that can never match (the 30th of February).
    return null;
  }
}

/**
 * The occurrence a tick at `now` owes: the latest one at or before `now`, but never one before
 * `nextRunAt` (the first the schedule has not looked at yet). A late tick thus queues the newest
 * missed occurrence once, not a burst of them; null when nothing is due.
 */
export function dueOccurrence(
  schedule: CronSchedule,
  nextRunAt: number,
  now: number,
): number | null {
  if (nextRunAt > now) {
    return null;
  }
  let latest: number | undefined;
  try {
    latest = schedule.cron.previousRuns(1, new Date(now + 1000))[0]?.getTime();
  } catch {
    latest = undefined;
  }
  // croner counts whole seconds before its reference, so `now + 1 s` includes `now`.
  // `nextRunAt` is itself an occurrence at or before `now`, so the latest is never earlier.
  return latest === undefined ? nextRunAt : Math.max(latest, nextRunAt);
}
