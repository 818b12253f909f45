/** D1 access for variable sets, their variables and where they are applied. Scoped to the org. */
import { and, asc, count, eq, gt, inArray, isNotNull, ne, or, type SQL, sql } from "drizzle-orm";
import type { Database } from "../db/client.ts";
import {
  projects,
  variableSetProjects,
  variableSets,
  variableSetVariables,
  variableSetWorkspaces,
  workspaces,
} from "../db/schema.ts";
import type { Category } from "../variables/model.ts";
import type { VariableStore } from "../variables/store.ts";
import { type SetLinks, VARSET_ID_PATTERN, type VariableSetRow } from "./model.ts";

export type SetVariableRow = typeof variableSetVariables.$inferSelect;

/** A set of the org by id (`varset_…`) or by name; another org's is never found. */
export function findVariableSet(
  db: Database,
  orgId: string,
  ref: string,
): Promise<VariableSetRow | undefined> {
  const column = VARSET_ID_PATTERN.test(ref) ? variableSets.id : variableSets.name;
  return db.query.variableSets.findFirst({
    where: and(eq(variableSets.orgId, orgId), eq(column, ref)),
  });
}

/** One page of the org's sets by name, `limit + 1` rows to detect a next page. */
export function listVariableSetRows(
  db: Database,
  orgId: string,
  page: { limit: number; after?: string | undefined },
) {
  return db
    .select()
    .from(variableSets)
    .where(
      and(
        eq(variableSets.orgId, orgId),
        page.after === undefined ? undefined : gt(variableSets.name, page.after),
      ),
    )
    .orderBy(asc(variableSets.name))
    .limit(page.limit + 1);
}

/** Inserts unless the name is taken in the org; the returning row is absent when it was. */
export function insertVariableSetQuery(db: Database, row: typeof variableSets.$inferInsert) {
  return db.insert(variableSets).values(row).onConflictDoNothing().returning();
}

export function updateVariableSetQuery(
  db: Database,
  orgId: string,
  id: string,
  set: Partial<typeof variableSets.$inferInsert>,
) {
  return db
    .update(variableSets)
    .set(set)
    .where(and(eq(variableSets.orgId, orgId), eq(variableSets.id, id)))
    .returning();
}

export function deleteVariableSetQuery(db: Database, orgId: string, id: string) {
  return db.delete(variableSets).where(and(eq(variableSets.orgId, orgId), eq(variableSets.id, id)));
}

/** The projects and workspaces each of `varsetIds` is applied to, by name; one round trip. */
export async function linksOf(
  db: Database,
  varsetIds: readonly string[],
): Promise<Map<string, SetLinks>> {
  const out = new Map<string, SetLinks>();
  if (varsetIds.length === 0) {
    return out;
  }
  const ids = [...varsetIds];
  const [linkedProjects, linkedWorkspaces] = await db.batch([
    db
      .select({ varsetId: variableSetProjects.varsetId, id: projects.id, name: projects.name })
      .from(variableSetProjects)
      .innerJoin(projects, eq(projects.id, variableSetProjects.projectId))
      .where(inArray(variableSetProjects.varsetId, ids))
      .orderBy(asc(projects.name)),
    db
      .select({
        varsetId: variableSetWorkspaces.varsetId,
        id: workspaces.id,
        name: workspaces.name,
      })
      .from(variableSetWorkspaces)
      .innerJoin(workspaces, eq(workspaces.id, variableSetWorkspaces.workspaceId))
      .where(inArray(variableSetWorkspaces.varsetId, ids))
      .orderBy(asc(workspaces.name)),
  ]);
  const entry = (id: string) => {
    const links = out.get(id) ?? { projects: [], workspaces: [] };
    out.set(id, links);
    return links;
  };
  for (const { varsetId, id, name } of linkedProjects) {
    entry(varsetId).projects.push({ id, name });
  }
  for (const { varsetId, id, name } of linkedWorkspaces) {
    entry(varsetId).workspaces.push({ id, name });
  }
  return out;
}

/** How many variables each of `varsetIds` holds. */
export async function countSetVariables(
  db: Database,
  varsetIds: readonly string[],
): Promise<Map<string, number>> {
  if (varsetIds.length === 0) {
    return new Map();
  }
  const rows = await db
    .select({ varsetId: variableSetVariables.varsetId, n: count() })
    .from(variableSetVariables)
    .where(inArray(variableSetVariables.varsetId, [...varsetIds]))
    .groupBy(variableSetVariables.varsetId);
  return new Map(rows.map((r) => [r.varsetId, r.n]));
}

