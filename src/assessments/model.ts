/**
 * Assessments' rules, pure: when a workspace's next assessment is due after its settings
 * change, and what an assessment's run says about drift once it ended.
 */
import type { PlanSummary } from "@outpost/protocol";
import type { RunStatus } from "../runs/model.ts";

export const ASSESSMENT_STATUSES = ["pending", "no_drift", "drifted", "errored"] as const;
export type AssessmentStatus = (typeof ASSESSMENT_STATUSES)[number];

/** At most this many drifted addresses are kept per assessment (the agent sends as many). */
export const MAX_DRIFTED_RESOURCES = 1000;

type Cadence = { assessmentsEnabled: boolean; assessmentIntervalMinutes: number };

/**
 * When the tick should start the workspace's next assessment after its settings went from
 * `before` (null for a new workspace) to `after`: never while disabled; at the next tick when
 * just enabled; sooner when the interval shrank; otherwise as it was.
 */
export function nextAssessmentAt(
  before: Cadence | null,
  after: Cadence,
  current: number | null,
  now: number,
): number | null {
  if (!after.assessmentsEnabled) {
    return null;
  }
  if (!before?.assessmentsEnabled || current === null) {
    return now;
  }
  return Math.min(current, now + after.assessmentIntervalMinutes * 60_000);
}

/** The verdict of an assessment whose run ended: drift found, none, or the check failed. */
export type Verdict =
  | { status: "no_drift"; driftedResources: string[] }
  | { status: "drifted"; driftedResources: string[] }
  | { status: "errored"; reason: string };

/**
 * Reads an ended assessment run: a refresh-only plan that finished says whether anything
 * drifted (the addresses the agent found, or its `hasChanges` when an older agent sent none);
 * any other ending (errored, canceled) is an errored assessment with the run's reason.
 */
export function verdictOf(run: {
  status: RunStatus;
  statusReason: string | null;
  planSummary: PlanSummary | null;
}): Verdict {
  if (run.status !== "planned_and_finished" || run.planSummary === null) {
    return {
      status: "errored",
      reason: run.statusReason ?? `the assessment's run ended ${run.status}`,
    };
  }
  const drifted = (run.planSummary.driftedResources ?? []).slice(0, MAX_DRIFTED_RESOURCES);
  return drifted.length > 0 || run.planSummary.hasChanges
    ? { status: "drifted", driftedResources: drifted }
    : { status: "no_drift", driftedResources: [] };
}
