/**
 * Run triggers: create (at most {@link MAX_SOURCES} sources per workspace, never a cycle),
 * list, delete, and the run a source's applied run queues on each target.
 */
import { newId, ok } from "@outpost/common";
import { eq } from "drizzle-orm";
import { auditQuery } from "../audit/service.ts";
import { type Actor, type AuditActor, plainActor } from "../authz/actor.ts";
import { runTriggers } from "../db/schema.ts";
import type { Deps } from "../deps.ts";
import { type Outcome, refuse } from "../lib/reason.ts";
import type { WorkspaceRow } from "../workspaces/queries.ts";
import { getWorkspacesByIds } from "../workspaces/queries.ts";
import { cycleThrough, MAX_SOURCES } from "./model.ts";
import { listTriggersOf, orgTriggerEdges, type RunTriggerRow } from "./queries.ts";

const iso = (ms: number) => new Date(ms).toISOString();

/** A trigger as the API answers it. */
export function presentRunTrigger(row: RunTriggerRow, sourceName: string) {
  return {
    id: row.id,
    workspaceId: row.workspaceId,
    sourceWorkspaceId: row.sourceWorkspaceId,
    sourceWorkspaceName: sourceName,
    createdBy: row.createdBy ?? null,
    createdAt: iso(row.createdAt),
  };
}

/** The actor a trigger's runs are queued by. */
export function runTriggerActor(row: RunTriggerRow, sourceName: string): Actor {
  return { type: "run-trigger", id: row.id, name: `run trigger from ${sourceName}` };
}

/**
 * Adds a trigger: applies of `source` queue plans on `target`. Refused (`conflict`): the pair
 * exists, the target has {@link MAX_SOURCES} sources already, or the trigger would close a
 * cycle, named workspace by workspace.
 */
export async function createRunTrigger(
  deps: Deps,
  target: WorkspaceRow,
  source: WorkspaceRow,
  actor: AuditActor,
): Promise<Outcome<RunTriggerRow, "conflict">> {
  const [existing, edges] = await Promise.all([
    listTriggersOf(deps.db, target.id),
    orgTriggerEdges(deps.db, target.orgId),
  ]);
  if (existing.some((e) => e.trigger.sourceWorkspaceId === source.id)) {
    return refuse("conflict", `workspace ${source.name} already triggers runs on ${target.name}`);
  }
  if (existing.length >= MAX_SOURCES) {
    return refuse(
      "conflict",
      `workspace ${target.name} already has ${MAX_SOURCES} run trigger sources, the most it may have`,
    );
  }
  const cycle = cycleThrough(edges, { source: source.id, target: target.id });
  if (cycle) {
    const names = new Map(
      (await getWorkspacesByIds(deps.db, [...new Set(cycle)])).map((w) => [w.id, w.name]),
    );
    return refuse(
      "conflict",
      `a run trigger from ${source.name} to ${target.name} would make a cycle: ${cycle.map((id) => names.get(id) ?? id).join(" → ")}`,
      { details: { cycle } },
    );
  }
  const now = deps.now();
  const id = newId("runTrigger");
  const [[row]] = await deps.db.batch([
    deps.db
      .insert(runTriggers)
      .values({
        id,
        orgId: target.orgId,
        workspaceId: target.id,
        sourceWorkspaceId: source.id,
        createdBy: plainActor(actor),
        createdAt: now,
      })
      .onConflictDoNothing()
      .returning(),
    auditQuery(deps.db, {
      orgId: target.orgId,
      actor,
      action: "run_trigger.create",
      targetType: "run_trigger",
      targetId: id,
      data: { workspaceId: target.id, sourceWorkspaceId: source.id },
      now,
    }),
  ]);
  if (!row) {
    return refuse("conflict", `workspace ${source.name} already triggers runs on ${target.name}`);
  }
  return ok(row);
}

/** Deletes a trigger. */
export async function deleteRunTrigger(deps: Deps, row: RunTriggerRow, actor: AuditActor) {
  const now = deps.now();
  await deps.db.batch([
    deps.db.delete(runTriggers).where(eq(runTriggers.id, row.id)),
    auditQuery(deps.db, {
      orgId: row.orgId,
      actor,
      action: "run_trigger.delete",
      targetType: "run_trigger",
      targetId: row.id,
      data: { workspaceId: row.workspaceId, sourceWorkspaceId: row.sourceWorkspaceId },
      now,
    }),
  ]);
}
