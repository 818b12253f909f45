/** D1 access for workspaces. Every query is scoped by org id: nothing crosses organizations. */
import { PULUMI_BACKEND_URL } from "@outpost/protocol";
import {
  and,
  asc,
  eq,
  getTableColumns,
  gt,
  inArray,
  isNotNull,
  isNull,
  notExists,
  notInArray,
  type SQL,
  sql,
} from "drizzle-orm";
import { type Database, prepared } from "../db/client.ts";
import { agentPools, runs, stateLocks, workspaces } from "../db/schema.ts";
import { TERMINAL_STATUSES } from "../runs/model.ts";
import { WORKSPACE_ID_PATTERN } from "./model.ts";

/**
 * Whether the workspace names its own state backend (a Pulumi stack kept outside Outpost):
 * derived on every read from its variables, an EXISTS over their (workspace, category, key)
 * index, so it can never disagree with them. Spelled out with table-qualified names: drizzle
 * renders a column inside `sql` unqualified, which the subquery would resolve to its own table.
 */
const hasOwnStateBackend =
  sql<boolean>`EXISTS (SELECT 1 FROM "variables" WHERE "variables"."workspace_id" = "workspaces"."id" AND "variables"."category" = 'env' AND "variables"."key" = ${PULUMI_BACKEND_URL})`
    .mapWith(Boolean)
    .as("has_own_state_backend");

/** A workspace as every read answers it: its columns and what its variables say. */
const workspaceColumns = { ...getTableColumns(workspaces), hasOwnStateBackend };

export type WorkspaceRow = typeof workspaces.$inferSelect & { hasOwnStateBackend: boolean };

/** Finds a workspace of the org by id (`ws_…`) or by name. */
export function findWorkspace(
  db: Database,
  orgId: string,
  ref: string,
): Promise<WorkspaceRow | undefined> {
  const byId = WORKSPACE_ID_PATTERN.test(ref);
  const column = byId ? workspaces.id : workspaces.name;
  return prepared(db, byId ? "workspace.byId" : "workspace.byName", (d) =>
    d
      .select(workspaceColumns)
      .from(workspaces)
      .where(
        and(eq(workspaces.orgId, sql.placeholder("orgId")), eq(column, sql.placeholder("ref"))),
      )
      .prepare(),
  ).get({ orgId, ref });
}

/** A workspace by id alone: for the scheduler's paths, which carry no principal. */
export function getWorkspaceById(db: Database, id: string): Promise<WorkspaceRow | undefined> {
  return prepared(db, "workspace.anyOrg", (d) =>
    d
      .select(workspaceColumns)
      .from(workspaces)
      .where(eq(workspaces.id, sql.placeholder("id")))
      .prepare(),
  ).get({ id });
}

/** The workspaces among `ids`, in any org: for the reconciler, which works across orgs. */
export function getWorkspacesByIds(db: Database, ids: readonly string[]): Promise<WorkspaceRow[]> {
  return db
    .select(workspaceColumns)
    .from(workspaces)
    .where(inArray(workspaces.id, [...ids]));
}

/** A workspace's id, name and project, by id: what a pool's scope is checked against. */
export function workspacePlacementQuery(db: Database, id: string) {
  return db
    .select({ id: workspaces.id, name: workspaces.name, projectId: workspaces.projectId })
    .from(workspaces)
    .where(eq(workspaces.id, id))
    .limit(1);
}

export function findWorkspaceByName(db: Database, orgId: string, name: string) {
  return db.query.workspaces.findFirst({
    where: and(eq(workspaces.orgId, orgId), eq(workspaces.name, name)),
    columns: { id: true },
  });
}

/**
 * One page of the org's workspaces in name order, `limit + 1` rows to detect a next page;
 * `search` keeps names containing it (literally: no wildcards), `projectId` those of one
 * project; `visible` keeps the workspaces a caller may see (`authz/queries.ts`).
 */
export function listWorkspaceRows(
  db: Database,
  orgId: string,
  page: {
    limit: number;
    after?: string | undefined;
    /** Rows to skip first, for numbered pages (the TFE API's `page[number]`). */
    offset?: number | undefined;
    search?: string | undefined;
    projectId?: string | undefined;
    visible?: SQL | undefined;
  },
): Promise<WorkspaceRow[]> {
  return db
    .select(workspaceColumns)
    .from(workspaces)
    .where(listFilter(orgId, page))
    .orderBy(asc(workspaces.name))
    .limit(page.limit + 1)
    .offset(page.offset ?? 0);
}

function listFilter(
  orgId: string,
  page: {
    after?: string | undefined;
    search?: string | undefined;
    projectId?: string | undefined;
    visible?: SQL | undefined;
  },
) {
  return and(
    eq(workspaces.orgId, orgId),
    page.after === undefined ? undefined : gt(workspaces.name, page.after),
    page.search === undefined ? undefined : sql`instr(${workspaces.name}, ${page.search}) > 0`,
    page.projectId === undefined ? undefined : eq(workspaces.projectId, page.projectId),
    page.visible,
  );
}

