/** D1 reads of the TFE API's run lists: Terraform Cloud pages by number, newest first. */
import { count, desc, eq } from "drizzle-orm";
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
