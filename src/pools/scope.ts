/**
 * A pool's scope as a create or an update sets it: the stored form of what the input asks over
 * what the pool had, and why a scope may not be stored (it names a workspace or project that is
 * not the organization's). The rule a scope applies is `model.ts`'s `poolScopeRefusal`.
 */
import type { Database } from "../db/client.ts";
import { invalidInput } from "../lib/reason.ts";
import { missingProjects } from "../projects/queries.ts";
import { missingWorkspaces } from "../workspaces/queries.ts";
import { normalizeScope, type PoolScope } from "./model.ts";

/** A new pool's scope: every workspace of the organization. */
export const DEFAULT_SCOPE: PoolScope = {
  organizationScoped: true,
  allowedWorkspaceIds: [],
  allowedProjectIds: [],
};

/** The scope `input` sets over `current` (the default scope for a new pool), stored form. */
export function scopeOf(input: Partial<PoolScope>, current: PoolScope = DEFAULT_SCOPE): PoolScope {
  return normalizeScope({
    organizationScoped: input.organizationScoped ?? current.organizationScoped,
    allowedWorkspaceIds: input.allowedWorkspaceIds ?? current.allowedWorkspaceIds,
    allowedProjectIds: input.allowedProjectIds ?? current.allowedProjectIds,
  });
}

/** Why the scope names something not in the org, or null; only what `before` lacked is checked. */
export async function scopeProblem(
  db: Database,
  orgId: string,
  scope: PoolScope,
  before: PoolScope = DEFAULT_SCOPE,
) {
  const added = (now: readonly string[], was: readonly string[]) =>
    now.filter((id) => !was.includes(id));
  const workspaces = await missingWorkspaces(
    db,
    orgId,
    added(scope.allowedWorkspaceIds, before.allowedWorkspaceIds),
  );
  if (workspaces.length > 0) {
    const message = `workspace ${workspaces.join(", ")} not found in this organization`;
    return invalidInput("json.allowedWorkspaceIds", message);
  }
  const projects = await missingProjects(
    db,
    orgId,
    added(scope.allowedProjectIds, before.allowedProjectIds),
  );
  if (projects.length > 0) {
    const message = `project ${projects.join(", ")} not found in this organization`;
    return invalidInput("json.allowedProjectIds", message);
  }
  return null;
}

export function sameScope(a: PoolScope, b: PoolScope): boolean {
  return JSON.stringify(normalizeScope(a)) === JSON.stringify(normalizeScope(b));
}
