/**
 * Assessments (drift detection): an assessment is a speculative `refresh` run marked
 * `source: "assessment"` — a refresh-only plan that never applies, never holds the workspace
 * (speculative runs do not wait for it) and holds a token that cannot write state. When its run
 * ends, {@link finishAssessment} records the verdict once, sets the workspace's drift status and,
 * with `autoRemediate`, queues a normal plan. The cron tick starts the due ones.
 */
import { newId, ok } from "@outpost/common";
import { auditQuery } from "../audit/service.ts";
import { type Actor, type AuditActor, plainActor, SYSTEM_ACTOR } from "../authz/actor.ts";
import type { Deps } from "../deps.ts";
import { emitRunEventQuery, flushRunEvents } from "../events/outbox.ts";
import { decodeCursor, takePage } from "../lib/paging.ts";
import { type Outcome, refuse } from "../lib/reason.ts";
import { getRunById, type RunRow } from "../runs/queries.ts";
import { createRun } from "../runs/service.ts";
import { getWorkspaceById, type WorkspaceRow } from "../workspaces/queries.ts";
import { verdictOf } from "./model.ts";
import {
  type AssessmentRow,
  claimAssessmentTickQuery,
  dueAssessmentWorkspaces,
  insertAssessmentQuery,
  listAssessmentsPage,
  pendingAssessment,
  setDriftStatusQuery,
  setRemediationRunQuery,
  settleAssessmentQuery,
  strandedAssessments,
} from "./queries.ts";

/**
 * Starts an assessment of the workspace now. Refuses (`conflict`) while one is pending, and
 * whatever `createRun` refuses (a local workspace, no configuration, the org's queue full).
 */
export async function startAssessment(
  deps: Deps,
  workspace: WorkspaceRow,
  actor: AuditActor,
): Promise<Outcome<AssessmentRow, "conflict" | "not_found" | "over_limit">> {
  const pending = await pendingAssessment(deps.db, workspace.id);
  if (pending) {
    return refuse(
      "conflict",
      `workspace ${workspace.name} has an assessment running (${pending.id}, run ${pending.runId}); wait for it to finish`,
      { details: { assessmentId: pending.id, runId: pending.runId } },
    );
  }
  const created = await createRun(deps, workspace, {
    operation: "refresh",
    isSpeculative: true,
    message: "Assessment: drift check (refresh-only plan, applies nothing)",
    source: "assessment",
    actor,
  });
  if (!created.ok) {
    return created;
  }
  const now = deps.now();
  const id = newId("assessment");
  const [[row]] = await deps.db.batch([
    insertAssessmentQuery(deps.db, {
      id,
      orgId: workspace.orgId,
      workspaceId: workspace.id,
      runId: created.value.run.id,
      status: "pending",
      createdBy: plainActor(actor),
      createdAt: now,
    }),
    auditQuery(deps.db, {
      orgId: workspace.orgId,
      actor,
      action: "assessment.start",
      targetType: "assessment",
      targetId: id,
      data: { workspaceId: workspace.id, runId: created.value.run.id },
      now,
    }),
  ]);
  if (!row) {
    throw new Error(`assessment ${id} vanished after insert`);
  }
  return ok(row);
}

/** A page of the workspace's assessments, newest first. */
export async function listAssessments(
  deps: Deps,
  workspaceId: string,
  page: { limit: number; cursor?: string | undefined },
): Promise<Outcome<{ items: AssessmentRow[]; nextCursor: string | null }, "invalid">> {
  let after: readonly [number, string] | undefined;
  if (page.cursor) {
    const decoded = decodeCursor(page.cursor, ["number", "string"] as const);
    if (!decoded.ok) {
      return decoded;
    }
    after = decoded.value;
  }
  const rows = await listAssessmentsPage(deps.db, workspaceId, {
    limit: page.limit,
    ...(after ? { after } : {}),
  });
  return ok(takePage(rows, page.limit, (r) => [r.createdAt, r.id]));
}

/**
 * Where every assessment finishes: called for each ended run of source `assessment` (from
 * `afterRunEnded`, and by the tick for any it missed). Records the verdict only if the
 * assessment is still pending, so repeated endings act once; then the workspace's drift status,
 * the notification and the remediation plan follow, once.
 */
