/** D1 reads of the TFE API's run lists: Terraform Cloud pages by number, newest first. */
import { and, asc, count, desc, eq, inArray, type SQL, sql } from "drizzle-orm";
import type { Database } from "../db/client.ts";
import { runs } from "../db/schema.ts";
import type { RunRow } from "../runs/queries.ts";

/** One numbered page of the workspace's runs, newest first, and how many it has in all. */
export async function workspaceRunsPage(
  db: Database,
  workspaceId: string,
  page: { number: number; size: number },
): Promise<{ rows: RunRow[]; total: number }> {
  const [rows, [counted]] = await db.batch([
    db
      .select()
      .from(runs)
      .where(eq(runs.workspaceId, workspaceId))
      .orderBy(desc(runs.createdAt), desc(runs.id))
      .limit(page.size)
      .offset((page.number - 1) * page.size),
    db.select({ n: count() }).from(runs).where(eq(runs.workspaceId, workspaceId)),
  ]);
  return { rows, total: counted?.n ?? 0 };
}

/** The workspace's newest run id, or null (the `latest-run` relationship). */
export async function latestRunId(db: Database, workspaceId: string): Promise<string | null> {
  const row = await db
    .select({ id: runs.id })
    .from(runs)
    .where(eq(runs.workspaceId, workspaceId))
    .orderBy(desc(runs.createdAt), desc(runs.id))
    .limit(1)
    .get();
  return row?.id ?? null;
}

/**
 * The organization's runs waiting in a pool's queue (`plan_queued`, `apply_queued`) among the
 * workspaces `visible` lets the caller read, oldest first: Terraform Cloud's run queue.
 */
export function queuedRuns(
  db: Database,
  orgId: string,
  visible: SQL | undefined,
  page: { number: number; size: number },
) {
  const where = and(
    eq(runs.orgId, orgId),
    inArray(runs.status, ["plan_queued", "apply_queued"]),
    visible,
  );
  return db.batch([
    db
      .select()
      .from(runs)
      .where(where)
      .orderBy(asc(runs.updatedAt), asc(runs.id))
      .limit(page.size)
      .offset((page.number - 1) * page.size),
    db.select({ n: count() }).from(runs).where(where),
  ]);
}

/** How many of the organization's runs wait in a queue and how many run on an agent now. */
export async function runCapacity(db: Database, orgId: string) {
  const [row] = await db
    .select({
      pending: sql<number>`sum(${runs.status} IN ('plan_queued', 'apply_queued'))`,
      running: sql<number>`sum(${runs.status} IN ('planning', 'applying'))`,
    })
    .from(runs)
    .where(and(eq(runs.orgId, orgId), inArray(runs.status, [...ACTIVE])));
  return { pending: row?.pending ?? 0, running: row?.running ?? 0 };
}

const ACTIVE = ["plan_queued", "apply_queued", "planning", "applying"] as const;
