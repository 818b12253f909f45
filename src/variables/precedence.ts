/**
 * Which value a run gets when the workspace's own variables and the variable sets applied to it
 * name the same variable (the same key in the same category): Terraform Cloud's documented
 * precedence (its "Variables" page, section Precedence), in one pure function. From the highest:
 *
 * 1. priority global sets, 2. priority project-scoped sets, 3. priority workspace-scoped sets,
 * 4. the workspace's own variables, 5. workspace-scoped sets, 6. project-scoped sets, 7. global
 * sets. Between sets of the same rank, the set whose name comes first in the lexical order of
 * Unicode code points wins ("A_Variable_Set" over "B_Variable_Set"), whichever was edited last.
 *
 * Outpost's sets are all the organization's, so Terraform Cloud's split by owner (organization
 * or project) does not arise; run-specific values (`-var` on a CLI run) do not exist here.
 */
import type { Category } from "./model.ts";

/** How a set reaches the workspace: to every workspace, through its project, or by name. */
export const SET_SCOPES = ["global", "project", "workspace"] as const;
export type SetScope = (typeof SET_SCOPES)[number];

/** Where a variable comes from: the workspace's own, or a variable set applied to it. */
export type VariableSource =
  | { type: "workspace" }
  | { type: "variable_set"; id: string; name: string; scope: SetScope; priority: boolean };

/** One candidate value for a variable. */
export type Candidate<V extends { key: string; category: Category }> = {
  variable: V;
  source: VariableSource;
};

/** A candidate that lost, with the source whose value won. */
export type Overridden<V extends { key: string; category: Category }> = Candidate<V> & {
  overriddenBy: VariableSource;
};

/** The ranks, highest first: the order the module comment gives. */
const RANKS = [
  "priority global set",
  "priority project set",
  "priority workspace set",
  "workspace variable",
  "workspace set",
  "project set",
  "global set",
] as const;

/** A source's rank, 0 the highest. */
export function rankOf(source: VariableSource): number {
  if (source.type === "workspace") {
    return RANKS.indexOf("workspace variable");
  }
  return RANKS.indexOf(`${source.priority ? "priority " : ""}${source.scope} set`);
}

/** Compares two strings by their Unicode code points (not UTF-16 code units). */
export function compareCodePoints(a: string, b: string): number {
  const left = Array.from(a);
  const right = Array.from(b);
  for (let i = 0; i < Math.min(left.length, right.length); i++) {
    const diff = (left[i]?.codePointAt(0) ?? 0) - (right[i]?.codePointAt(0) ?? 0);
    if (diff !== 0) {
      return diff;
    }
  }
  return left.length - right.length;
}

/** Negative when `a` wins over `b`: the higher rank, then the set name first in code points. */
function compareSources(a: VariableSource, b: VariableSource): number {
  const byRank = rankOf(a) - rankOf(b);
  if (byRank !== 0 || a.type !== "variable_set" || b.type !== "variable_set") {
    return byRank;
  }
  return compareCodePoints(a.name, b.name);
}

/**
 * Merges the candidates into what a run gets: one winner per (category, key), by category then
 * key, and every losing candidate with the source that beat it. The input's order does not
 * matter.
 */
export function mergeVariables<V extends { key: string; category: Category }>(
  candidates: readonly Candidate<V>[],
): { effective: Candidate<V>[]; overridden: Overridden<V>[] } {
  const groups = new Map<string, Candidate<V>[]>();
  for (const candidate of candidates) {
    const id = `${candidate.variable.category}\u0000${candidate.variable.key}`;
    groups.set(id, [...(groups.get(id) ?? []), candidate]);
  }
  const effective: Candidate<V>[] = [];
  const overridden: Overridden<V>[] = [];
  for (const group of groups.values()) {
    const [winner, ...losers] = [...group].sort((a, b) => compareSources(a.source, b.source));
    if (!winner) {
      continue;
    }
    effective.push(winner);
    overridden.push(...losers.map((loser) => ({ ...loser, overriddenBy: winner.source })));
  }
  const order = (a: Candidate<V>, b: Candidate<V>) =>
    a.variable.category.localeCompare(b.variable.category) ||
    compareCodePoints(a.variable.key, b.variable.key);
  return { effective: effective.sort(order), overridden: overridden.sort(order) };
}
