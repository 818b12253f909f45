/**
 * Schedules: create, list, delete, and the cron tick that queues their runs. A tick queues at
 * most one run per (schedule, occurrence time) however often or late it runs, because the
 * occurrence is claimed by an insert on that key before the run is queued; while the run of the
 * schedule's previous occurrence is active, the occurrence is recorded as skipped instead.
 */
import { newId, ok } from "@outpost/common";
import type { RunOperation } from "@outpost/protocol";
import { auditQuery } from "../audit/service.ts";
import { type Actor, type AuditActor, plainActor } from "../authz/actor.ts";
import type { Deps } from "../deps.ts";
import { invalidInput, type Outcome, refuse } from "../lib/reason.ts";
import { isTerminal } from "../runs/model.ts";
import { getRunById } from "../runs/queries.ts";
import { createRun } from "../runs/service.ts";
import { getWorkspaceById, type WorkspaceRow } from "../workspaces/queries.ts";
import {
  type CronSchedule,
  dueOccurrence,
  MAX_SCHEDULES_PER_WORKSPACE,
  nextOccurrence,
  parseSchedule,
} from "./model.ts";
import {
  advanceScheduleQuery,
  claimOccurrenceQuery,
  countSchedulesQuery,
  deleteScheduleQuery,
  dueSchedules,
  insertScheduleQuery,
  latestOccurrences,
  listScheduleRows,
  type OccurrenceRow,
  type ScheduleRow,
  setLastRunQuery,
  settleOccurrenceQuery,
} from "./queries.ts";

export type ScheduleInput = { cron: string; timezone: string; operation: RunOperation };

/** A schedule with the latest occurrence its ticks recorded. */
export type ScheduleView = ScheduleRow & { lastOccurrence: OccurrenceRow | null };

/**
 * When a new schedule of `workspace` first occurs after `now`, or why it may not be created: an
 * invalid cron or time zone, a local workspace, a workspace at its limit, a cron that never occurs.
 */
async function firstOccurrence(
  deps: Deps,
  workspace: WorkspaceRow,
  input: ScheduleInput,
  now: number,
): Promise<Outcome<number, "invalid" | "conflict">> {
  const parsed = parseSchedule(input.cron, input.timezone, now);
  if (!parsed.ok) {
    return invalidInput(`json.${parsed.reason.field}`, parsed.reason.message);
  }
  if (workspace.executionMode === "local") {
    return refuse(
      "conflict",
      `workspace ${workspace.name} uses local execution: a schedule needs executionMode agent`,
    );
  }
  const [count] = await countSchedulesQuery(deps.db, workspace.id);
  if ((count?.n ?? 0) >= MAX_SCHEDULES_PER_WORKSPACE) {
    return refuse(
      "conflict",
      `workspace ${workspace.name} has ${MAX_SCHEDULES_PER_WORKSPACE} schedules, the most it may have; delete one first`,
    );
  }
  const nextRunAt = nextOccurrence(parsed.value, now);
  return nextRunAt === null
    ? invalidInput("json.cron", `cron "${input.cron}" never occurs`)
    : ok(nextRunAt);
}

/**
 * Creates a schedule on an agent-mode workspace. Refuses an invalid cron or time zone
 * (`invalid`, naming the field), a local workspace and a workspace at its limit (`conflict`).
 * Its first occurrence is the first one after now: creating it never queues a past one.
 */
export async function createSchedule(
  deps: Deps,
  workspace: WorkspaceRow,
  input: ScheduleInput,
  actor: AuditActor,
): Promise<Outcome<ScheduleView, "invalid" | "conflict">> {
  const now = deps.now();
  const first = await firstOccurrence(deps, workspace, input, now);
  if (!first.ok) {
    return first;
  }
  const nextRunAt = first.value;
  const id = newId("schedule");
  const [[row]] = await deps.db.batch([
    insertScheduleQuery(deps.db, {
      id,
      orgId: workspace.orgId,
      workspaceId: workspace.id,
      cron: input.cron.trim().split(/\s+/).join(" "),
      timezone: input.timezone,
      operation: input.operation,
      nextRunAt,
      createdBy: plainActor(actor),
      createdAt: now,
    }),
    auditQuery(deps.db, {
      orgId: workspace.orgId,
      actor,
      action: "schedule.create",
      targetType: "schedule",
      targetId: id,
      data: { workspaceId: workspace.id, ...input },
      now,
    }),
  ]);
  if (!row) {
    throw new Error(`schedule ${id} vanished after insert`);
  }
  return ok({ ...row, lastOccurrence: null });
}

/** A workspace's schedules, oldest first, each with its latest recorded occurrence. */
export async function listSchedules(deps: Deps, workspaceId: string): Promise<ScheduleView[]> {
  const rows = await listScheduleRows(deps.db, workspaceId);
  const latest = await latestOccurrences(
    deps.db,
    rows.map((r) => r.id),
  );
  return rows.map((row) => ({ ...row, lastOccurrence: latest.get(row.id) ?? null }));
}

