/** D1 access for workspace tags, every query scoped by organization. */
import { newId } from "@outpost/common";
import { and, asc, eq, inArray, type SQL, sql } from "drizzle-orm";
import type { Database } from "../db/client.ts";
import { workspaces, workspaceTagLinks, workspaceTags } from "../db/schema.ts";

/** The tag names of each of `workspaceIds` (sorted; a workspace without tags is absent). */
export async function tagNamesOf(
  db: Database,
  orgId: string,
  workspaceIds: readonly string[],
): Promise<Map<string, string[]>> {
  const byWorkspace = new Map<string, string[]>();
  if (workspaceIds.length === 0) {
    return byWorkspace;
  }
  const rows = await db
    .select({ workspaceId: workspaceTagLinks.workspaceId, name: workspaceTags.name })
    .from(workspaceTagLinks)
    .innerJoin(workspaceTags, eq(workspaceTags.id, workspaceTagLinks.tagId))
    .where(
      and(
        eq(workspaceTagLinks.orgId, orgId),
        inArray(workspaceTagLinks.workspaceId, [...workspaceIds]),
      ),
    )
    .orderBy(asc(workspaceTags.name));
  for (const row of rows) {
    byWorkspace.set(row.workspaceId, [...(byWorkspace.get(row.workspaceId) ?? []), row.name]);
  }
  return byWorkspace;
}

/** The names of the org's tags with these ids (unknown ids, another org's included, are absent). */
export async function tagNamesByIds(db: Database, orgId: string, ids: readonly string[]) {
  if (ids.length === 0) {
    return [];
  }
  const rows = await db
    .select({ id: workspaceTags.id, name: workspaceTags.name })
    .from(workspaceTags)
    .where(and(eq(workspaceTags.orgId, orgId), inArray(workspaceTags.id, [...ids])));
  return rows;
}

/**
 * Statements for one batch that give the workspace `names` on top of what it has: the org's
 * missing tags are made, then the links (existing ones stay).
 */
export function addTagsQueries(
  db: Database,
  orgId: string,
  workspaceId: string,
  names: string[],
  now: number,
) {
  if (names.length === 0) {
    return [];
  }
  // D1 binds at most 100 parameters per statement: four per new tag row.
  const chunks: string[][] = [];
  for (let i = 0; i < names.length; i += 20) {
    chunks.push(names.slice(i, i + 20));
  }
  return [
    ...chunks.map((chunk) =>
      db
        .insert(workspaceTags)
        .values(chunk.map((name) => ({ id: newId("workspaceTag"), orgId, name, createdAt: now })))
        .onConflictDoNothing(),
    ),
    db
      .insert(workspaceTagLinks)
      .select(
        db
          .select({
            workspaceId: sql<string>`${workspaceId}`.as("workspace_id"),
            tagId: workspaceTags.id,
            orgId: sql<string>`${orgId}`.as("org_id"),
            createdAt: sql<number>`${now}`.as("created_at"),
          })
          .from(workspaceTags)
          .where(and(eq(workspaceTags.orgId, orgId), inArray(workspaceTags.name, names))),
      )
      .onConflictDoNothing(),
  ];
}

/** A statement that takes `names` off the workspace (the org's tags themselves stay). */
export function removeTagsQuery(
  db: Database,
  orgId: string,
  workspaceId: string,
  names: string[] | "all",
) {
  const tagIds = db
    .select({ id: workspaceTags.id })
    .from(workspaceTags)
    .where(
      and(
        eq(workspaceTags.orgId, orgId),
        names === "all" ? undefined : inArray(workspaceTags.name, names),
      ),
    );
  return db
    .delete(workspaceTagLinks)
    .where(
      and(
        eq(workspaceTagLinks.orgId, orgId),
        eq(workspaceTagLinks.workspaceId, workspaceId),
        inArray(workspaceTagLinks.tagId, tagIds),
      ),
    );
}

/**
 * A filter on `workspaces` keeping those that carry every one of `names` (the TFE API's
 * `search[tags]`); with no names, no filter.
 */
export function taggedWithAll(orgId: string, names: readonly string[]): SQL | undefined {
  if (names.length === 0) {
    return undefined;
  }
  return sql`${workspaces.id} IN (SELECT l.workspace_id FROM ${workspaceTagLinks} l JOIN ${workspaceTags} t ON t.id = l.tag_id WHERE t.org_id = ${orgId} AND t.name IN (${sql.join(
    names.map((name) => sql`${name}`),
    sql`, `,
  )}) GROUP BY l.workspace_id HAVING count(*) = ${names.length})`;
}

/** The workspace's tags with their ids, by name. */
export function tagRowsOfWorkspace(db: Database, orgId: string, workspaceId: string) {
  return db
    .select({ id: workspaceTags.id, name: workspaceTags.name })
    .from(workspaceTagLinks)
    .innerJoin(workspaceTags, eq(workspaceTags.id, workspaceTagLinks.tagId))
    .where(and(eq(workspaceTagLinks.orgId, orgId), eq(workspaceTagLinks.workspaceId, workspaceId)))
    .orderBy(asc(workspaceTags.name));
}

/**
 * The org's tags on workspaces `visible` keeps (the caller's readable ones), with how many of
 * those carry each; a tag only on workspaces the caller cannot see is not listed.
 */
export function organizationTags(db: Database, orgId: string, visible: SQL | undefined) {
  return db
    .select({ id: workspaceTags.id, name: workspaceTags.name, count: sql<number>`count(*)` })
    .from(workspaceTagLinks)
    .innerJoin(workspaceTags, eq(workspaceTags.id, workspaceTagLinks.tagId))
    .innerJoin(workspaces, eq(workspaces.id, workspaceTagLinks.workspaceId))
    .where(and(eq(workspaceTagLinks.orgId, orgId), visible))
    .groupBy(workspaceTags.id, workspaceTags.name)
    .orderBy(asc(workspaceTags.name));
}
