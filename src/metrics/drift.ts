/**
 * The hook for `outpost_workspace_drifted`: which workspaces' last assessment found drift.
 * Assessments (drift detection, issue 30) do not exist yet, so no workspace has one and the
 * family is answered without samples.
 */
import type { Database } from "../db/client.ts";
import type { DriftRow } from "./model.ts";

/**
 * The org's workspaces that have an assessment, each with whether its latest one found drift.
 * Today: none. When assessments land, this becomes one statement (the latest assessment per
 * workspace of `orgId`, joined to its workspace for the name) added to the scrape's batch in
 * `service.ts`, so a scrape stays a bounded number of statements.
 */
export async function workspaceDrift(_db: Database, _orgId: string): Promise<DriftRow[]> {
  return [];
}
