/**
 * Projects, pure: what a project may be named, how a path names one (its `prj_…` id or its
 * name), and its public shapes. A project groups workspaces: every workspace belongs to exactly
 * one, and a team's access to a project counts on each of its workspaces.
 */
import { z } from "@hono/zod-openapi";
import { idPattern } from "@outpost/common";
import type { projects, projectTeamAccess } from "../db/schema.ts";

export type ProjectRow = typeof projects.$inferSelect;
export type ProjectTeamAccessRow = typeof projectTeamAccess.$inferSelect;

export const PROJECT_ID_PATTERN = idPattern("project");

/** The name of the project every organization has, where workspaces go by default. */
export const DEFAULT_PROJECT_NAME = "Default Project";
export const DEFAULT_PROJECT_DESCRIPTION = "Where workspaces go when no project is named";

// Names may not start with "prj_", so a path segment is unambiguously an id or a name; spaces
// inside are allowed (Terraform Cloud's own default project is "Default Project").
const NAME_PATTERN = /^(?!prj_)[A-Za-z0-9](?:[A-Za-z0-9 _-]{0,88}[A-Za-z0-9_-])?$/;
const NAME_RULE =
  "letters, digits, spaces, '-' and '_', starting with a letter or digit, not ending with a space, at most 90, not starting with prj_";

export const ProjectName = z
  .string()
  .regex(NAME_PATTERN, NAME_RULE)
  .openapi({ example: "networking" });

/** A project as a path or a body names it: its `prj_…` id or its name. */
export const ProjectRef = z
  .string()
  .refine((v) => PROJECT_ID_PATTERN.test(v) || NAME_PATTERN.test(v), {
    message: "must be a prj_ id or a project name",
  })
  .openapi({ description: "The project's id (prj_…) or its name", example: "networking" });

export const ProjectDescription = z.string().max(1000);

const iso = (ms: number) => new Date(ms).toISOString();

/** The public shape of a project, with how many workspaces it holds. */
export function presentProject(row: ProjectRow, workspaceCount: number) {
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    isDefault: row.isDefault,
    workspaceCount,
    createdAt: iso(row.createdAt),
    updatedAt: iso(row.updatedAt),
  };
}
export type Project = ReturnType<typeof presentProject>;

/** The public shape of a team's access to a project. */
export function presentProjectTeamAccess(row: ProjectTeamAccessRow, teamName: string) {
  return {
    projectId: row.projectId,
    teamId: row.teamId,
    teamName,
    access: row.access,
    updatedAt: iso(row.updatedAt),
  };
}

/** The sentence of a refused delete: the project still holds workspaces. */
export function notEmptyMessage(name: string, count: number): string {
  const what = count === 1 ? "1 workspace" : `${count} workspaces`;
  return `project ${name} still holds ${what}; move them to another project or delete them first`;
}
