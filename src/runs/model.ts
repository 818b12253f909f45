/**
 * The run state machine of DESIGN.md "Domain", pure. Every status change goes through
 * {@link transition}; the table below is the whole truth about which changes exist.
 */

import { RUN_STATUSES, type RunStatus } from "@outpost/protocol";
import { fail, ok, type Result } from "../lib/result.ts";

export { RUN_STATUSES, type RunStatus };

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

/** Checks one transition; refused ones name both ends so the caller can say why. */
export function transition(
  from: RunStatus,
  to: RunStatus,
): Result<RunStatus, "invalid_transition"> {
  return canTransition(from, to) ? ok(to) : fail("invalid_transition");
}

export type PlanOutcome = { hasChanges: boolean };

/**
 * Where a finished plan leads: a speculative or plan-only run, or a plan without changes, ends
 * as `planned_and_finished`; otherwise the run is `planned`, and auto-apply confirms it at once.
 */
export function statusAfterPlan(
  run: { operation: "plan" | "apply" | "destroy"; isSpeculative: boolean },
  outcome: PlanOutcome,
): RunStatus {
  if (run.isSpeculative || run.operation === "plan" || !outcome.hasChanges) {
    return "planned_and_finished";
  }
  return "planned";
}

/** How a failed job ended, as far as the run's reason goes. */
export type FailedJob = {
  phase: "plan" | "apply";
  /** The pool's or the agent's words, if any. */
  reason: string | null;
  exitCode: number | null;
  /** The pool ended the job because its agent was lost. */
  agentLost: boolean;
};

/**
 * The reason an errored run shows. An apply whose agent was lost says whether the engine saved
 * state before it stopped (the agent's watchdog interrupts the engine, which persists what it
 * applied while its run token still works): `savedSerial` is the highest state serial this run
 * wrote, null for none. Otherwise the job's own reason, or the phase and its exit code.
 */
export function erroredReason(job: FailedJob, savedSerial: number | null): string {
  if (job.agentLost && job.phase === "apply") {
    return savedSerial === null
      ? "agent lost during apply; no state saved"
      : `agent lost during apply; state saved at serial ${savedSerial}`;
  }
  const exit = job.exitCode !== null ? ` with exit code ${job.exitCode}` : "";
  return job.reason ?? `${job.phase} failed${exit}`;
}

/** The run actions users take, with the role each needs. */
export const RUN_ACTIONS = ["confirm", "discard", "cancel", "force-cancel"] as const;
export type RunAction = (typeof RUN_ACTIONS)[number];

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

/** Force-cancel: only for a running run whose graceful cancel is at least 10 s old. */
export function canForceCancel(
  status: RunStatus,
  cancelRequestedAt: number | null,
  now: number,
): Result<true, "terminal" | "not_canceling" | "too_soon"> {
  if (isTerminal(status)) {
    return fail("terminal");
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
