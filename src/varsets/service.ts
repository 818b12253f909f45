/**
 * Variable sets: create, list, change and delete, each change with its audit event in the same D1
 * batch. Their variables go through the variables service (`setVariables` is their store), with
 * one more rule for global sets: two of them may not set the same variable. Where a set applies
 * is `links.ts`.
 */

import { newId, ok } from "@outpost/common";
import { sql } from "drizzle-orm";
import { auditQuery, auditWhereQuery } from "../audit/service.ts";
import type { AuditActor } from "../authz/actor.ts";
import type { Database } from "../db/client.ts";
import type { Deps } from "../deps.ts";
import { type Outcome, refuse } from "../lib/reason.ts";
import {
  type PutInput,
  putStoredVariable,
  type Variable,
  type VariableResult,
} from "../variables/service.ts";
import {
  globalConflict,
  presentVariableSet,
  type SetLinks,
  type VariableSet,
  type VariableSetRow,
} from "./model.ts";
import {
  countSetVariables,
  deleteVariableSetQuery,
  findVariableSet,
  insertVariableSetQuery,
  linksOf,
  listVariableSetRows,
  otherGlobalVariables,
  setVariables,
  unlinkAllQueries,
  updateVariableSetQuery,
} from "./queries.ts";

/** Who acts, in which organization, and when. */
export type SetCtx = { orgId: string; actor: AuditActor; now: number };

/** What a create or an update may set. */
export type SetInput = {
  name?: string | undefined;
  description?: string | undefined;
  global?: boolean | undefined;
  priority?: boolean | undefined;
};

const NO_LINKS: SetLinks = { projects: [], workspaces: [] };

function nameTaken(name: string) {
  return refuse("conflict", `a variable set named ${name} exists`);
}

/** The set of the org named by `ref` (its `varset_…` id or its name), or undefined. */
export function resolveVariableSet(db: Database, orgId: string, ref: string) {
  return findVariableSet(db, orgId, ref);
}

/** The set as the API shows it: where it applies and how many variables it holds. */
export async function showVariableSet(db: Database, row: VariableSetRow): Promise<VariableSet> {
  const [links, counts] = await Promise.all([
    linksOf(db, [row.id]),
    countSetVariables(db, [row.id]),
  ]);
  return presentVariableSet(row, links.get(row.id) ?? NO_LINKS, counts.get(row.id) ?? 0);
}

/** Creates an empty set; its name is unique in the organization. */
export async function createVariableSet(
  db: Database,
  ctx: SetCtx,
  input: SetInput & { name: string },
): Promise<Outcome<VariableSet, "conflict">> {
  const id = newId("variableSet");
  const row = {
    id,
    orgId: ctx.orgId,
    name: input.name,
    description: input.description ?? "",
    global: input.global ?? false,
    priority: input.priority ?? false,
    createdAt: ctx.now,
    updatedAt: ctx.now,
  };
  const [[inserted]] = await db.batch([
    insertVariableSetQuery(db, row),
    auditWhereQuery(
      db,
      {
        orgId: ctx.orgId,
        actor: ctx.actor,
        action: "variable_set.create",
        targetType: "variable_set",
        targetId: id,
        data: { name: row.name, global: row.global, priority: row.priority },
        now: ctx.now,
      },
      sql`EXISTS (SELECT 1 FROM variable_sets WHERE id = ${id})`,
    ),
  ]);
  return inserted ? ok(presentVariableSet(inserted, NO_LINKS, 0)) : nameTaken(input.name);
}

/** One page of the organization's sets by name. */
export async function listVariableSets(
  db: Database,
  orgId: string,
  page: { limit: number; after?: string | undefined },
) {
  const rows = await listVariableSetRows(db, orgId, page);
  const ids = rows.map((r) => r.id);
  const [links, counts] = await Promise.all([linksOf(db, ids), countSetVariables(db, ids)]);
  return rows.map((row) => ({
    row,
    set: presentVariableSet(row, links.get(row.id) ?? NO_LINKS, counts.get(row.id) ?? 0),
  }));
}

