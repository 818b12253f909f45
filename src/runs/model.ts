/**
 * The run's rules, pure: the state machine (every status change goes through {@link transition};
 * the table below is the whole truth about which changes exist, docs/architecture.md draws it),
 * what a speculative run is, where a plan leads, which user actions exist and what their refusals
 * say, the queue limit, the phase timeout, and when a phase's log is over. The API, the dashboard,
 * the scheduler's event handlers and the reconciler all ask here.
 */

import { fail, ok, type Result } from "@outpost/common";
import { type PlanSummary, RUN_STATUSES, type RunStatus } from "@outpost/protocol";

export { RUN_STATUSES, type RunStatus };

/**
 * How a run was queued: the API, the CLI, the dashboard, a VCS webhook (`github`, `gitlab`), a
 * schedule, or a run trigger (an applied run of a source workspace).
 */
export const RUN_SOURCES = [
  "api",
  "cli",
  "ui",
  "github",
  "gitlab",
  "schedule",
  "assessment",
  "run-trigger",
] as const;
export type RunSource = (typeof RUN_SOURCES)[number];

export const TERMINAL_STATUSES: readonly RunStatus[] = [
  "planned_and_finished",
  "applied",
  "discarded",
  "errored",
  "canceled",
  "force_canceled",
];

/** Statuses that may still change: every non-terminal one. */
export const ACTIVE_STATUSES: readonly RunStatus[] = RUN_STATUSES.filter(
  (s) => !TERMINAL_STATUSES.includes(s),
);

/** Statuses in which a run waits for something outside itself and can say why. */
export const WAITING_STATUSES: readonly RunStatus[] = ["pending", "plan_queued", "apply_queued"];

/**
 * Statuses in which the run is in the scheduler's hands: its job is queued or running in its
 * pool (or, for `confirmed`, about to be). The reconciler checks each against the pool.
 */
export const SCHEDULED_STATUSES: readonly RunStatus[] = [
  "plan_queued",
  "planning",
  "confirmed",
  "apply_queued",
  "applying",
];

const ENDINGS: RunStatus[] = ["errored", "canceled", "force_canceled"];

/** from → the statuses it may move to. */
const ALLOWED: Record<RunStatus, readonly RunStatus[]> = {
  pending: ["plan_queued", ...ENDINGS],
  plan_queued: ["planning", ...ENDINGS],
  planning: ["planned", "planned_and_finished", ...ENDINGS],
  planned: ["confirmed", "discarded", ...ENDINGS],
  confirmed: ["apply_queued", ...ENDINGS],
  apply_queued: ["applying", ...ENDINGS],
  applying: ["applied", ...ENDINGS],
  planned_and_finished: [],
  applied: [],
  discarded: [],
  errored: [],
  canceled: [],
  force_canceled: [],
};

export function isTerminal(status: RunStatus): boolean {
  return TERMINAL_STATUSES.includes(status);
}

export function isRunStatus(value: string): value is RunStatus {
  return (RUN_STATUSES as readonly string[]).includes(value);
}

/** Whether `from → to` is a transition of the state machine. */
export function canTransition(from: RunStatus, to: RunStatus): boolean {
  return ALLOWED[from].includes(to);
}

export type { RunOperation } from "@outpost/protocol";

import type { RunOperation } from "@outpost/protocol";

/**
 * Whether a run is a speculative plan: asked for as one, or a `plan` operation (which can never
 * apply). Speculative runs never wait for their workspace and never apply.
 */
export function isSpeculativeRun(run: {
  operation: RunOperation;
  isSpeculative?: boolean;
}): boolean {
  return run.isSpeculative === true || run.operation === "plan";
}

export type PlanOutcome = { hasChanges: boolean };

/**
 * Where a finished plan leads: a speculative run, or a plan without changes, ends as
 * `planned_and_finished`; otherwise the run is `planned`, and auto-apply confirms it at once.
 */
export function statusAfterPlan(
  run: { operation: RunOperation; isSpeculative?: boolean },
  outcome: PlanOutcome,
): RunStatus {
  if (isSpeculativeRun(run) || !outcome.hasChanges) {
    return "planned_and_finished";
  }
  return "planned";
}

/** How a job ended, as far as its run cares. */
export type JobEnding = {
  phase: "plan" | "apply";
  outcome: "succeeded" | "failed" | "canceled" | "errored";
  forced: boolean;
  reason: string | null;
  exitCode: number | null;
  planSummary: PlanSummary | null;
  /** The pool ended the started job because its agent was lost. */
  agentLost?: boolean;
};

