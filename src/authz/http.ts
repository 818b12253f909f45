/**
 * `may` at the HTTP edge: a workspace or project the caller cannot see answers 404 like a missing
 * one, an action it may not do there 403 with the access it would need. Routes and dashboard pages call
 * this after finding the workspace and before calling the service.
 */
import type { Database } from "../db/client.ts";
import { ApiError } from "../errors.ts";
import {
  decideProject,
  decideWorkspace,
  type Grants,
  type ProjectAction,
  projectRefusal,
  type WorkspaceAction,
  workspaceRefusal,
} from "./model.ts";
import type { PersonPrincipal } from "./principal.ts";
import { grantsOn, grantsOnProject } from "./service.ts";

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

/**
 * The same for a project: 404 NOT_FOUND when the caller cannot see it, 403 FORBIDDEN when it may
 * not do `action` there; returns what the caller holds on it.
 */
export async function authorizeProject(
  db: Database,
  principal: PersonPrincipal,
  action: ProjectAction,
  project: { id: string; orgId: string; name: string },
): Promise<Grants> {
  const grants = await grantsOnProject(db, principal, project);
  switch (decideProject(grants, action)) {
    case "allow":
      return grants;
    case "not_found":
      throw new ApiError("NOT_FOUND", `project ${project.name} not found`);
    case "forbidden":
      throw new ApiError("FORBIDDEN", projectRefusal(action, project.name));
  }
}