/** Why the set may not be global with these variables (another global set has one), or null. */
async function globalProblem(
  db: Database,
  set: VariableSetRow,
  variables: readonly { key: string; category: Variable["category"] }[],
): Promise<string | null> {
  const others = await otherGlobalVariables(db, set.orgId, set.id);
  return globalConflict(set.name, variables, others);
}

/**
 * Renames, redescribes or changes `global` and `priority`. A set made global applies to every
 * workspace, so its project and workspace links go (the audit event lists them); it is refused
 * when another global set holds one of its variables.
 */
export async function updateVariableSet(
  db: Database,
  ctx: SetCtx,
  set: VariableSetRow,
  patch: SetInput,
): Promise<Outcome<VariableSet, "conflict" | "not_found">> {
  const changes: Record<string, { from: unknown; to: unknown }> = {};
  for (const field of ["name", "description", "global", "priority"] as const) {
    const to = patch[field];
    if (to !== undefined && to !== set[field]) {
      changes[field] = { from: set[field], to };
    }
  }
  if (Object.keys(changes).length === 0) {
    return ok(await showVariableSet(db, set));
  }
  if (
    patch.name !== undefined &&
    changes.name &&
    (await findVariableSet(db, ctx.orgId, patch.name))
  ) {
    return nameTaken(patch.name);
  }
  const becomesGlobal = changes.global?.to === true;
  if (becomesGlobal) {
    const problem = await globalProblem(db, set, await setVariables(db, ctx.orgId, set.id).list());
    if (problem) {
      return refuse("conflict", problem);
    }
  }
  const dropped = becomesGlobal ? ((await linksOf(db, [set.id])).get(set.id) ?? NO_LINKS) : null;
  try {
    const [[updated]] = await db.batch([
      updateVariableSetQuery(db, ctx.orgId, set.id, {
        ...(patch.name === undefined ? {} : { name: patch.name }),
        ...(patch.description === undefined ? {} : { description: patch.description }),
        ...(patch.global === undefined ? {} : { global: patch.global }),
        ...(patch.priority === undefined ? {} : { priority: patch.priority }),
        updatedAt: ctx.now,
      }),
      ...(becomesGlobal ? unlinkAllQueries(db, set.id) : []),
      auditQuery(db, {
        orgId: ctx.orgId,
        actor: ctx.actor,
        action: "variable_set.update",
        targetType: "variable_set",
        targetId: set.id,
        data: { changes, ...(dropped ? { unlinked: dropped } : {}) },
        now: ctx.now,
      }),
    ]);
    return updated
      ? ok(await showVariableSet(db, updated))
      : refuse("not_found", `variable set ${set.name} not found`);
  } catch (err) {
    if (
      patch.name !== undefined &&
      /UNIQUE constraint failed/i.test(`${err} ${(err as Error).cause}`)
    ) {
      return nameTaken(patch.name);
    }
    throw err;
  }
}

/** Deletes the set with its variables and links; the workspaces it reached stop getting them. */
export async function deleteVariableSet(
  db: Database,
  ctx: SetCtx,
  set: VariableSetRow,
): Promise<VariableSet> {
  const shown = await showVariableSet(db, set);
  await db.batch([
    deleteVariableSetQuery(db, ctx.orgId, set.id),
    auditQuery(db, {
      orgId: ctx.orgId,
      actor: ctx.actor,
      action: "variable_set.delete",
      targetType: "variable_set",
      targetId: set.id,
      data: { name: set.name },
      now: ctx.now,
    }),
  ]);
  return shown;
}

/**
 * Creates or replaces a variable of the set, by the same rules as a workspace's variable; in a
 * global set, one another global set holds is a `conflict`.
 */
export async function putSetVariable(
  deps: Deps,
  set: VariableSetRow,
  input: PutInput,
): Promise<VariableResult<{ variable: Variable; created: boolean }>> {
  if (set.global) {
    const mine = [{ key: input.key, category: input.write.category }];
    const problem = await globalProblem(deps.db, set, mine);
    if (problem) {
      return refuse("conflict", problem);
    }
  }
  return putStoredVariable(deps, setVariables(deps.db, set.orgId, set.id), {
    ...input,
    limitMessage: `variable set ${set.name} has the maximum number of variables`,
  });
}
