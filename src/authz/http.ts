/**
 * `may` at the HTTP edge: a workspace the caller cannot see answers 404 like a missing one, an
 * action it may not do there 403 with the access it would need. Routes and dashboard pages call
 * this after finding the workspace and before calling the service.
 */
import type { Database } from "../db/client.ts";
import { ApiError } from "../errors.ts";
import { decideWorkspace, type Grants, type WorkspaceAction, workspaceRefusal } from "./model.ts";
import type { PersonPrincipal } from "./principal.ts";
import { grantsOn } from "./service.ts";

export type AuthorizedWorkspace = {
  id: string;
  orgId: string;
  name: string;
  projectId?: string | null;
};

/**
 * Throws 404 NOT_FOUND when the caller cannot see the workspace and 403 FORBIDDEN when it may not
 * do `action` there; returns what the caller holds on it (for pages showing what it may do).
 */
export async function authorizeWorkspace(
  db: Database,
  principal: PersonPrincipal,
  action: WorkspaceAction,
  workspace: AuthorizedWorkspace,
): Promise<Grants> {
  const grants = await grantsOn(db, principal, workspace);
  switch (decideWorkspace(grants, action)) {
    case "allow":
      return grants;
    case "not_found":
      throw new ApiError("NOT_FOUND", `workspace ${workspace.name} not found`);
    case "forbidden":
      throw new ApiError("FORBIDDEN", workspaceRefusal(action, workspace.name));
  }
}
