/**
 * How a path names a thing of the organization: by its id (`ws_…`, `pool_…`, `atok_…`) or by
 * what people call it (a workspace's or pool's name, an agent token's description). Pure: the
 * path parameter grammar and the sentences a failed lookup answers. The lookup is `service.ts`.
 */
import { z } from "@hono/zod-openapi";

/** The things a path may name by id or by name, with how the sentences call them. */
export const REF_KINDS = {
  workspace: { prefix: "ws", noun: "workspace", field: "name", scope: "this organization" },
  pool: { prefix: "pool", noun: "agent pool", field: "name", scope: "this organization" },
  agentToken: { prefix: "atok", noun: "agent token", field: "description", scope: "this pool" },
} as const;
export type RefKind = keyof typeof REF_KINDS;

/** Longest name or description a path may carry (token descriptions go up to 200). */
const MAX_REF_LENGTH = 200;
// Control characters never name anything and have no business in a sentence we echo back.
const CONTROL_CHARS = /\p{Cc}/u;

/** Whether `ref` has the grammar of an id of `kind` (else it is a name or description). */
export function isIdRef(kind: RefKind, ref: string): boolean {
  return new RegExp(`^${REF_KINDS[kind].prefix}_[a-z2-7]{26}$`).test(ref);
}

/**
 * A path parameter naming a `kind` by id or by name (description for agent tokens). Text that
 * could be an id or a name passes (`names` is the grammar of names, when the kind has one):
 * whether it names something is the resolver's answer, a 404 in words, not a grammar error.
 */
export function refParam(kind: RefKind, name: string, names?: RegExp) {
  return refField(kind, names).openapi({ param: { name, in: "path" } });
}

/**
 * A body field naming a `kind` by id or by name, with the grammar of {@link refParam}; the
 * service resolves it (a miss is a 400 on the field in the resolver's words).
 */
export function refField(kind: RefKind, names?: RegExp) {
  const { prefix, noun, field } = REF_KINDS[kind];
  return z
    .string()
    .min(1, `must name the ${noun} by id or ${field}`)
    .max(MAX_REF_LENGTH, `must be at most ${MAX_REF_LENGTH} characters`)
    .refine((v) => !CONTROL_CHARS.test(v), "must not contain control characters")
    .refine(
      (v) => names === undefined || isIdRef(kind, v) || names.test(v),
      `must be a ${prefix}_ id or a ${noun} ${field}`,
    )
    .openapi({
      description: `The ${noun}'s id (${prefix}_…) or its ${field}${kind === "agentToken" ? " when no other active token of the pool has it" : ""}`,
      example: kind === "workspace" ? "network-prod" : kind === "pool" ? "datacenter-1" : "ci",
    });
}

/** "no workspace named localws in this organization", "no agent pool with id pool_… in …". */
export function notFoundSentence(kind: RefKind, ref: string): string {
  const { noun, field, scope } = REF_KINDS[kind];
  if (isIdRef(kind, ref)) {
    return `no ${noun} with id ${ref} in ${scope}`;
  }
  return field === "name"
    ? `no ${noun} named ${ref} in ${scope}`
    : `no active ${noun} described "${ref}" in ${scope}`;
}

/** The sentence for a description several active tokens share, listing their ids. */
export function ambiguousSentence(kind: RefKind, ref: string, ids: readonly string[]): string {
  const { noun, field, scope } = REF_KINDS[kind];
  return `${ids.length} ${noun}s in ${scope} have the ${field} "${ref}"; name one by its id (${ids.join(", ")})`;
}