/** The status change a job's ending makes, compare-and-set from `from`. */
export type EndingMove = {
  /** A success whose start was never recorded first moves queued → running. */
  catchUp: { from: RunStatus; to: RunStatus } | null;
  from: RunStatus[];
  to: RunStatus;
  statusReason?: string;
  planSummary?: PlanSummary;
};

const NO_CHANGES: PlanSummary = { adds: 0, changes: 0, destroys: 0, imports: 0, hasChanges: false };

/** What decides whether a finished plan may go on to apply when it empties the state. */
export type EmptyApplyGuard = { engine: "terraform" | "tofu" | "pulumi"; allowEmptyApply: boolean };

/**
 * True when a plan destroys every resource the state holds and keeps, adds or changes none: the
 * configuration it planned declares no resources (an empty upload, a wrong working directory).
 * Pulumi always keeps its own stack resource, which is not the user's. An engine that does not
 * count the resources it keeps (`sames` absent) cannot tell, so it is never refused.
 */
export function destroysEverything(
  summary: PlanSummary,
  engine: EmptyApplyGuard["engine"],
): boolean {
  if (summary.sames === undefined || summary.destroys === 0) {
    return false;
  }
  const kept = engine === "pulumi" ? Math.max(0, summary.sames - 1) : summary.sames;
  return summary.adds + summary.changes + summary.imports + (summary.replaces ?? 0) + kept === 0;
}

/**
 * Why a finished plan must not go on to apply, or null: it would destroy every resource of the
 * state from a configuration with none, and the run is neither a destroy run nor queued with
 * `allowEmptyApply: true` (as Terraform Cloud refuses). Speculative plans never apply.
 */
export function emptyApplyRefusal(
  run: { operation: RunOperation; isSpeculative: boolean },
  summary: PlanSummary,
  guard: EmptyApplyGuard | null,
): string | null {
  if (guard === null || guard.allowEmptyApply || run.operation !== "apply" || run.isSpeculative) {
    return null;
  }
  if (!destroysEverything(summary, guard.engine)) {
    return null;
  }
  return `refused to apply: the plan destroys all ${summary.destroys} resources of the state and the configuration declares none (an empty upload or the wrong working directory?); queue a destroy run to destroy everything, or queue the run again with allowEmptyApply: true`;
}

/**
 * Where a job's ending takes its run: a finished plan to `planned` or `planned_and_finished`, a
 * finished apply to `applied`, a canceled job to `canceled`/`force_canceled`, anything else to
 * `errored` with the reason ({@link erroredReason}; `savedSerial` is the highest state serial the
 * run wrote, null for none). A finished plan that {@link emptyApplyRefusal} refuses (given the
 * run's `guard`) ends `errored` with that reason. Only from the phase's queued or running status.
 */
export function moveForEnding(
  run: { operation: RunOperation; isSpeculative: boolean },
  ending: JobEnding,
  savedSerial: number | null = null,
  guard: EmptyApplyGuard | null = null,
): EndingMove {
  const [queued, running]: [RunStatus, RunStatus] =
    ending.phase === "plan" ? ["plan_queued", "planning"] : ["apply_queued", "applying"];
  if (ending.outcome === "succeeded") {
    const catchUp = { from: queued, to: running };
    if (ending.phase === "apply") {
      return { catchUp, from: [running], to: "applied" };
    }
    const summary = ending.planSummary ?? NO_CHANGES;
    const refusal = emptyApplyRefusal(run, summary, guard);
    if (refusal !== null) {
      return {
        catchUp,
        from: [running],
        to: "errored",
        statusReason: refusal,
        planSummary: summary,
      };
    }
    const to = statusAfterPlan(run, { hasChanges: summary.hasChanges });
    return { catchUp, from: [running], to, planSummary: summary };
  }
  if (ending.outcome === "canceled") {
    const to = ending.forced ? "force_canceled" : "canceled";
    return {
      catchUp: null,
      from: [queued, running],
      to,
      statusReason: withSavedState(ending.reason ?? `${ending.phase} canceled`, savedSerial),
    };
  }
  return {
    catchUp: null,
    from: [queued, running],
    to: "errored",
    statusReason: erroredReason(ending, savedSerial),
  };
}

