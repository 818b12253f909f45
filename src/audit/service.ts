/** Audit events: who did what to which object, recorded beside the change they describe. */
import { type SQL, sql } from "drizzle-orm";
import type { Database } from "../db/client.ts";
import { newId } from "../db/ids.ts";
import { auditEvents } from "../db/schema.ts";

export type AuditInput = {
  orgId: string;
  actor: string;
  action: string;
  targetType: string;
  targetId: string;
  data?: Record<string, unknown>;
  now: number;
};

/** An insert to put in the same `db.batch` as the change, so both land or neither does. */
export function auditQuery(db: Database, event: AuditInput) {
  return db.insert(auditEvents).values({
    id: newId("event"),
    orgId: event.orgId,
    actor: event.actor,
    action: event.action,
    targetType: event.targetType,
    targetId: event.targetId,
    data: event.data ?? null,
    createdAt: event.now,
  });
}

/**
 * An insert that records the event only when `condition` holds at that point of the batch, for
 * changes guarded by compare-and-set: put it after the guarded update with a condition that is
 * true only if that update took effect, so a lost race leaves no event behind.
 */
export function auditWhereQuery(db: Database, event: AuditInput, condition: SQL) {
  const data = event.data === undefined ? null : JSON.stringify(event.data);
  // Columns in the table's order (id, org_id, actor, action, target_type, target_id, data,
  // created_at): drizzle names them all in the INSERT and takes the SELECT positionally.
  return db
    .insert(auditEvents)
    .select(
      sql`SELECT ${newId("event")}, ${event.orgId}, ${event.actor}, ${event.action}, ${event.targetType}, ${event.targetId}, ${data}, ${event.now} WHERE ${condition}`,
    );
}
