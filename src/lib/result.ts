/** What pure code and services return for expected outcomes; throwing is for bugs. */
export type Result<T, R extends string> = { ok: true; value: T } | { ok: false; reason: R };

export function ok<T>(value: T): { ok: true; value: T } {
  return { ok: true, value };
}

export function fail<R extends string>(reason: R): { ok: false; reason: R } {
  return { ok: false, reason };
}