export function linkProjectQuery(
  db: Database,
  row: { varsetId: string; projectId: string; orgId: string; now: number },
) {
  return db
    .insert(variableSetProjects)
    .values({ ...row, createdAt: row.now })
    .onConflictDoNothing()
    .returning();
}

export function unlinkProjectQuery(db: Database, varsetId: string, projectId: string) {
  return db
    .delete(variableSetProjects)
    .where(
      and(eq(variableSetProjects.varsetId, varsetId), eq(variableSetProjects.projectId, projectId)),
    )
    .returning();
}

export function linkWorkspaceQuery(
  db: Database,
  row: { varsetId: string; workspaceId: string; orgId: string; now: number },
) {
  return db
    .insert(variableSetWorkspaces)
    .values({ ...row, createdAt: row.now })
    .onConflictDoNothing()
    .returning();
}

export function unlinkWorkspaceQuery(db: Database, varsetId: string, workspaceId: string) {
  return db
    .delete(variableSetWorkspaces)
    .where(
      and(
        eq(variableSetWorkspaces.varsetId, varsetId),
        eq(variableSetWorkspaces.workspaceId, workspaceId),
      ),
    )
    .returning();
}

/** Every project and workspace link of the set (a set made global keeps none). */
export function unlinkAllQueries(db: Database, varsetId: string) {
  return [
    db.delete(variableSetProjects).where(eq(variableSetProjects.varsetId, varsetId)),
    db.delete(variableSetWorkspaces).where(eq(variableSetWorkspaces.varsetId, varsetId)),
  ] as const;
}

/** The variables of the org's other global sets, for the rule that they may not overlap. */
export function otherGlobalVariables(db: Database, orgId: string, varsetId: string) {
  return db
    .select({
      key: variableSetVariables.key,
      category: variableSetVariables.category,
      setName: variableSets.name,
    })
    .from(variableSetVariables)
    .innerJoin(variableSets, eq(variableSets.id, variableSetVariables.varsetId))
    .where(
      and(
        eq(variableSets.orgId, orgId),
        eq(variableSets.global, true),
        ne(variableSets.id, varsetId),
      ),
    );
}

/** The sets applied to the project (by name), and the org's global sets, which reach it too. */
export function setsForProject(db: Database, orgId: string, projectId: string) {
  const linked = db
    .select({ varsetId: variableSetProjects.varsetId })
    .from(variableSetProjects)
    .where(eq(variableSetProjects.projectId, projectId));
  return db
    .select()
    .from(variableSets)
    .where(
      and(
        eq(variableSets.orgId, orgId),
        or(eq(variableSets.global, true), inArray(variableSets.id, linked)),
      ),
    )
    .orderBy(asc(variableSets.name));
}

/**
 * Every variable of every set that reaches the workspace, with its set and how the set reaches
 * it (`scope`: a global set; else by name, else through the workspace's project): one query, so
 * it can go in the lease's batch. The workspace's project is read in the query itself.
 */
export function applicableSetVariablesQuery(db: Database, orgId: string, workspaceId: string) {
  const byName = db
    .select({ varsetId: variableSetWorkspaces.varsetId })
    .from(variableSetWorkspaces)
    .where(eq(variableSetWorkspaces.workspaceId, workspaceId));
  const projectOfWorkspace = db
    .select({ projectId: workspaces.projectId })
    .from(workspaces)
    .where(eq(workspaces.id, workspaceId));
  const byProject = db
    .select({ varsetId: variableSetProjects.varsetId })
    .from(variableSetProjects)
    .where(inArray(variableSetProjects.projectId, projectOfWorkspace));
  const scope: SQL<"global" | "workspace" | "project"> =
    sql`CASE WHEN ${variableSets.global} THEN 'global' WHEN ${inArray(variableSets.id, byName)} THEN 'workspace' ELSE 'project' END`;
  return db
    .select({
      variable: variableSetVariables,
      // Aliased: in a D1 batch rows come back keyed by column name, and both tables have ids.
      set: {
        id: sql<string>`${variableSets.id}`.as("set_id"),
        name: sql<string>`${variableSets.name}`.as("set_name"),
        priority: sql<boolean>`${variableSets.priority}`.mapWith(Boolean).as("set_priority"),
      },
      scope: scope.as("set_scope"),
    })
    .from(variableSetVariables)
    .innerJoin(variableSets, eq(variableSets.id, variableSetVariables.varsetId))
    .where(
      and(
        eq(variableSets.orgId, orgId),
        or(
          eq(variableSets.global, true),
          inArray(variableSets.id, byName),
          inArray(variableSets.id, byProject),
        ),
      ),
    );
}
export type ApplicableSetVariable = Awaited<ReturnType<typeof applicableSetVariablesQuery>>[number];

