/**
 * What each caller may do, pure (docs/people.md has the same table in words). Two sources grant
 * permissions and the higher one wins: the organization role (of an org token, or the highest of
 * a person's teams) and the team access a caller's teams hold on a workspace (`read < plan <
 * write < admin`, Terraform Cloud's fixed sets; a project's team access is one more input to the
 * same level). Every workspace action names the team access it needs and the organization role
 * that grants it without any team access; most roles grant what their level does (owner and admin
 * → admin, member → write, reader → read), and the few exceptions keep org tokens working exactly
 * as they did before teams existed.
 */
import { type Role, roleAtLeast } from "../tokens/model.ts";

export const ACCESS_LEVELS = ["read", "plan", "write", "admin"] as const;
export type AccessLevel = (typeof ACCESS_LEVELS)[number];

const LEVEL_RANK: Record<AccessLevel, number> = { read: 0, plan: 1, write: 2, admin: 3 };

/** True when `level` includes what `required` allows. */
export function levelAtLeast(level: AccessLevel, required: AccessLevel): boolean {
  return LEVEL_RANK[level] >= LEVEL_RANK[required];
}

/** The highest of some levels, or null when there are none. */
export function highestLevel(levels: Iterable<AccessLevel | null>): AccessLevel | null {
  let best: AccessLevel | null = null;
  for (const level of levels) {
    if (level !== null && (best === null || LEVEL_RANK[level] > LEVEL_RANK[best])) {
      best = level;
    }
  }
  return best;
}

/** The highest of some roles, or null when there are none. */
export function highestRole(roles: Iterable<Role | null>): Role | null {
  let best: Role | null = null;
  for (const role of roles) {
    if (role !== null && (best === null || roleAtLeast(role, best))) {
      best = role;
    }
  }
  return best;
}

/** The access an organization role holds on every workspace of its organization. */
export const ROLE_LEVEL: Record<Role, AccessLevel> = {
  owner: "admin",
  admin: "admin",
  member: "write",
  reader: "read",
};

/** The lowest role whose level includes `level`: the default role an action needs. */
const LEVEL_ROLE: Record<AccessLevel, Role> = {
  read: "reader",
  plan: "member",
  write: "member",
  admin: "admin",
};

type WorkspaceRule = { level: AccessLevel; role: Role; doing: string };

function rule(level: AccessLevel, doing: string, role: Role = LEVEL_ROLE[level]): WorkspaceRule {
  return { level, role, doing };
}

/**
 * Every action on a workspace or what it holds (runs, variables, configurations, state), with the
 * team access it needs and the organization role that grants it. Reading covers the workspace,
 * its runs and their logs, its variables (sensitive values are never shown), configuration
 * versions, state versions' metadata and outputs with sensitive values hidden.
 */
export const WORKSPACE_ACTIONS = {
  "workspace.read": rule("read", "read"),
  "run.queue": rule("plan", "queue runs"),
  // A non-speculative run on an auto-apply workspace applies without anyone confirming it.
  "run.queue_auto_apply": rule("write", "queue runs that apply without a confirm"),
  "configuration.upload": rule("plan", "upload configurations"),
  "run.confirm": rule("write", "confirm runs"),
  "run.discard": rule("write", "discard runs"),
  "run.cancel": rule("write", "cancel runs"),
  "workspace.lock": rule("write", "lock and unlock"),
  // Org admins edited variables before teams existed, members did not; reader tokens could
  // download state. Both stay so.
  "variables.write": rule("write", "edit variables", "admin"),
  "state.download": rule("write", "download state", "reader"),
  "state.write": rule("write", "lock and write state"),
  "state.reveal": rule("write", "show sensitive output values", "admin"),
  "state.rollback": rule("admin", "roll back state"),
  "state.force_unlock": rule("admin", "force-unlock"),
  "state.delete": rule("admin", "delete state"),
  "workspace.force_unlock": rule("admin", "force-unlock"),
  "workspace.update": rule("admin", "change settings"),
  // A schedule queues runs (applies and destroys too) with nobody present: a setting.
  "schedule.manage": rule("admin", "manage schedules"),
  // An assessment is a plan that changes nothing, like a speculative run.
  "assessment.start": rule("plan", "start assessments"),
  "workspace.delete": rule("admin", "delete"),
  "team_access.manage": rule("admin", "manage team access"),
  // A destination URL (a Slack webhook's, say) is itself a credential: only admins see them.
  "notifications.manage": rule("admin", "manage notifications"),
  "run_triggers.manage": rule("admin", "manage run triggers"),
} as const satisfies Record<string, WorkspaceRule>;
export type WorkspaceAction = keyof typeof WORKSPACE_ACTIONS;

