/** The SQL of assessments and of the workspace columns they keep. */
import { and, desc, eq, inArray, lt, lte, or } from "drizzle-orm";
import type { Database } from "../db/client.ts";
import { assessments, runs, workspaces } from "../db/schema.ts";
import { TERMINAL_STATUSES } from "../runs/model.ts";
import type { AssessmentStatus } from "./model.ts";

export type AssessmentRow = typeof assessments.$inferSelect;

export function insertAssessmentQuery(db: Database, row: typeof assessments.$inferInsert) {
  return db.insert(assessments).values(row).returning();
}

/** A page of a workspace's assessments, newest first (`limit + 1` rows, for `takePage`). */
export function listAssessmentsPage(
  db: Database,
  workspaceId: string,
  page: { limit: number; after?: readonly [number, string] },
): Promise<AssessmentRow[]> {
  return db
    .select()
    .from(assessments)
    .where(
      and(
        eq(assessments.workspaceId, workspaceId),
        page.after
          ? or(
              lt(assessments.createdAt, page.after[0]),
              and(eq(assessments.createdAt, page.after[0]), lt(assessments.id, page.after[1])),
            )
          : undefined,
      ),
    )
    .orderBy(desc(assessments.createdAt), desc(assessments.id))
    .limit(page.limit + 1);
}

/** The workspace's assessment still waiting for its run, if any. */
export async function pendingAssessment(
  db: Database,
  workspaceId: string,
): Promise<AssessmentRow | undefined> {
  const [row] = await db
    .select()
    .from(assessments)
    .where(and(eq(assessments.workspaceId, workspaceId), eq(assessments.status, "pending")))
    .limit(1);
  return row;
}

/**
 * Settles the pending assessment of `runId`: answers the row only for the call that moved it
 * out of `pending`, so whatever follows a verdict happens once.
 */
export function settleAssessmentQuery(
  db: Database,
  runId: string,
  values: {
    status: Exclude<AssessmentStatus, "pending">;
    driftedResources: string[];
    reason: string | null;
    finishedAt: number;
  },
) {
  return db
    .update(assessments)
    .set(values)
    .where(and(eq(assessments.runId, runId), eq(assessments.status, "pending")))
    .returning();
}

export function setRemediationRunQuery(db: Database, id: string, runId: string) {
  return db.update(assessments).set({ remediationRunId: runId }).where(eq(assessments.id, id));
}

/** The workspace's drift status, from the assessment that just finished. */
export function setDriftStatusQuery(
  db: Database,
  workspaceId: string,
  status: Exclude<AssessmentStatus, "pending">,
  at: number,
) {
  return db
    .update(workspaces)
    .set({ driftStatus: status, lastAssessmentAt: at })
    .where(eq(workspaces.id, workspaceId));
}

/** Workspaces whose next assessment is due at `now`, the most overdue first. */
export function dueAssessmentWorkspaces(db: Database, now: number, limit: number) {
  return db
    .select({
      id: workspaces.id,
      nextAssessmentAt: workspaces.nextAssessmentAt,
      assessmentIntervalMinutes: workspaces.assessmentIntervalMinutes,
    })
    .from(workspaces)
    .where(and(eq(workspaces.assessmentsEnabled, true), lte(workspaces.nextAssessmentAt, now)))
    .orderBy(workspaces.nextAssessmentAt)
    .limit(limit);
}

/** Moves the workspace's next assessment on, only if no other tick moved it first. */
export function claimAssessmentTickQuery(db: Database, id: string, from: number, to: number) {
  return db
    .update(workspaces)
    .set({ nextAssessmentAt: to })
    .where(and(eq(workspaces.id, id), eq(workspaces.nextAssessmentAt, from)))
    .returning({ id: workspaces.id });
}

/** Pending assessments whose run already ended: settled by the tick if the ending missed them. */
export function strandedAssessments(db: Database, limit: number) {
  return db
    .select({ runId: assessments.runId })
    .from(assessments)
    .innerJoin(runs, eq(runs.id, assessments.runId))
    .where(and(eq(assessments.status, "pending"), inArray(runs.status, [...TERMINAL_STATUSES])))
    .limit(limit);
}
