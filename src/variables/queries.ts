/** D1 access for variables. Callers resolve the workspace in their org first. */
import { and, asc, count, eq, inArray, isNotNull, ne } from "drizzle-orm";
import type { Database } from "../db/client.ts";
import { variables } from "../db/schema.ts";
import type { Category } from "./model.ts";

export type VariableRow = typeof variables.$inferSelect;

/** The workspace's variables by category and key; a query, so it can go in a batch. */
export function listVariableRows(db: Database, workspaceId: string) {
  return db
    .select()
    .from(variables)
    .where(eq(variables.workspaceId, workspaceId))
    .orderBy(asc(variables.category), asc(variables.key));
}

/** The variables named `key` in the workspace: one per category at most. */
export function findVariables(
  db: Database,
  workspaceId: string,
  key: string,
  category?: Category,
): Promise<VariableRow[]> {
  return db
    .select()
    .from(variables)
    .where(
      and(
        eq(variables.workspaceId, workspaceId),
        eq(variables.key, key),
        category === undefined ? undefined : eq(variables.category, category),
      ),
    )
    .orderBy(asc(variables.category));
}

export async function countVariables(db: Database, workspaceId: string): Promise<number> {
  const [row] = await db
    .select({ n: count() })
    .from(variables)
    .where(eq(variables.workspaceId, workspaceId));
  return row?.n ?? 0;
}

export function insertVariableQuery(db: Database, row: typeof variables.$inferInsert) {
  return db.insert(variables).values(row).returning();
}

/**
 * Replaces a variable's fields only if it is still as the caller read it (same `updatedAt`), so
 * two concurrent replaces cannot both believe they decided from the current value.
 */
export function replaceVariableQuery(
  db: Database,
  current: Pick<VariableRow, "id" | "updatedAt">,
  values: Partial<typeof variables.$inferInsert>,
) {
  return db
    .update(variables)
    .set(values)
    .where(and(eq(variables.id, current.id), eq(variables.updatedAt, current.updatedAt)))
    .returning();
}

export function deleteVariableQuery(db: Database, id: string) {
  return db.delete(variables).where(eq(variables.id, id)).returning({ id: variables.id });
}

/**
 * Up to `limit` sensitive values of the org sealed with one of the keys in `readable` (the ring's
 * keys but its primary one): what a rotation re-encrypts next. Values sealed with a key no longer
 * in the ring cannot be opened and are left out.
 */
export function rowsSealedWithOtherKeys(
  db: Database,
  orgId: string,
  readable: readonly string[],
  limit: number,
) {
  return db
    .select()
    .from(variables)
    .where(
      and(
        eq(variables.orgId, orgId),
        eq(variables.isSensitive, true),
        isNotNull(variables.ciphertext),
        inArray(variables.keyId, [...readable]),
      ),
    )
    .orderBy(asc(variables.id))
    .limit(limit);
}

/** How many sensitive values of the org are sealed with a key other than `primaryId`. */
export async function countSealedWithOtherKeys(
  db: Database,
  orgId: string,
  primaryId: string,
): Promise<number> {
  const [row] = await db
    .select({ n: count() })
    .from(variables)
    .where(
      and(
        eq(variables.orgId, orgId),
        eq(variables.isSensitive, true),
        isNotNull(variables.ciphertext),
        ne(variables.keyId, primaryId),
      ),
    );
  return row?.n ?? 0;
}