function setVariablesWhere(varsetId: string, key?: string, category?: Category) {
  return and(
    eq(variableSetVariables.varsetId, varsetId),
    key === undefined ? undefined : eq(variableSetVariables.key, key),
    category === undefined ? undefined : eq(variableSetVariables.category, category),
  );
}

/** A variable set's variables as a {@link VariableStore}: the same rules as a workspace's. */
export function setVariables(db: Database, orgId: string, varsetId: string): VariableStore {
  const table = variableSetVariables;
  return {
    ownerId: varsetId,
    orgId,
    auditData: { variableSetId: varsetId },
    list: () =>
      db
        .select()
        .from(table)
        .where(setVariablesWhere(varsetId))
        .orderBy(asc(table.category), asc(table.key)),
    find: (key, category) =>
      db
        .select()
        .from(table)
        .where(setVariablesWhere(varsetId, key, category))
        .orderBy(asc(table.category)),
    async count() {
      const [row] = await db.select({ n: count() }).from(table).where(setVariablesWhere(varsetId));
      return row?.n ?? 0;
    },
    landed: (id, updatedAt) =>
      sql`EXISTS ${db
        .select({ id: table.id })
        .from(table)
        .where(and(eq(table.id, id), eq(table.updatedAt, updatedAt)))}`,
    async write(existing, row, alongside) {
      const write = existing
        ? db
            .update(table)
            .set(row)
            .where(and(eq(table.id, existing.id), eq(table.updatedAt, existing.updatedAt)))
            .returning()
        : db
            .insert(table)
            .values({ ...row, orgId, varsetId })
            .returning();
      const [rows] = await db.batch([write, ...alongside]);
      return rows[0];
    },
    async remove(id, alongside) {
      await db.batch([db.delete(table).where(eq(table.id, id)), ...alongside]);
    },
  };
}

/**
 * Up to `limit` sensitive values of the org's sets sealed with one of the keys in `readable`
 * (the ring's keys but its primary one): what a rotation re-encrypts next, as for workspaces.
 */
export function setRowsSealedWithOtherKeys(
  db: Database,
  orgId: string,
  readable: readonly string[],
  limit: number,
) {
  const table = variableSetVariables;
  return db
    .select()
    .from(table)
    .where(
      and(
        eq(table.orgId, orgId),
        eq(table.isSensitive, true),
        isNotNull(table.ciphertext),
        inArray(table.keyId, [...readable]),
      ),
    )
    .orderBy(asc(table.id))
    .limit(limit);
}

/** How many sensitive values of the org's sets are sealed with a key other than `primaryId`. */
export async function countSetSealedWithOtherKeys(
  db: Database,
  orgId: string,
  primaryId: string,
): Promise<number> {
  const table = variableSetVariables;
  const [row] = await db
    .select({ n: count() })
    .from(table)
    .where(
      and(
        eq(table.orgId, orgId),
        eq(table.isSensitive, true),
        isNotNull(table.ciphertext),
        ne(table.keyId, primaryId),
      ),
    );
  return row?.n ?? 0;
}

/** Stores a re-sealed value unless the row changed since it was read (same `updatedAt`). */
export function resealSetVariableQuery(
  db: Database,
  row: Pick<SetVariableRow, "id" | "updatedAt">,
  sealed: { ciphertext: string; keyId: string },
) {
  const table = variableSetVariables;
  return db
    .update(table)
    .set(sealed)
    .where(and(eq(table.id, row.id), eq(table.updatedAt, row.updatedAt)))
    .returning({ id: table.id });
}
