/** What pure code and services return for expected outcomes; throwing is for bugs. */
export type Result<T, R> = { ok: true; value: T } | { ok: false; reason: R };

/** The expected outcome, carrying its value. */
export function ok<T>(value: T): { ok: true; value: T } {
  return { ok: true, value };
}

/**
 * An expected refusal, named by a reason the caller maps (a route: to a code and a status);
 * `const` keeps a literal reason (`fail("lease_lost")`) as its own type.
 */
export function fail<const R>(reason: R): { ok: false; reason: R } {
  return { ok: false, reason };
}
