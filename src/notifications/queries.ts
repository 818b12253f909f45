/** D1 access for notification configurations and their deliveries. */
import { and, asc, desc, eq, inArray, lte, sql } from "drizzle-orm";
import type { Database } from "../db/client.ts";
import { notificationConfigurations, notificationDeliveries } from "../db/schema.ts";

export type NotificationRow = typeof notificationConfigurations.$inferSelect;
export type DeliveryRow = typeof notificationDeliveries.$inferSelect;

export function getNotification(
  db: Database,
  orgId: string,
  id: string,
): Promise<NotificationRow | undefined> {
  return db
    .select()
    .from(notificationConfigurations)
    .where(and(eq(notificationConfigurations.orgId, orgId), eq(notificationConfigurations.id, id)))
    .get();
}

export function listNotifications(db: Database, workspaceId: string): Promise<NotificationRow[]> {
  return db
    .select()
    .from(notificationConfigurations)
    .where(eq(notificationConfigurations.workspaceId, workspaceId))
    .orderBy(asc(notificationConfigurations.createdAt), asc(notificationConfigurations.id));
}

/** The enabled configurations of a workspace subscribed to `trigger`. */
export function subscribedNotifications(
  db: Database,
  workspaceId: string,
  trigger: string,
): Promise<NotificationRow[]> {
  return db
    .select()
    .from(notificationConfigurations)
    .where(
      and(
        eq(notificationConfigurations.workspaceId, workspaceId),
        eq(notificationConfigurations.enabled, true),
        sql`EXISTS (SELECT 1 FROM json_each(${notificationConfigurations.triggers}) WHERE value = ${trigger})`,
      ),
    );
}

export function countNotifications(db: Database, workspaceId: string) {
  return db
    .select({ n: sql<number>`count(*)` })
    .from(notificationConfigurations)
    .where(eq(notificationConfigurations.workspaceId, workspaceId))
    .get()
    .then((row) => row?.n ?? 0);
}

export function getDelivery(db: Database, id: string): Promise<DeliveryRow | undefined> {
  return db.select().from(notificationDeliveries).where(eq(notificationDeliveries.id, id)).get();
}

/** The newest deliveries of a configuration, newest first. */
export function listDeliveries(
  db: Database,
  notificationId: string,
  limit: number,
): Promise<DeliveryRow[]> {
  return db
    .select()
    .from(notificationDeliveries)
    .where(eq(notificationDeliveries.notificationId, notificationId))
    .orderBy(desc(notificationDeliveries.createdAt), desc(notificationDeliveries.id))
    .limit(limit);
}

/** Pending deliveries whose next attempt is due, oldest first. */
export function dueDeliveries(db: Database, now: number, limit: number): Promise<DeliveryRow[]> {
  return db
    .select()
    .from(notificationDeliveries)
    .where(
      and(
        eq(notificationDeliveries.status, "pending"),
        lte(notificationDeliveries.nextAttemptAt, now),
      ),
    )
    .orderBy(asc(notificationDeliveries.nextAttemptAt))
    .limit(limit);
}

/**
 * Claims the next attempt of a pending delivery (compare-and-set on its attempt count), so two
 * ticks never attempt it at once; the claim lapses after `claimUntil` should the attempt never
 * record its answer. The claimed row, or undefined when someone else claimed it.
 */
export function claimAttempt(db: Database, delivery: DeliveryRow, now: number, claimUntil: number) {
  return db
    .update(notificationDeliveries)
    .set({ attempts: delivery.attempts + 1, lastAttemptAt: now, nextAttemptAt: claimUntil })
    .where(
      and(
        eq(notificationDeliveries.id, delivery.id),
        eq(notificationDeliveries.status, "pending"),
        eq(notificationDeliveries.attempts, delivery.attempts),
      ),
    )
    .returning()
    .get();
}

/** Records how a claimed attempt went. */
export function recordAttempt(
  db: Database,
  id: string,
  set: Pick<DeliveryRow, "status" | "responseStatus" | "error" | "nextAttemptAt" | "completedAt">,
) {
  return db.update(notificationDeliveries).set(set).where(eq(notificationDeliveries.id, id));
}

/** Inserts deliveries, keeping any that exist (ids are derived from event and configuration). */
export function insertDeliveries(
  db: Database,
  rows: (typeof notificationDeliveries.$inferInsert)[],
) {
  return db.insert(notificationDeliveries).values(rows).onConflictDoNothing().returning();
}

export function deliveriesByIds(db: Database, ids: string[]): Promise<DeliveryRow[]> {
  return ids.length === 0
    ? Promise.resolve([])
    : db.select().from(notificationDeliveries).where(inArray(notificationDeliveries.id, ids));
}
