/** D1 access for VCS deliveries: one row per delivery a hook received. */
import { and, desc, eq, isNull, lt } from "drizzle-orm";
import type { Database } from "../db/client.ts";
import { vcsDeliveries } from "../db/schema.ts";
import type { DeliveryOutcome } from "./model.ts";

/**
 * Inserts the delivery unless the hook has one with the same delivery id or the same body
 * (both unique per hook); true when this insert made the row.
 */
export async function insertDelivery(
  db: Database,
  row: {
    id: string;
    orgId: string;
    hookId: string;
    deliveryId: string;
    bodySha256: string;
    event: string;
    receivedAt: number;
  },
): Promise<boolean> {
  const inserted = await db
    .insert(vcsDeliveries)
    .values(row)
    .onConflictDoNothing()
    .returning({ id: vcsDeliveries.id });
  return inserted.length > 0;
}

/**
 * Takes over the hook's delivery `deliveryId` when it has no outcome and arrived before
 * `staleBefore` (its processing was cut off), compare-and-set so one taker wins; its row id.
 */
export async function takeOverStaleDelivery(
  db: Database,
  target: { hookId: string; deliveryId: string; staleBefore: number; now: number },
): Promise<string | undefined> {
  const [taken] = await db
    .update(vcsDeliveries)
    .set({ receivedAt: target.now })
    .where(
      and(
        eq(vcsDeliveries.hookId, target.hookId),
        eq(vcsDeliveries.deliveryId, target.deliveryId),
        isNull(vcsDeliveries.outcome),
        lt(vcsDeliveries.receivedAt, target.staleBefore),
      ),
    )
    .returning({ id: vcsDeliveries.id });
  return taken?.id;
}

/** The delivery id under which the hook first received a body, or undefined. */
export async function firstDeliveryOfBody(
  db: Database,
  hookId: string,
  bodySha256: string,
): Promise<string | undefined> {
  const first = await db.query.vcsDeliveries.findFirst({
    where: and(eq(vcsDeliveries.hookId, hookId), eq(vcsDeliveries.bodySha256, bodySha256)),
    columns: { deliveryId: true },
  });
  return first?.deliveryId;
}

/**
 * Writes what a delivery did. A failed delivery frees its id and body, so a manual redelivery
 * tries again instead of being answered "duplicate" forever; the row stays, renamed, as the
 * record of the failure.
 */
export async function writeOutcome(
  db: Database,
  deliveryRowId: string,
  outcome: DeliveryOutcome,
): Promise<void> {
  await db
    .update(vcsDeliveries)
    .set({
      outcome: JSON.stringify(outcome),
      ...(outcome.status === "failed"
        ? { deliveryId: `failed:${deliveryRowId}`, bodySha256: null }
        : {}),
    })
    .where(eq(vcsDeliveries.id, deliveryRowId));
}

/** The hook's most recent deliveries, newest first. */
export function recentDeliveries(db: Database, hookId: string, limit: number) {
  return db
    .select()
    .from(vcsDeliveries)
    .where(eq(vcsDeliveries.hookId, hookId))
    .orderBy(desc(vcsDeliveries.receivedAt))
    .limit(limit);
}
