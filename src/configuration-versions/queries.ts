/** D1 access for configuration versions. */
import { and, desc, eq, lt, or } from "drizzle-orm";
import type { Database } from "../db/client.ts";
import { configurationVersions } from "../db/schema.ts";

export type ConfigurationVersionRow = typeof configurationVersions.$inferSelect;

/** A configuration version of the workspace, or undefined. */
export function getConfigurationVersion(
  db: Database,
  workspaceId: string,
  id: string,
): Promise<ConfigurationVersionRow | undefined> {
  return configurationVersionQuery(db, workspaceId, id).get();
}

/** A configuration version of the organization by id, whichever workspace holds it, or undefined. */
export function getConfigurationVersionInOrg(
  db: Database,
  orgId: string,
  id: string,
): Promise<ConfigurationVersionRow | undefined> {
  return db
    .select()
    .from(configurationVersions)
    .where(and(eq(configurationVersions.orgId, orgId), eq(configurationVersions.id, id)))
    .get();
}

/** {@link getConfigurationVersion} as a query to put in a batch: zero or one row. */
export function configurationVersionQuery(db: Database, workspaceId: string, id: string) {
  return db
    .select()
    .from(configurationVersions)
    .where(
      and(eq(configurationVersions.workspaceId, workspaceId), eq(configurationVersions.id, id)),
    )
    .limit(1);
}

/**
 * The workspace's newest configuration version (the default of a new run), or undefined when it
 * has none. Ties on the creation time break by id, so the answer is stable.
 */
export function latestConfigurationVersion(
  db: Database,
  workspaceId: string,
): Promise<ConfigurationVersionRow | undefined> {
  return latestConfigurationVersionQuery(db, workspaceId).get();
}

/** {@link latestConfigurationVersion} as a query to put in a batch: zero or one row. */
export function latestConfigurationVersionQuery(db: Database, workspaceId: string) {
  return (
    db
      .select()
      .from(configurationVersions)
      // A pull request's commit is not the workspace's code until it is merged.
      .where(
        and(
          eq(configurationVersions.workspaceId, workspaceId),
          eq(configurationVersions.isSpeculative, false),
        ),
      )
      .orderBy(desc(configurationVersions.createdAt), desc(configurationVersions.id))
      .limit(1)
  );
}

/** One page of the workspace's versions, newest first, `limit + 1` rows to detect a next page. */
export function listConfigurationVersionRows(
  db: Database,
  workspaceId: string,
  page: { limit: number; before?: readonly [number, string] },
): Promise<ConfigurationVersionRow[]> {
  const before = page.before;
  return db
    .select()
    .from(configurationVersions)
    .where(
      and(
        eq(configurationVersions.workspaceId, workspaceId),
        before === undefined
          ? undefined
          : or(
              lt(configurationVersions.createdAt, before[0]),
              and(
                eq(configurationVersions.createdAt, before[0]),
                lt(configurationVersions.id, before[1]),
              ),
            ),
      ),
    )
    .orderBy(desc(configurationVersions.createdAt), desc(configurationVersions.id))
    .limit(page.limit + 1);
}
