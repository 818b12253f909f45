/**
 * The one resolver for names in paths: every `{workspaceId}`, `{poolId}` and agent `{tokenId}`
 * parameter goes through {@link resolveRef}, so an id and a name (a description for agent tokens)
 * address the same thing everywhere and a miss reads the same everywhere.
 */
import { ok } from "@outpost/common";
import type { Database } from "../db/client.ts";
import { type Outcome, refuse } from "../lib/reason.ts";
import type { AgentTokenRow, PoolRow } from "../pools/model.ts";
import type { WorkspaceRow } from "../workspaces/queries.ts";
import { ambiguousSentence, isIdRef, notFoundSentence, type RefKind } from "./model.ts";
import {
  findAgentTokenById,
  findAgentTokensByDescription,
  findPoolRef,
  findWorkspaceRef,
} from "./queries.ts";

/** What a reference resolves to, per kind. */
type Resolved = { workspace: WorkspaceRow; pool: PoolRow; agentToken: AgentTokenRow };

/** Where a reference is looked up: always an org; agent tokens within a pool (its id), at `now`. */
export type RefScope = { readonly orgId: string; readonly poolId?: string; readonly now?: number };

/**
 * The `kind` of the scope that `ref` names: by id when it has the id grammar, else by name (or,
 * for agent tokens, by the description of exactly one active token). `not_found` (also for
 * another organization's ids) says "no workspace named … in this organization"; `conflict` when
 * a description is shared, listing the ids to choose from.
 */
export async function resolveRef<K extends RefKind>(
  db: Database,
  kind: K,
  scope: RefScope,
  ref: string,
): Promise<Outcome<Resolved[K], "not_found" | "conflict">> {
  const rows = (await candidates(db, kind, scope, ref)) as Resolved[K][];
  const [first] = rows;
  if (!first) {
    return refuse("not_found", notFoundSentence(kind, ref));
  }
  if (rows.length > 1) {
    return refuse(
      "conflict",
      ambiguousSentence(
        kind,
        ref,
        rows.map((r) => r.id),
      ),
    );
  }
  return ok(first);
}

async function candidates(
  db: Database,
  kind: RefKind,
  scope: RefScope,
  ref: string,
): Promise<Resolved[RefKind][]> {
  const byId = isIdRef(kind, ref);
  switch (kind) {
    case "workspace": {
      const row = await findWorkspaceRef(db, scope.orgId, ref);
      return row ? [row] : [];
    }
    case "pool": {
      const row = await findPoolRef(db, scope.orgId, ref, byId);
      return row ? [row] : [];
    }
    case "agentToken": {
      // Tokens live in a pool, and only active ones are named by description.
      if (scope.poolId === undefined || scope.now === undefined) {
        return [];
      }
      return byId
        ? findAgentTokenById(db, scope.orgId, scope.poolId, ref)
        : findAgentTokensByDescription(db, scope.orgId, scope.poolId, ref, scope.now);
    }
  }
}