/** True when an ending's run should say what state its apply saved: its agent was lost. */
function isLostApply(ending: JobEnding): boolean {
  return ending.agentLost === true && ending.phase === "apply" && ending.outcome === "errored";
}

/**
 * The reason an errored run shows. An apply whose agent was lost says whether the engine saved
 * state before it stopped (the agent's watchdog interrupts the engine, which persists what it
 * applied while its run token still works): `savedSerial` is the highest state serial this run
 * wrote, null for none. Otherwise the job's own reason, or the phase and its exit code, with the
 * serial the run saved when it saved any.
 */
export function erroredReason(ending: JobEnding, savedSerial: number | null): string {
  if (isLostApply(ending)) {
    return savedSerial === null
      ? "agent lost during apply; no state saved"
      : `agent lost during apply; state saved at serial ${savedSerial}`;
  }
  const exit = ending.exitCode !== null ? ` with exit code ${ending.exitCode}` : "";
  return withSavedState(ending.reason ?? `${ending.phase} failed${exit}`, savedSerial);
}

/**
 * A run's final reason, saying what state it wrote when it wrote any (`savedSerial`, the highest
 * serial of the run's state versions): whatever ended the run, the state it left is the truth.
 */
export function withSavedState(reason: string, savedSerial: number | null): string {
  return savedSerial === null ? reason : `${reason}; state saved at serial ${savedSerial}`;
}

/** The job phase a run in the scheduler's hands is at. */
export function phaseOf(status: RunStatus): "plan" | "apply" {
  return status === "pending" || status === "plan_queued" || status === "planning"
    ? "plan"
    : "apply";
}

/** True when the phase can produce no more log: the run ended or moved past it. */
export function isPhaseOver(status: RunStatus, phase: "plan" | "apply"): boolean {
  return isTerminal(status) || (phase === "plan" && phaseOf(status) === "apply");
}

/** The run actions users take (`POST /api/v1/runs/{id}/{action}`, the dashboard's buttons). */
export const RUN_ACTIONS = ["confirm", "discard", "cancel", "force-cancel"] as const;
export type RunAction = (typeof RUN_ACTIONS)[number];

/** Why a user action was refused. */
export type ActionFailure =
  | "invalid_status"
  | "use_discard"
  | "already_canceling"
  | "not_canceling"
  | "too_soon"
  | "workspace_changed";

/** A refused action in words, the same in the API's 409 and on the dashboard. */
export function actionFailureMessage(
  failure: ActionFailure,
  run: { id: string; status: RunStatus },
  action: RunAction,
): string {
  switch (failure) {
    case "invalid_status":
      return `run ${run.id} is ${run.status}; it cannot be ${action}ed`;
    case "use_discard":
      return `run ${run.id} is planned and waits for confirmation; discard it instead`;
    case "already_canceling":
      return `run ${run.id} is already being canceled`;
    case "not_canceling":
      return `force-cancel needs a cancel first (POST /api/v1/runs/${run.id}/cancel)`;
    case "too_soon":
      return `force-cancel is allowed ${FORCE_CANCEL_AFTER_MS / 1000} s after cancel; the engine may still stop cleanly`;
    case "workspace_changed":
      return `run ${run.id} errored: the workspace changed since it was planned`;
  }
}

/**
 * Why an apply may not use this run's plan any more, or null when nothing relevant changed: the
 * workspace's execution mode or agent pool is no longer what the run was planned under.
 */
export function planningContextChanged(
  run: { plannedExecutionMode: string | null; plannedPoolId: string | null },
  workspace: { executionMode: string; poolId: string | null },
): string | null {
  if (run.plannedExecutionMode && run.plannedExecutionMode !== workspace.executionMode) {
    return `the workspace's execution mode changed from ${run.plannedExecutionMode} to ${workspace.executionMode} after this run was planned; queue a new run`;
  }
  if (run.plannedPoolId && run.plannedPoolId !== workspace.poolId) {
    return `the workspace's agent pool changed from ${run.plannedPoolId} to ${workspace.poolId ?? "none"} after this run was planned; queue a new run`;
  }
  return null;
}

/** The default of `MAX_QUEUED_RUNS_PER_ORG`. */
export const DEFAULT_QUEUE_LIMIT = 500;

