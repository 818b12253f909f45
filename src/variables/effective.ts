/**
 * What a run of a workspace gets: its own variables merged with the variable sets that reach it
 * (global, through its project, or by name), by the one precedence function
 * (`precedence.ts`). The job lease, the effective-variables route and the dashboard all read
 * it here, so what a page shows is what an engine receives.
 */
import type { Database } from "../db/client.ts";
import { type ApplicableSetVariable, applicableSetVariablesQuery } from "../varsets/queries.ts";
import type { Category, StoredVariable } from "./model.ts";
import {
  type Candidate,
  mergeVariables,
  type Overridden,
  type VariableSource,
} from "./precedence.ts";
import { listVariableRows, type VariableRow } from "./queries.ts";
import { decryptVariables, type JobVariable, type OwnedVariable } from "./service.ts";

/** The workspace's variables and those of the sets that reach it, as the merge reads them. */
export type VariableInputs = { own: VariableRow[]; sets: ApplicableSetVariable[] };

/** A workspace as the merge needs it: its id and its organization's (whose sets may apply). */
export type WorkspaceRef = { id: string; orgId: string };

/** The two reads of the merge, to put in a batch (the lease's) or run on their own. */
export function variableInputQueries(db: Database, workspace: WorkspaceRef) {
  return [
    listVariableRows(db, workspace.id),
    applicableSetVariablesQuery(db, workspace.orgId, workspace.id),
  ] as const;
}

/** Reads the merge's inputs in one round trip. */
export async function readVariableInputs(
  db: Database,
  workspace: WorkspaceRef,
): Promise<VariableInputs> {
  const [own, sets] = await db.batch(variableInputQueries(db, workspace));
  return { own, sets };
}

type Owned = OwnedVariable & { key: string; category: Category };

/** Every candidate value, with its source, whose sealed value names its owner. */
function candidatesOf(inputs: VariableInputs): Candidate<Owned>[] {
  const workspace: VariableSource = { type: "workspace" };
  const own = inputs.own.map((row) => ({
    variable: { ownerId: row.workspaceId, row, key: row.key, category: row.category },
    source: workspace,
  }));
  const sets = inputs.sets.map(({ variable, set, scope }) => {
    const source: VariableSource = {
      type: "variable_set",
      id: set.id,
      name: set.name,
      scope,
      priority: set.priority,
    };
    const owned = {
      ownerId: set.id,
      row: variable,
      key: variable.key,
      category: variable.category,
    };
    return { variable: owned, source };
  });
  return [...own, ...sets];
}

/** The merge of a workspace's inputs: what wins, and what loses to what. */
export function mergeInputs(inputs: VariableInputs): {
  effective: Candidate<Owned>[];
  overridden: Overridden<Owned>[];
} {
  return mergeVariables(candidatesOf(inputs));
}

/** The public shape of a variable as a run gets it; a sensitive value is never shown. */
function presentEffective(row: StoredVariable, source: VariableSource) {
  return {
    key: row.key,
    category: row.category,
    value: row.isSensitive ? null : (row.value ?? ""),
    hcl: row.isHcl,
    sensitive: row.isSensitive,
    description: row.description,
    source,
  };
}
export type EffectiveVariable = ReturnType<typeof presentEffective>;

/**
 * What a run of the workspace would get, each variable with its source (the workspace, or which
 * set and how it reaches the workspace), and the values it overrides with theirs; sensitive
 * values redacted.
 */
export async function showEffectiveVariables(db: Database, workspace: WorkspaceRef) {
  const { effective, overridden } = mergeInputs(await readVariableInputs(db, workspace));
  return {
    variables: effective.map((c) => presentEffective(c.variable.row, c.source)),
    overridden: overridden.map((c) => ({
      ...presentEffective(c.variable.row, c.source),
      overriddenBy: c.overriddenBy,
    })),
  };
}

/**
 * The variables a job receives, decrypted (`decryptVariables`, the only place that decrypts),
 * after the merge. A fork's job (no `includeSensitive`) gets no sensitive value, whichever set
 * it comes from, a priority one included: a sensitive winner is withheld, never replaced by a
 * value it overrode, and only its name is told (`withheld`) so the engine can say what it lacks.
 * Throws when a sensitive value cannot be decrypted: a job must not run with a secret missing.
 */
export async function loadVariablesForJob(
  env: { ENCRYPTION_KEY?: string },
  db: Database,
  workspace: WorkspaceRef,
  options: { includeSensitive: boolean; inputs?: VariableInputs },
): Promise<{ variables: JobVariable[]; withheld: { key: string; category: Category }[] }> {
  const inputs = options.inputs ?? (await readVariableInputs(db, workspace));
  const winners = mergeInputs(inputs).effective.map((c) => c.variable);
  const sent = winners.filter((v) => options.includeSensitive || !v.row.isSensitive);
  const withheld = winners
    .filter((v) => !options.includeSensitive && v.row.isSensitive)
    .map((v) => ({ key: v.key, category: v.category }));
  return { variables: await decryptVariables(env, sent), withheld };
}
