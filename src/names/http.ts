/** The HTTP edge of the resolver: a path parameter to the thing it names, or the refusal. */
import type { Context } from "hono";
import type { Database } from "../db/client.ts";
import type { AppEnv } from "../env.ts";
import { reasonError } from "../errors.ts";
import type { RefKind } from "./model.ts";
import { type RefScope, resolveRef } from "./service.ts";

/**
 * What `ref` names in `scope` (see {@link resolveRef}); a miss throws the 404 (409 for a shared
 * token description) the error middleware answers.
 */
export async function resolvedOrThrow<K extends RefKind>(
  db: Database,
  kind: K,
  scope: RefScope,
  ref: string,
) {
  const result = await resolveRef(db, kind, scope, ref);
  if (!result.ok) {
    throw reasonError(result.reason);
  }
  return result.value;
}

/**
 * The id of the `kind` the path parameter `ref` names in the caller's org (agent tokens: within
 * the pool `poolId`, a description naming exactly one active token); a miss throws.
 */
export async function idOf(
  c: Context<AppEnv>,
  kind: RefKind,
  ref: string,
  poolId?: string,
): Promise<string> {
  const scope = { orgId: c.get("principal").orgId, poolId, now: c.var.deps.now() };
  return (await resolvedOrThrow(c.var.db, kind, scope, ref)).id;
}