/**
 * Every action on a project itself, with the project team access it needs and the organization
 * role that grants it. What a project's team access allows on the project's workspaces is
 * {@link WORKSPACE_ACTIONS}': it counts there as access given on each workspace.
 */
export const PROJECT_ACTIONS = {
  "project.read": rule("read", "read"),
  "project.update": rule("admin", "change settings"),
  "project.delete": rule("admin", "delete"),
  "project.team_access.manage": rule("admin", "manage team access"),
  // Moving a workspace in: its admins decide where its runs' permissions come from.
  "project.add_workspace": rule("admin", "move workspaces into it"),
} as const satisfies Record<string, WorkspaceRule>;
export type ProjectAction = keyof typeof PROJECT_ACTIONS;

/**
 * Actions on the organization itself, with the role each needs; null: any person or token of
 * the organization, with or without a role.
 */
export const ORGANIZATION_ACTIONS = {
  "organization.read": null,
  "teams.read": null,
  "organization.create": "owner",
  "org_tokens.manage": "owner",
  "pools.read": "reader",
  // GET /metrics and a pool's autoscaling signal: what a scraper or an autoscaler reads.
  "operations.read": "reader",
  "pools.manage": "owner",
  "oidc_trusts.manage": "owner",
  "secrets.reencrypt": "owner",
  "sso.manage": "owner",
  "teams.manage": "owner",
  "users.manage": "owner",
  "users.read": "admin",
  "audit.read": "admin",
  "vcs_hooks.manage": "admin",
  "workspace.create": "admin",
  "projects.create": "admin",
  "variable_sets.read": "reader",
  "variable_sets.manage": "admin",
} as const satisfies Record<string, Role | null>;
export type OrganizationAction = keyof typeof ORGANIZATION_ACTIONS;

/**
 * What a caller holds on one workspace (or project): its organization role and the highest
 * access its teams have there (on a workspace: through the workspace or its project).
 */
export type Grants = { role: Role | null; teamLevel: AccessLevel | null };

export type Decision = "allow" | "forbidden" | "not_found";

/** Whether the caller sees the workspace at all: any organization role does, or any team access. */
export function canSee(grants: Grants): boolean {
  return grants.role !== null || grants.teamLevel !== null;
}

/** The access the caller holds on the workspace, the higher of its role's and its teams'. */
export function effectiveLevel(grants: Grants): AccessLevel | null {
  return highestLevel([grants.role === null ? null : ROLE_LEVEL[grants.role], grants.teamLevel]);
}

/**
 * The decision for a workspace action: `not_found` when the caller cannot see the workspace
 * (it answers 404, as another organization's would), `allow` when its teams' access or its
 * organization role grants the action, else `forbidden`.
 */
export function decideWorkspace(grants: Grants, action: WorkspaceAction): Decision {
  return decideRule(grants, WORKSPACE_ACTIONS[action]);
}

/** The decision for a project action, by the same rule as a workspace's. */
export function decideProject(grants: Grants, action: ProjectAction): Decision {
  return decideRule(grants, PROJECT_ACTIONS[action]);
}

function decideRule(grants: Grants, needs: WorkspaceRule): Decision {
  if (!canSee(grants)) {
    return "not_found";
  }
  const byTeam = grants.teamLevel !== null && levelAtLeast(grants.teamLevel, needs.level);
  const byRole = grants.role !== null && roleAtLeast(grants.role, needs.role);
  return byTeam || byRole ? "allow" : "forbidden";
}

/** The decision for an organization action: the role alone decides. */
export function decideOrganization(role: Role | null, action: OrganizationAction): Decision {
  const needs: Role | null = ORGANIZATION_ACTIONS[action];
  if (needs === null) {
    return "allow";
  }
  return role !== null && roleAtLeast(role, needs) ? "allow" : "forbidden";
}

/** The sentence of a refused workspace action. */
export function workspaceRefusal(action: WorkspaceAction, workspaceName: string): string {
  const needs: WorkspaceRule = WORKSPACE_ACTIONS[action];
  return `to ${needs.doing} on workspace ${workspaceName} you need ${needs.level} access to it or the ${needs.role} role`;
}

/** The sentence of a refused project action. */
export function projectRefusal(action: ProjectAction, projectName: string): string {
  const needs: WorkspaceRule = PROJECT_ACTIONS[action];
  return `to ${needs.doing} on project ${projectName} you need ${needs.level} access to it or the ${needs.role} role`;
}

/** The sentence of a refused organization action. */
export function organizationRefusal(action: OrganizationAction): string {
  return `this action needs the ${ORGANIZATION_ACTIONS[action] ?? "reader"} role`;
}
