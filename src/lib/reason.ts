/**
 * The one way a service says no: a {@link Result} whose reason has a `kind` from a closed set
 * and a sentence a person reads. Services never know HTTP: only the edge (`src/errors.ts`) turns
 * a kind into an error code and a status, through one table.
 */
import type { Result } from "@outpost/common";

/**
 * Every kind of expected refusal. `invalid`: the input breaks a rule. `not_found`: no such thing
 * in the caller's organization (another organization's things are not found either).
 * `forbidden`: the caller may not. `conflict`: the current state forbids it. `locked`: someone
 * holds it; retry. `too_large`: the input is over a size limit. `over_limit`: too much is
 * queued; retry later. `revoked`: the credential ended. `rejected`: an outside credential (an
 * OIDC token) failed a check. `lease_lost`: the caller's lease is no longer the job's.
 * `gone`: what the credential belonged to was deleted. `out_of_range`: an offset that does not
 * continue what is held. `unavailable`: the deployment lacks a setting this needs.
 */
export const REASON_KINDS = [
  "invalid",
  "not_found",
  "forbidden",
  "conflict",
  "locked",
  "too_large",
  "over_limit",
  "revoked",
  "rejected",
  "lease_lost",
  "gone",
  "out_of_range",
  "unavailable",
] as const;
export type ReasonKind = (typeof REASON_KINDS)[number];

/** One input at fault: where (`json.issuer`, `query.category`) and what is wrong with it. */
export type InputIssue = { readonly path: string; readonly message: string };

/** Why a service refused. `K` narrows the kinds a service can answer, so callers see them. */
export type Reason<K extends ReasonKind = ReasonKind> = {
  readonly kind: K;
  /** The whole sentence, naming what was refused and, when there is one, what to do. */
  readonly message: string;
  /** For `invalid`: the inputs at fault. */
  readonly issues?: readonly InputIssue[];
  /** Facts a client may act on: the runs in the way, who holds a lock. */
  readonly details?: Readonly<Record<string, unknown>>;
  /** For `over_limit` and `locked`: when a retry may succeed. */
  readonly retryAfterSeconds?: number;
};

/** A service outcome: the value, or why not. */
export type Outcome<T, K extends ReasonKind = ReasonKind> = Result<T, Reason<K>>;

/** Extra facts of a refusal besides its kind and sentence. */
export type ReasonExtra = Omit<Reason, "kind" | "message">;

/**
 * A refused outcome of kind `kind`, with its sentence. `extra` may also carry facts of the
 * service's own (a held lock's info), typed on the reason for the caller that needs them.
 */
export function refuse<K extends ReasonKind, E extends object = ReasonExtra>(
  kind: K,
  message: string,
  extra?: E & ReasonExtra,
): { ok: false; reason: Reason<K> & E } {
  return { ok: false, reason: { ...(extra as E), kind, message } };
}

/**
 * An `invalid` refusal about one input (`json.issuer`): what is wrong with it, and the sentence
 * (the same words unless given).
 */
export function invalidInput(
  path: string,
  issue: string,
  message = issue,
): { ok: false; reason: Reason<"invalid"> } {
  return refuse("invalid", message, { issues: [{ path, message: issue }] });
}
