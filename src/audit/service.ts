/** Audit events: who did what to which object, recorded beside the change they describe. */

import { newId } from "@outpost/common";
import { and, desc, eq, lt, or, type SQL, sql } from "drizzle-orm";
import {
  ACTOR_TYPES,
  type ActorType,
  type AuditActor,
  SIGN_IN_METHODS,
  type SignInMethod,
} from "../authz/actor.ts";
import type { Database } from "../db/client.ts";
import { auditEvents } from "../db/schema.ts";

export type AuditInput = {
  orgId: string;
  /** Who, by kind, id and name, with how a person signed in. */
  actor: AuditActor;
  action: string;
  targetType: string;
  targetId: string;
  data?: Record<string, unknown>;
  now: number;
};

/** The audit columns of an actor. */
export function actorColumns(actor: AuditActor) {
  return {
    actor: actor.id,
    actorType: actor.type,
    actorName: actor.name,
    actorVia: actor.via ?? null,
  };
}

/** An insert to put in the same `db.batch` as the change, so both land or neither does. */
export function auditQuery(db: Database, event: AuditInput) {
  return db.insert(auditEvents).values({
    id: newId("event"),
    orgId: event.orgId,
    ...actorColumns(event.actor),
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
  const actor = actorColumns(event.actor);
  // Columns in the table's order (id, org_id, actor, actor_type, actor_name, actor_via, action,
  // target_type, target_id, data, created_at): drizzle names them all in the INSERT and takes
  // the SELECT positionally.
  return db
    .insert(auditEvents)
    .select(
      sql`SELECT ${newId("event")}, ${event.orgId}, ${actor.actor}, ${actor.actorType}, ${actor.actorName}, ${actor.actorVia}, ${event.action}, ${event.targetType}, ${event.targetId}, ${data}, ${event.now} WHERE ${condition}`,
    );
}

export type AuditEventRow = typeof auditEvents.$inferSelect;

/** What a reader of the audit log may narrow it to; every filter is exact. */
export type AuditFilter = {
  targetType?: string | undefined;
  targetId?: string | undefined;
  action?: string | undefined;
  actor?: string | undefined;
};

/**
 * One page of the org's audit events, newest first, `limit + 1` rows so the caller can tell
 * whether another page follows. Only the org's own events are ever read.
 */
export function listAuditEvents(
  db: Database,
  orgId: string,
  filter: AuditFilter,
  page: { limit: number; after?: readonly [number, string] | undefined },
): Promise<AuditEventRow[]> {
  const after = page.after;
  return db
    .select()
    .from(auditEvents)
    .where(
      and(
        eq(auditEvents.orgId, orgId),
        filter.targetType === undefined ? undefined : eq(auditEvents.targetType, filter.targetType),
        filter.targetId === undefined ? undefined : eq(auditEvents.targetId, filter.targetId),
        filter.action === undefined ? undefined : eq(auditEvents.action, filter.action),
        filter.actor === undefined ? undefined : eq(auditEvents.actor, filter.actor),
        after === undefined
          ? undefined
          : or(
              lt(auditEvents.createdAt, after[0]),
              and(eq(auditEvents.createdAt, after[0]), lt(auditEvents.id, after[1])),
            ),
      ),
    )
    .orderBy(desc(auditEvents.createdAt), desc(auditEvents.id))
    .limit(page.limit + 1);
}

const parseActorType = (value: string | null): ActorType | null =>
  ACTOR_TYPES.find((t) => t === value) ?? null;
const parseVia = (value: string | null): SignInMethod | null =>
  SIGN_IN_METHODS.find((m) => m === value) ?? null;

/** The public shape of an audit event. */
export function presentAuditEvent(row: AuditEventRow) {
  return {
    id: row.id,
    actor: row.actor,
    actorType: parseActorType(row.actorType),
    actorName: row.actorName,
    actorVia: parseVia(row.actorVia),
    action: row.action,
    targetType: row.targetType,
    targetId: row.targetId,
    data: row.data ?? null,
    createdAt: new Date(row.createdAt).toISOString(),
  };
}
