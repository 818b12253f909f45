/** D1 access for run triggers. */
import { and, asc, eq, sql } from "drizzle-orm";
import type { Database } from "../db/client.ts";
import { runs, runTriggers, workspaces } from "../db/schema.ts";

export type RunTriggerRow = typeof runTriggers.$inferSelect;

export function getRunTrigger(db: Database, orgId: string, id: string) {
  return db
    .select()
    .from(runTriggers)
    .where(and(eq(runTriggers.orgId, orgId), eq(runTriggers.id, id)))
    .get();
}

/** A workspace's triggers (those that queue runs on it), oldest first, with source names. */
export function listTriggersOf(db: Database, workspaceId: string) {
  return db
    .select({ trigger: runTriggers, sourceName: workspaces.name })
    .from(runTriggers)
    .innerJoin(workspaces, eq(workspaces.id, runTriggers.sourceWorkspaceId))
    .where(eq(runTriggers.workspaceId, workspaceId))
    .orderBy(asc(runTriggers.createdAt), asc(runTriggers.id));
}

/** Every trigger edge of an organization (bounded: at most 20 per workspace). */
export function orgTriggerEdges(db: Database, orgId: string) {
  return db
    .select({ source: runTriggers.sourceWorkspaceId, target: runTriggers.workspaceId })
    .from(runTriggers)
    .where(eq(runTriggers.orgId, orgId));
}

/** The triggers whose source is `workspaceId`: the workspaces its applies queue runs on. */
export function triggersFrom(db: Database, workspaceId: string) {
  return db.select().from(runTriggers).where(eq(runTriggers.sourceWorkspaceId, workspaceId));
}

/** Whether `sourceRunId` already queued a run on `workspaceId`. */
export async function hasTriggeredRun(db: Database, workspaceId: string, sourceRunId: string) {
  const row = await db
    .select({ one: sql`1` })
    .from(runs)
    .where(and(eq(runs.workspaceId, workspaceId), eq(runs.triggeringRunId, sourceRunId)))
    .get();
  return row !== undefined;
}