/** Most runs an org may have waiting (`WAITING_STATUSES`) before new ones get 429. */
export function queueLimit(env: { MAX_QUEUED_RUNS_PER_ORG?: string }): number {
  const configured = Number(env.MAX_QUEUED_RUNS_PER_ORG);
  return Number.isInteger(configured) && configured > 0 ? configured : DEFAULT_QUEUE_LIMIT;
}

/** Whether an org with `waiting` runs waiting may not queue another. */
export function isOverQueueLimit(waiting: number, limit: number): boolean {
  return waiting >= limit;
}

/** Phase timeouts when `PLAN_TIMEOUT_MS` / `APPLY_TIMEOUT_MS` are unset: plan 2 h, apply 24 h. */
export const DEFAULT_PHASE_TIMEOUT_MS = { plan: 2 * 3_600_000, apply: 24 * 3_600_000 } as const;

/**
 * How long a started phase may run: `PLAN_TIMEOUT_MS` / `APPLY_TIMEOUT_MS` (wrangler.toml), the
 * one place it is configured. The run service gives it to the pool with each job, whose alarm
 * ends the job at that deadline; the reconciler uses the same value as its safety net.
 */
export function phaseTimeoutMs(
  env: { PLAN_TIMEOUT_MS?: string; APPLY_TIMEOUT_MS?: string },
  phase: "plan" | "apply",
): number {
  const configured = Number(phase === "plan" ? env.PLAN_TIMEOUT_MS : env.APPLY_TIMEOUT_MS);
  return Number.isInteger(configured) && configured > 0
    ? configured
    : DEFAULT_PHASE_TIMEOUT_MS[phase];
}

/** Force-cancel is allowed this long after a graceful cancel was requested. */
export const FORCE_CANCEL_AFTER_MS = 10_000;

/** Statuses in which a job is running on an agent, so a cancel must reach that agent. */
export const RUNNING_STATUSES: readonly RunStatus[] = ["planning", "applying"];

export type CancelPlan =
  | { kind: "now" }
  | { kind: "signal_agent" }
  | { kind: "refused"; reason: "terminal" | "planned_use_discard" | "already_requested" };

/**
 * What a graceful cancel does: a run waiting in a queue or for confirmation ends canceled at
 * once; a running one asks its agent to interrupt the engine (SIGINT) and ends when it reports.
 */
export function planCancel(status: RunStatus, cancelRequestedAt: number | null): CancelPlan {
  if (isTerminal(status)) {
    return { kind: "refused", reason: "terminal" };
  }
  if (status === "planned") {
    return { kind: "refused", reason: "planned_use_discard" };
  }
  if (RUNNING_STATUSES.includes(status)) {
    return cancelRequestedAt === null
      ? { kind: "signal_agent" }
      : { kind: "refused", reason: "already_requested" };
  }
  return { kind: "now" };
}

/**
 * Force-cancel: for a running run whose graceful cancel is at least 10 s old, so a live engine
 * may stop cleanly first; at once when no live (heartbeating) agent holds the run's job, since
 * then nothing is there to stop cleanly.
 */
export function canForceCancel(
  status: RunStatus,
  cancelRequestedAt: number | null,
  now: number,
  heldByLiveAgent = true,
): Result<true, "terminal" | "not_canceling" | "too_soon"> {
  if (isTerminal(status)) {
    return fail("terminal");
  }
  if (!heldByLiveAgent) {
    return ok(true);
  }
  if (cancelRequestedAt === null) {
    return fail("not_canceling");
  }
  if (now - cancelRequestedAt < FORCE_CANCEL_AFTER_MS) {
    return fail("too_soon");
  }
  return ok(true);
}

/** Queue priority class of a job: apply (0) > plan (1) > speculative plan (2). */
export function priorityClass(phase: "plan" | "apply", isSpeculative: boolean): 0 | 1 | 2 {
  if (phase === "apply") {
    return 0;
  }
  return isSpeculative ? 2 : 1;
}

/** Deterministic job id of a run's phase; enqueueing the same id twice is a no-op. */
export function jobId(runId: string, phase: "plan" | "apply"): string {
  return `${runId}:${phase}`;
}

/** Splits a job id into its run and phase, or null when it is not one. */
export function parseJobId(id: string): { runId: string; phase: "plan" | "apply" } | null {
  const match = /^(run_[a-z2-7]{26}):(plan|apply)$/.exec(id);
  if (!match?.[1] || !match[2]) {
    return null;
  }
  return { runId: match[1], phase: match[2] as "plan" | "apply" };
}
