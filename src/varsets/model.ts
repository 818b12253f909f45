/**
 * Variable sets, pure: names, how a path names one (its `varset_…` id or its name), the public
 * shapes, and the rule that keeps global sets from disagreeing. The order in which sets and the
 * workspace's own variables win is `variables/precedence.ts`'s.
 */
import { z } from "@hono/zod-openapi";
import { idPattern } from "@outpost/common";
import type { variableSets } from "../db/schema.ts";
import type { Category } from "../variables/model.ts";

export type VariableSetRow = typeof variableSets.$inferSelect;

export const VARSET_ID_PATTERN = idPattern("variableSet");

// Names may not start with "varset_", so a path segment is unambiguously an id or a name.
const NAME_PATTERN = /^(?!varset_)[A-Za-z0-9](?:[A-Za-z0-9 ._-]{0,88}[A-Za-z0-9._-])?$/;

export const VariableSetName = z
  .string()
  .regex(
    NAME_PATTERN,
    "letters, digits, spaces, '.', '-' and '_', starting with a letter or digit, not ending with a space, at most 90, not starting with varset_",
  )
  .openapi({ example: "aws-credentials" });

/** A variable set as a path names it: its `varset_…` id or its name. */
export const VariableSetRef = z
  .string()
  .refine((v) => VARSET_ID_PATTERN.test(v) || NAME_PATTERN.test(v), {
    message: "must be a varset_ id or a variable set name",
  })
  .openapi({
    param: { name: "varsetId", in: "path" },
    description: "The variable set's id (varset_…) or its name",
    example: "aws-credentials",
  });

const iso = (ms: number) => new Date(ms).toISOString();

/** Where a set is applied: the projects and workspaces named, by id and name. */
export type SetLinks = {
  projects: { id: string; name: string }[];
  workspaces: { id: string; name: string }[];
};

/** The public shape of a variable set, with where it is applied and how many variables it has. */
export function presentVariableSet(row: VariableSetRow, links: SetLinks, variableCount: number) {
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    global: row.global,
    priority: row.priority,
    projects: links.projects,
    workspaces: links.workspaces,
    variableCount,
    createdAt: iso(row.createdAt),
    updatedAt: iso(row.updatedAt),
  };
}
export type VariableSet = ReturnType<typeof presentVariableSet>;

/**
 * Why a global set may not hold these variables, or null: as in Terraform Cloud, two global
 * sets may not set the same variable (the same key in the same category), since both reach every
 * workspace with nothing to choose between them. `others` are the other global sets' variables.
 */
export function globalConflict(
  setName: string,
  mine: readonly { key: string; category: Category }[],
  others: readonly { key: string; category: Category; setName: string }[],
): string | null {
  for (const variable of mine) {
    const clash = others.find((o) => o.key === variable.key && o.category === variable.category);
    if (clash) {
      return `global variable sets ${clash.setName} and ${setName} would both set the ${variable.category} variable ${variable.key}; global sets may not share a variable`;
    }
  }
  return null;
}
