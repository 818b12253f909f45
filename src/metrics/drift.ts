/**
 * The statement behind `outpost_workspace_drifted`: which workspaces' last assessment found
 * drift. The verdict is kept on the workspace (`drift_status`, set once per finished
 * assessment by `src/assessments/service.ts`), so this is one indexed read per scrape.
 */
import { and, asc, eq, inArray } from "drizzle-orm";
import type { Database } from "../db/client.ts";
import { workspaces } from "../db/schema.ts";
import type { DriftRow } from "./model.ts";

/**
 * The org's workspaces whose last assessment gave a verdict on drift (found some, or none); a
 * workspace never assessed, or whose last assessment errored, has no sample. For the scrape's
 * batch: rows `{ workspaceId, workspaceName, driftStatus }`, read by {@link driftRows}.
 */
export function driftQuery(db: Database, orgId: string) {
  return db
    .select({
      workspaceId: workspaces.id,
      workspaceName: workspaces.name,
      driftStatus: workspaces.driftStatus,
    })
    .from(workspaces)
    .where(
      and(eq(workspaces.orgId, orgId), inArray(workspaces.driftStatus, ["no_drift", "drifted"])),
    )
    .orderBy(asc(workspaces.name));
}

/** The rows of {@link driftQuery} as the metric model takes them. */
export function driftRows(
  rows: { workspaceId: string; workspaceName: string; driftStatus: string | null }[],
): DriftRow[] {
  return rows.map((row) => ({
    workspaceId: row.workspaceId,
    workspaceName: row.workspaceName,
    drifted: row.driftStatus === "drifted",
  }));
}