/** How many workspaces {@link listWorkspaceRows} would list over all its pages. */
export async function countWorkspaceRows(
  db: Database,
  orgId: string,
  filter: { search?: string | undefined; visible?: SQL | undefined },
): Promise<number> {
  const [row] = await db
    .select({ total: sql<number>`count(*)` })
    .from(workspaces)
    .where(listFilter(orgId, filter));
  return row?.total ?? 0;
}

/** The org's pool's name and scope (what `poolScopeRefusal` reads), or undefined. */
export async function findPoolScope(db: Database, orgId: string, poolId: string) {
  const [pool] = await db
    .select({
      name: agentPools.name,
      organizationScoped: agentPools.organizationScoped,
      allowedWorkspaceIds: agentPools.allowedWorkspaceIds,
      allowedProjectIds: agentPools.allowedProjectIds,
    })
    .from(agentPools)
    .where(and(eq(agentPools.orgId, orgId), eq(agentPools.id, poolId)));
  return pool;
}

/** The org's workspaces connected to a repository; which ones an event reaches is the VCS model's. */
export function listVcsWorkspaces(db: Database, orgId: string): Promise<WorkspaceRow[]> {
  return db
    .select(workspaceColumns)
    .from(workspaces)
    .where(and(eq(workspaces.orgId, orgId), isNotNull(workspaces.vcsRepoUrl)));
}

export function updateWorkspaceQuery(
  db: Database,
  orgId: string,
  id: string,
  values: Partial<typeof workspaces.$inferInsert>,
) {
  return db
    .update(workspaces)
    .set(values)
    .where(and(eq(workspaces.orgId, orgId), eq(workspaces.id, id)))
    .returning(workspaceColumns);
}

function activeRunsOf(db: Database, workspaceId: string) {
  return db
    .select({ id: runs.id })
    .from(runs)
    .where(and(eq(runs.workspaceId, workspaceId), notInArray(runs.status, [...TERMINAL_STATUSES])));
}

/** The ids of the workspace's runs that are not terminal (at most `limit`). */
export async function activeRunIds(db: Database, workspaceId: string, limit = 5) {
  return (await activeRunsOf(db, workspaceId).limit(limit)).map((r) => r.id);
}

/**
 * Deletes the workspace only if it is unlocked, its state is unlocked and no run of it is active,
 * in one statement, so a run queued between the caller's check and the delete still blocks it. Returns the deleted row.
 */
export function deleteIdleWorkspaceQuery(db: Database, orgId: string, id: string) {
  return db
    .delete(workspaces)
    .where(
      and(
        eq(workspaces.orgId, orgId),
        eq(workspaces.id, id),
        isNull(workspaces.lockedBy),
        notExists(activeRunsOf(db, id)),
        notExists(db.select().from(stateLocks).where(eq(stateLocks.workspaceId, id))),
      ),
    )
    .returning({ id: workspaces.id });
}

/** Sets the lock only when nobody holds it; returns the updated row, none when it was held. */
export function acquireLockQuery(
  db: Database,
  orgId: string,
  id: string,
  lock: { lockedBy: string; reason: string; now: number },
) {
  return db
    .update(workspaces)
    .set({ lockedBy: lock.lockedBy, lockReason: lock.reason, lockedAt: lock.now })
    .where(and(eq(workspaces.orgId, orgId), eq(workspaces.id, id), isNull(workspaces.lockedBy)))
    .returning(workspaceColumns);
}

/** Clears the lock only if `lockedBy` still holds it (compare-and-set). */
export function releaseLockQuery(db: Database, orgId: string, id: string, lockedBy: string) {
  return db
    .update(workspaces)
    .set({ lockedBy: null, lockReason: null, lockedAt: null })
    .where(
      and(eq(workspaces.orgId, orgId), eq(workspaces.id, id), eq(workspaces.lockedBy, lockedBy)),
    )
    .returning(workspaceColumns);
}

/** Those of `ids` that name no workspace of the org. */
export async function missingWorkspaces(
  db: Database,
  orgId: string,
  ids: readonly string[],
): Promise<string[]> {
  const known = new Set<string>();
  // D1 binds at most 100 parameters per statement.
  for (let i = 0; i < ids.length; i += 50) {
    const found = await db
      .select({ id: workspaces.id })
      .from(workspaces)
      .where(and(eq(workspaces.orgId, orgId), inArray(workspaces.id, ids.slice(i, i + 50))));
    for (const row of found) {
      known.add(row.id);
    }
  }
  return ids.filter((id) => !known.has(id));
}
