/**
 * `may(principal, action, resource)`: the one place a request's permission is decided. Routes,
 * dashboard pages and the TFE adapter all ask it; a workspace the caller cannot see is
 * `not_found` (404, and left out of every list through `readableWorkspaces`), one it sees but may
 * not act on is `forbidden` (403). Agent and run tokens are never decided here: their routes
 * accept no other kind, and `state/access.ts` holds a run token's rules.
 */
import type { Database } from "../db/client.ts";
import {
  type Decision,
  decideOrganization,
  decideProject,
  decideWorkspace,
  type Grants,
  type OrganizationAction,
  type ProjectAction,
  type WorkspaceAction,
} from "./model.ts";
import { isPerson, type PersonPrincipal, type Principal } from "./principal.ts";
import { teamLevelOn, teamLevelOnProject, teamSourceOf } from "./queries.ts";

export type OrganizationResource = { type: "organization"; orgId: string };
/** A workspace as authorization sees it: its project's team access counts on it too. */
export type WorkspaceResource = {
  type: "workspace";
  orgId: string;
  id: string;
  projectId?: string | null;
};
export type ProjectResource = { type: "project"; orgId: string; id: string };

/** What `principal` holds on the workspace: its organization role and its teams' access there. */
export async function grantsOn(
  db: Database,
  principal: PersonPrincipal,
  workspace: Omit<WorkspaceResource, "type">,
): Promise<Grants> {
  if (principal.orgId !== workspace.orgId) {
    return { role: null, teamLevel: null };
  }
  const teamLevel = await teamLevelOn(db, teamSourceOf(principal), {
    workspaceId: workspace.id,
    projectId: workspace.projectId ?? null,
  });
  return { role: principal.role, teamLevel };
}

/** What `principal` holds on the project: its organization role and its teams' access there. */
export async function grantsOnProject(
  db: Database,
  principal: PersonPrincipal,
  project: Omit<ProjectResource, "type">,
): Promise<Grants> {
  if (principal.orgId !== project.orgId) {
    return { role: null, teamLevel: null };
  }
  const teamLevel = await teamLevelOnProject(db, teamSourceOf(principal), project.id);
  return { role: principal.role, teamLevel };
}

/**
 * Decides whether `principal` may do `action` to `resource`. Another organization's resource is
 * `not_found` whatever the caller's role.
 */
export async function may(
  db: Database,
  principal: Principal,
  action: OrganizationAction,
  resource: OrganizationResource,
): Promise<Decision>;
export async function may(
  db: Database,
  principal: Principal,
  action: WorkspaceAction,
  resource: WorkspaceResource,
): Promise<Decision>;
export async function may(
  db: Database,
  principal: Principal,
  action: ProjectAction,
  resource: ProjectResource,
): Promise<Decision>;
export async function may(
  db: Database,
  principal: Principal,
  action: OrganizationAction | WorkspaceAction | ProjectAction,
  resource: OrganizationResource | WorkspaceResource | ProjectResource,
): Promise<Decision> {
  if (!isPerson(principal)) {
    return "forbidden";
  }
  if (principal.orgId !== resource.orgId) {
    return "not_found";
  }
  if (resource.type === "organization") {
    return decideOrganization(principal.role, action as OrganizationAction);
  }
  if (resource.type === "project") {
    return decideProject(await grantsOnProject(db, principal, resource), action as ProjectAction);
  }
  return decideWorkspace(await grantsOn(db, principal, resource), action as WorkspaceAction);
}