/** Deletes a schedule of the workspace (its occurrences go with it); `not_found` otherwise. */
export async function deleteSchedule(
  deps: Deps,
  workspace: WorkspaceRow,
  scheduleId: string,
  actor: AuditActor,
): Promise<Outcome<void, "not_found">> {
  const [deleted] = await deleteScheduleQuery(deps.db, workspace.id, scheduleId);
  if (!deleted) {
    return refuse("not_found", `schedule ${scheduleId} not found in workspace ${workspace.name}`);
  }
  await deps.db.batch([
    auditQuery(deps.db, {
      orgId: workspace.orgId,
      actor,
      action: "schedule.delete",
      targetType: "schedule",
      targetId: scheduleId,
      data: { workspaceId: workspace.id, cron: deleted.cron, timezone: deleted.timezone },
      now: deps.now(),
    }),
  ]);
  return ok(undefined);
}

/** What one tick did: the occurrences it queued, skipped and failed. */
export type TickReport = { queued: string[]; skipped: string[]; failed: string[] };

/** How many due schedules one tick handles; the rest are due at the next tick. */
const TICK_BATCH = 100;

/**
 * The cron tick: every schedule due at `deps.now()` gets its due occurrence handled once.
 * Safe to run twice at once, or late: see the module comment.
 */
export async function tickSchedules(deps: Deps): Promise<TickReport> {
  const now = deps.now();
  const report: TickReport = { queued: [], skipped: [], failed: [] };
  for (const row of await dueSchedules(deps.db, now, TICK_BATCH)) {
    const parsed = parseSchedule(row.cron, row.timezone, now);
    const schedule: CronSchedule | null = parsed.ok ? parsed.value : null;
    const occurrenceAt = schedule ? dueOccurrence(schedule, row.nextRunAt, now) : row.nextRunAt;
    const next = schedule ? nextOccurrence(schedule, now) : null;
    // A schedule that can no longer occur (a time zone the runtime dropped) stops being due.
    await advanceScheduleQuery(deps.db, row.id, row.nextRunAt, next ?? Number.MAX_SAFE_INTEGER);
    if (occurrenceAt === null) {
      continue;
    }
    const status = await handleOccurrence(deps, row, occurrenceAt);
    if (status) {
      report[status].push(`${row.id}@${new Date(occurrenceAt).toISOString()}`);
    }
  }
  return report;
}

/** The actor of a schedule's runs: the schedule itself, named by its cron. */
function scheduleActor(row: ScheduleRow): Actor {
  return { type: "schedule", id: row.id, name: `schedule "${row.cron}" (${row.timezone})` };
}

/** Queues the run of one occurrence of `row` on its workspace. */
async function queueScheduledRun(
  deps: Deps,
  row: ScheduleRow,
  occurrenceAt: number,
): ReturnType<typeof createRun> {
  const workspace = await getWorkspaceById(deps.db, row.workspaceId);
  if (!workspace) {
    return refuse("not_found", `workspace ${row.workspaceId} is gone`);
  }
  return createRun(deps, workspace, {
    operation: row.operation,
    message: `Scheduled ${row.operation} (${row.cron}, ${row.timezone}) for ${new Date(occurrenceAt).toISOString()}`,
    source: "schedule",
    actor: scheduleActor(row),
  });
}

/**
 * Handles one occurrence: skipped while the previous scheduled run is active, else claimed and
 * its run queued. Answers what it recorded, or null when another tick had recorded it.
 */
async function handleOccurrence(
  deps: Deps,
  row: ScheduleRow,
  occurrenceAt: number,
): Promise<OccurrenceRow["status"] | null> {
  const now = deps.now();
  const base = { scheduleId: row.id, occurrenceAt, runId: null, reason: null, createdAt: now };
  const previous = row.lastRunId ? await getRunById(deps.db, row.lastRunId) : undefined;
  if (previous && !isTerminal(previous.status)) {
    const [skipped] = await claimOccurrenceQuery(deps.db, {
      ...base,
      status: "skipped",
      reason: `run ${previous.id} of this schedule is still ${previous.status}`,
    });
    return skipped ? "skipped" : null;
  }
  const [claimed] = await claimOccurrenceQuery(deps.db, { ...base, status: "queued" });
  if (!claimed) {
    return null;
  }
  const created = await queueScheduledRun(deps, row, occurrenceAt);
  if (!created.ok) {
    await settleOccurrenceQuery(deps.db, row.id, occurrenceAt, {
      status: "failed",
      runId: null,
      reason: created.reason.message,
    });
    return "failed";
  }
  const runId = created.value.run.id;
  await deps.db.batch([
    settleOccurrenceQuery(deps.db, row.id, occurrenceAt, { status: "queued", runId, reason: null }),
    setLastRunQuery(deps.db, row.id, runId),
  ]);
  return "queued";
}
