/**
 * Where a variable lives: a workspace's own variables or a variable set's. The service's rules
 * (create-or-replace, sealing, the limit, the audit) are written once against this interface;
 * each owner's table implements it (`workspaceVariables` here, `setVariables` in
 * `varsets/queries.ts`), with the same columns and the same compare-and-set writes.
 */
import { and, eq, type SQL, sql } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import type { Database } from "../db/client.ts";
import { variables } from "../db/schema.ts";
import type { Category, StoredVariable } from "./model.ts";
import {
  countVariables,
  deleteVariableQuery,
  findVariables,
  insertVariableQuery,
  listVariableRows,
  replaceVariableQuery,
} from "./queries.ts";

/** What a write stores: every column but the owner's, which the store adds. */
export type VariableFields = Omit<StoredVariable, "id" | "key" | "category" | "createdAt">;

export type VariableStore = {
  /** The owner's id (`ws_…` or `varset_…`): the sealed values' associated data names it. */
  ownerId: string;
  orgId: string;
  /** What audit events name the owner by (`{ workspaceId }` or `{ variableSetId }`). */
  auditData: Record<string, string>;
  list(): Promise<StoredVariable[]>;
  find(key: string, category?: Category): Promise<StoredVariable[]>;
  count(): Promise<number>;
  /** An SQL condition true once the row `id` holds the write made at `updatedAt`. */
  landed(id: string, updatedAt: number): SQL;
  /**
   * Inserts the row, or replaces `existing` only if it is still as read (same `updatedAt`), in
   * one batch with `alongside`; answers the row written, none when a concurrent write won.
   */
  write(
    existing: StoredVariable | undefined,
    row: { id: string; key: string; category: Category; createdAt: number } & VariableFields,
    alongside: BatchItem<"sqlite">[],
  ): Promise<StoredVariable | undefined>;
  /** Deletes the row in one batch with `alongside`. */
  remove(id: string, alongside: BatchItem<"sqlite">[]): Promise<void>;
};

/** A workspace's own variables. */
export function workspaceVariables(
  db: Database,
  orgId: string,
  workspaceId: string,
): VariableStore {
  return {
    ownerId: workspaceId,
    orgId,
    auditData: { workspaceId },
    list: () => listVariableRows(db, workspaceId),
    find: (key, category) => findVariables(db, workspaceId, key, category),
    count: () => countVariables(db, workspaceId),
    landed: (id, updatedAt) =>
      sql`EXISTS ${db
        .select({ id: variables.id })
        .from(variables)
        .where(and(eq(variables.id, id), eq(variables.updatedAt, updatedAt)))}`,
    async write(existing, row, alongside) {
      const [rows] = existing
        ? await db.batch([replaceVariableQuery(db, existing, row), ...alongside])
        : await db.batch([insertVariableQuery(db, { ...row, orgId, workspaceId }), ...alongside]);
      return rows[0];
    },
    async remove(id, alongside) {
      await db.batch([deleteVariableQuery(db, id), ...alongside]);
    },
  };
}
