/**
 * D1 access for agent-mode feedback items (`vcs_feedback_items`): one per run and kind, replaced
 * by each newer post, claimed by one agent at a time, deleted once its outcome is recorded.
 */
import { newId } from "@outpost/common";
import { and, eq, inArray, isNull, lt, or } from "drizzle-orm";
import type { Database } from "../db/client.ts";
import { vcsFeedbackItems } from "../db/schema.ts";

export type FeedbackItemRow = typeof vcsFeedbackItems.$inferSelect;

/** What the sink writes: everything but the ids and claims the table manages. */
export type NewFeedbackItem = Omit<
  FeedbackItemRow,
  "id" | "claimedId" | "claimedBy" | "claimedUntil" | "createdAt"
>;

/**
 * Writes `item` as the run's pending post of its kind under a new id, replacing an earlier one.
 * A claim on the earlier one stays: the newer post is handed out only once that claim was
 * reported or expired, so an agent still posting an older status cannot overwrite a newer one.
 */
export async function putFeedbackItem(
  db: Database,
  item: NewFeedbackItem,
  now: number,
): Promise<string> {
  const id = newId("feedbackItem");
  await db
    .insert(vcsFeedbackItems)
    .values({ ...item, id, createdAt: now })
    .onConflictDoUpdate({
      target: [vcsFeedbackItems.runId, vcsFeedbackItems.kind],
      set: { ...item, id, createdAt: now },
    });
  return id;
}

/**
 * Claims up to `limit` items of the pool for `agentId` until `until`: items for one of `hosts`,
 * not held by a live claim, and either preferred for no agent, for this one, or no longer
 * preferred. One statement, so two agents never claim the same item.
 */
export function claimFeedbackItems(
  db: Database,
  input: { poolId: string; agentId: string; hosts: string[]; now: number; until: number },
  limit: number,
): Promise<FeedbackItemRow[]> {
  const t = vcsFeedbackItems;
  const free = or(isNull(t.claimedUntil), lt(t.claimedUntil, input.now));
  const candidates = db
    .select({ id: t.id })
    .from(t)
    .where(
      and(
        eq(t.poolId, input.poolId),
        inArray(t.host, input.hosts),
        free,
        or(
          isNull(t.preferredAgentId),
          eq(t.preferredAgentId, input.agentId),
          lt(t.preferredUntil, input.now),
        ),
      ),
    )
    .orderBy(t.createdAt)
    .limit(limit);
  return db
    .update(t)
    .set({ claimedId: t.id, claimedBy: input.agentId, claimedUntil: input.until })
    .where(and(inArray(t.id, candidates), free))
    .returning();
}

/** The pool's item `itemId` is (or was, before a newer post replaced it) claimed by `agentId`. */
export async function findClaimedItem(
  db: Database,
  input: { poolId: string; agentId: string; itemId: string },
): Promise<FeedbackItemRow | undefined> {
  const t = vcsFeedbackItems;
  const [row] = await db
    .select()
    .from(t)
    .where(
      and(
        eq(t.poolId, input.poolId),
        eq(t.claimedId, input.itemId),
        eq(t.claimedBy, input.agentId),
      ),
    )
    .limit(1);
  return row;
}

/** Deletes the item once posted (only while it is still `itemId`: a newer post stays). */
export function deleteFeedbackItem(db: Database, itemId: string) {
  return db.delete(vcsFeedbackItems).where(eq(vcsFeedbackItems.id, itemId));
}

/** Ends the claim on a replaced item, so its newer post is handed out. */
export function releaseFeedbackItem(db: Database, claimedId: string) {
  return db
    .update(vcsFeedbackItems)
    .set({ claimedId: null, claimedBy: null, claimedUntil: null })
    .where(eq(vcsFeedbackItems.claimedId, claimedId));
}
