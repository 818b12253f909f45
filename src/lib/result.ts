/** What pure code and services return for expected outcomes; throwing is for bugs. */
export type Result<T, R> = { ok: true; value: T } | { ok: false; reason: R };

export function ok<T>(value: T): { ok: true; value: T } {
  return { ok: true, value };
}

/** A refusal; `const` keeps a literal reason (`fail("lease_lost")`) as its own type. */
export function fail<const R>(reason: R): { ok: false; reason: R } {
  return { ok: false, reason };
}
