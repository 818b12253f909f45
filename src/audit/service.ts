/** Audit events: who did what to which object, recorded beside the change they describe. */
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