export async function finishAssessment(deps: Deps, runId: string): Promise<void> {
  const run = await getRunById(deps.db, runId);
  if (!run) {
    return;
  }
  const verdict = verdictOf(run);
  const now = deps.now();
  const [settled] = await settleAssessmentQuery(deps.db, run.id, {
    status: verdict.status,
    driftedResources: verdict.status === "errored" ? [] : verdict.driftedResources,
    reason: verdict.status === "errored" ? verdict.reason : null,
    finishedAt: now,
  });
  if (!settled) {
    return;
  }
  // The notification (`assessment:drifted`, `assessment:failed`) is recorded with the verdict,
  // once per assessment (its id names the event), and sent by the run events queue.
  const eventType =
    verdict.status === "drifted"
      ? ("assessment:drifted" as const)
      : verdict.status === "errored"
        ? ("assessment:failed" as const)
        : null;
  const event = eventType
    ? [
        emitRunEventQuery(
          deps.db,
          {
            id: `${settled.id}:${verdict.status}`,
            type: eventType,
            orgId: run.orgId,
            workspaceId: run.workspaceId,
            runId: run.id,
            status: run.status,
            data: {
              assessmentId: settled.id,
              driftedResources: verdict.status === "drifted" ? verdict.driftedResources : [],
            },
          },
          now,
        ),
      ]
    : [];
  await deps.db.batch([
    setDriftStatusQuery(deps.db, run.workspaceId, verdict.status, now),
    ...event,
    auditQuery(deps.db, {
      orgId: run.orgId,
      actor: SYSTEM_ACTOR,
      action: "assessment.finish",
      targetType: "assessment",
      targetId: settled.id,
      data: { workspaceId: run.workspaceId, runId: run.id, status: verdict.status },
      now,
    }),
  ]);
  if (event.length > 0) {
    await flushRunEvents(deps);
  }
  if (verdict.status === "drifted") {
    await remediate(deps, settled, run);
  }
}

/** With `autoRemediate`, queues a normal plan (it follows the workspace's `autoApply`). */
async function remediate(deps: Deps, assessment: AssessmentRow, run: RunRow): Promise<void> {
  const workspace = await getWorkspaceById(deps.db, run.workspaceId);
  if (!workspace?.autoRemediate) {
    return;
  }
  const actor: Actor = {
    type: "system",
    id: assessment.id,
    name: `assessment ${assessment.id} (autoRemediate)`,
  };
  const created = await createRun(deps, workspace, {
    operation: "apply",
    message: `Remediate drift found by assessment ${assessment.id} (run ${run.id})`,
    source: "assessment",
    actor,
  });
  if (created.ok) {
    await setRemediationRunQuery(deps.db, assessment.id, created.value.run.id);
  } else {
    console.log(
      JSON.stringify({
        level: "warn",
        msg: "remediation plan refused",
        assessmentId: assessment.id,
        reason: created.reason.message,
      }),
    );
  }
}

/** How many workspaces one tick assesses; the rest are due at the next tick. */
const TICK_BATCH = 50;

/** What one tick did: assessments started, and stranded ones it settled. */
export type AssessmentTickReport = { started: string[]; settled: string[] };

/**
 * The cron tick: settles pending assessments whose run ended unseen, then starts one assessment
 * per workspace whose interval elapsed. The next due time is claimed compare-and-set before
 * anything starts, so a repeated or concurrent tick starts nothing twice; a workspace whose
 * assessment is still pending waits for the next interval.
 */
export async function tickAssessments(deps: Deps): Promise<AssessmentTickReport> {
  const report: AssessmentTickReport = { started: [], settled: [] };
  for (const { runId } of await strandedAssessments(deps.db, TICK_BATCH)) {
    await finishAssessment(deps, runId);
    report.settled.push(runId);
  }
  const now = deps.now();
  for (const due of await dueAssessmentWorkspaces(deps.db, now, TICK_BATCH)) {
    const from = due.nextAssessmentAt ?? now;
    const to = now + due.assessmentIntervalMinutes * 60_000;
    const [claimed] = await claimAssessmentTickQuery(deps.db, due.id, from, to);
    const workspace = claimed && (await getWorkspaceById(deps.db, due.id));
    if (!workspace || (await pendingAssessment(deps.db, workspace.id))) {
      continue;
    }
    const started = await startAssessment(deps, workspace, {
      type: "schedule",
      id: workspace.id,
      name: `assessments of ${workspace.name}`,
    });
    if (started.ok) {
      report.started.push(started.value.id);
    } else {
      // Nothing to record it on (no run): the log says why, the next interval tries again.
      console.log(
        JSON.stringify({
          level: "warn",
          msg: "assessment not started",
          workspaceId: workspace.id,
          reason: started.reason.message,
        }),
      );
    }
  }
  return report;
}
