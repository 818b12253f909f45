/**
 * D1 access for per-run tokens: one per job lease, usable from the agent's start until the job
 * ends, revoked with it.
 */
import { and, eq, isNotNull, isNull } from "drizzle-orm";
import type { Database } from "../db/client.ts";
import { runTokens } from "../db/schema.ts";
import { runHasEnded } from "./queries.ts";

export function insertRunTokenQuery(db: Database, row: typeof runTokens.$inferInsert) {
  return db.insert(runTokens).values(row);
}

/** Revokes every token of an ended run; nothing while the run is still active. */
export function revokeEndedRunTokensQuery(db: Database, runId: string, now: number) {
  return db
    .update(runTokens)
    .set({ revokedAt: now })
    .where(and(eq(runTokens.runId, runId), isNull(runTokens.revokedAt), runHasEnded(db, runId)));
}

/** Revokes every token of a run (or only those of one job). */
export function revokeRunTokensQuery(db: Database, runId: string, now: number, jobId?: string) {
  return db
    .update(runTokens)
    .set({ revokedAt: now })
    .where(
      and(
        eq(runTokens.runId, runId),
        isNull(runTokens.revokedAt),
        jobId ? eq(runTokens.jobId, jobId) : undefined,
      ),
    );
}

/**
 * The agent acknowledged `leaseId` of `jobId`: that lease's token becomes usable. A token of
 * another lease, or one already revoked, is left as it is.
 */
export function startRunTokenQuery(db: Database, jobId: string, leaseId: string, now: number) {
  return db
    .update(runTokens)
    .set({ startedAt: now })
    .where(
      and(
        eq(runTokens.jobId, jobId),
        eq(runTokens.leaseId, leaseId),
        isNull(runTokens.revokedAt),
        isNull(runTokens.startedAt),
      ),
    );
}

/** True while `jobId` has a started, unrevoked token: its lease is live. */
export async function isJobLive(db: Database, jobId: string): Promise<boolean> {
  const row = await db.query.runTokens.findFirst({
    where: and(
      eq(runTokens.jobId, jobId),
      isNull(runTokens.revokedAt),
      isNotNull(runTokens.startedAt),
    ),
    columns: { id: true },
  });
  return row !== undefined;
}
