import { describe, expect, it } from "vitest";
import {
  actionFailureMessage,
  canForceCancel,
  canTransition,
  DEFAULT_PHASE_TIMEOUT_MS,
  FORCE_CANCEL_AFTER_MS,
  isOverQueueLimit,
  isPhaseOver,
  isSpeculativeRun,
  moveForEnding,
  parseJobId,
  phaseTimeoutMs,
  planCancel,
  planningContextChanged,
  priorityClass,
  queueLimit,
  RUN_STATUSES,
  type RunStatus,
  statusAfterPlan,
} from "../../src/runs/model.ts";
import { moveRunQuery } from "../../src/runs/queries.ts";
import { db } from "./helpers/fixtures.ts";

// One row per allowed transition; every pair not listed here must be refused.
const ALLOWED: [RunStatus, RunStatus][] = [
  ["pending", "plan_queued"],
  ["pending", "errored"],
  ["pending", "canceled"],
  ["pending", "force_canceled"],
  ["plan_queued", "planning"],
  ["plan_queued", "errored"],
  ["plan_queued", "canceled"],
  ["plan_queued", "force_canceled"],
  ["planning", "planned"],
  ["planning", "planned_and_finished"],
  ["planning", "errored"],
  ["planning", "canceled"],
  ["planning", "force_canceled"],
  ["planned", "confirmed"],
  ["planned", "discarded"],
  ["planned", "errored"],
  ["planned", "canceled"],
  ["planned", "force_canceled"],
  ["confirmed", "apply_queued"],
  ["confirmed", "errored"],
  ["confirmed", "canceled"],
  ["confirmed", "force_canceled"],
  ["apply_queued", "applying"],
  ["apply_queued", "errored"],
  ["apply_queued", "canceled"],
  ["apply_queued", "force_canceled"],
  ["applying", "applied"],
  ["applying", "errored"],
  ["applying", "canceled"],
  ["applying", "force_canceled"],
];

const allPairs = RUN_STATUSES.flatMap((from) => RUN_STATUSES.map((to) => [from, to] as const));
const isAllowed = (from: RunStatus, to: RunStatus) =>
  ALLOWED.some(([f, t]) => f === from && t === to);

describe("run state machine", () => {
  it.each(allPairs.map(([from, to]) => ({ from, to, allowed: isAllowed(from, to) })))(
    "$from → $to allowed=$allowed",
    ({ from, to, allowed }) => {
      expect(canTransition(from, to)).toBe(allowed);
      // Every status write asks the same table: a move it refuses is a bug, named by both ends.
      const move = () => moveRunQuery(db, `run_${"a".repeat(26)}`, [from], to, 0);
      if (allowed) {
        expect(move).not.toThrow();
      } else {
        expect(move).toThrow(`moveRun: ${from} → ${to} is not a run transition`);
      }
    },
  );
});

describe("statusAfterPlan", () => {
  it.each([
    { operation: "apply", isSpeculative: false, hasChanges: true, want: "planned" },
    { operation: "destroy", isSpeculative: false, hasChanges: true, want: "planned" },
    { operation: "apply", isSpeculative: false, hasChanges: false, want: "planned_and_finished" },
    { operation: "apply", isSpeculative: true, hasChanges: true, want: "planned_and_finished" },
    { operation: "plan", isSpeculative: false, hasChanges: true, want: "planned_and_finished" },
  ] as const)("$operation speculative=$isSpeculative changes=$hasChanges → $want", (row) => {
    expect(statusAfterPlan(row, { hasChanges: row.hasChanges })).toBe(row.want);
  });
});

describe("cancel and force-cancel", () => {
  it.each([
    { status: "pending", requested: null, want: "now" },
    { status: "plan_queued", requested: null, want: "now" },
    { status: "confirmed", requested: null, want: "now" },
    { status: "apply_queued", requested: null, want: "now" },
    { status: "planning", requested: null, want: "signal_agent" },
    { status: "applying", requested: null, want: "signal_agent" },
    { status: "applying", requested: 1, want: "refused" },
    { status: "planned", requested: null, want: "refused" },
    { status: "applied", requested: null, want: "refused" },
  ] as const)("cancel in $status (requested $requested) → $want", ({ status, requested, want }) => {
    expect(planCancel(status, requested).kind).toBe(want);
  });

  it("allows force-cancel only 10 s after a cancel", () => {
    expect(canForceCancel("applying", null, 0)).toEqual({ ok: false, reason: "not_canceling" });
    expect(canForceCancel("applying", 1000, 1000 + FORCE_CANCEL_AFTER_MS - 1)).toEqual({
      ok: false,
      reason: "too_soon",
    });
    expect(canForceCancel("applying", 1000, 1000 + FORCE_CANCEL_AFTER_MS)).toEqual({
      ok: true,
      value: true,
    });
    expect(canForceCancel("canceled", 1000, 1e9)).toEqual({ ok: false, reason: "terminal" });
  });
});

describe("jobs", () => {
  it("orders apply before plan before speculative plan", () => {
    expect(priorityClass("apply", false)).toBe(0);
    expect(priorityClass("plan", false)).toBe(1);
    expect(priorityClass("plan", true)).toBe(2);
  });

  it("parses job ids", () => {
    const run = `run_${"b".repeat(26)}`;
    expect(parseJobId(`${run}:plan`)).toEqual({ runId: run, phase: "plan" });
    expect(parseJobId(`${run}:destroy`)).toBeNull();
    expect(parseJobId("x:plan")).toBeNull();
  });
});

describe("one home for each run rule", () => {
  it.each([
    [{ operation: "plan", isSpeculative: false }, true],
    [{ operation: "apply", isSpeculative: true }, true],
    [{ operation: "apply", isSpeculative: false }, false],
    [{ operation: "destroy" }, false],
  ] as const)("isSpeculativeRun(%j) = %s", (run, speculative) => {
    expect(isSpeculativeRun(run)).toBe(speculative);
  });

  it.each([
    ["planning", "plan", false],
    ["planned", "plan", true],
    ["apply_queued", "plan", true],
    ["applying", "apply", false],
    ["errored", "apply", true],
    ["pending", "plan", false],
  ] as const)("isPhaseOver(%s, %s) = %s", (status, phase, over) => {
    expect(isPhaseOver(status, phase)).toBe(over);
  });

  it("counts the queue limit one way: at the limit is over it", () => {
    expect(queueLimit({ MAX_QUEUED_RUNS_PER_ORG: "3" })).toBe(3);
    expect(queueLimit({ MAX_QUEUED_RUNS_PER_ORG: "nonsense" })).toBe(500);
    expect(isOverQueueLimit(2, 3)).toBe(false);
    expect(isOverQueueLimit(3, 3)).toBe(true);
  });

  it("reads the phase timeout from one setting per phase, with the defaults", () => {
    expect(phaseTimeoutMs({}, "plan")).toBe(DEFAULT_PHASE_TIMEOUT_MS.plan);
    expect(phaseTimeoutMs({ APPLY_TIMEOUT_MS: "60000" }, "apply")).toBe(60_000);
    expect(phaseTimeoutMs({ PLAN_TIMEOUT_MS: "0" }, "plan")).toBe(DEFAULT_PHASE_TIMEOUT_MS.plan);
  });

  it("says why a plan cannot be applied any more", () => {
    const planned = { plannedExecutionMode: "agent", plannedPoolId: "pool_a" };
    expect(
      planningContextChanged(planned, { executionMode: "agent", poolId: "pool_a" }),
    ).toBeNull();
    expect(planningContextChanged(planned, { executionMode: "local", poolId: "pool_a" })).toMatch(
      /execution mode changed from agent to local/,
    );
    expect(planningContextChanged(planned, { executionMode: "agent", poolId: null })).toMatch(
      /agent pool changed from pool_a to none/,
    );
  });

  it("words every refused action the same for the API and the dashboard", () => {
    const run = { id: "run_x", status: "planned" as const };
    expect(actionFailureMessage("invalid_status", run, "cancel")).toBe(
      "run run_x is planned; it cannot be canceled",
    );
    expect(actionFailureMessage("too_soon", run, "force-cancel")).toMatch(/10 s after cancel/);
  });
});

describe("moveForEnding", () => {
  const apply = { operation: "apply", isSpeculative: false } as const;
  const speculative = { operation: "plan", isSpeculative: true } as const;
  const ended = { forced: false, reason: null, exitCode: null, planSummary: null };
  const changes = { adds: 1, changes: 0, destroys: 0, imports: 0, hasChanges: true };
  it.each([
    [
      "a plan with changes",
      apply,
      { ...ended, phase: "plan", outcome: "succeeded", planSummary: changes },
      ["planning"],
      "planned",
    ],
    [
      "a plan without changes",
      apply,
      { ...ended, phase: "plan", outcome: "succeeded" },
      ["planning"],
      "planned_and_finished",
    ],
    [
      "a speculative plan with changes",
      speculative,
      { ...ended, phase: "plan", outcome: "succeeded", planSummary: changes },
      ["planning"],
      "planned_and_finished",
    ],
    [
      "an apply",
      apply,
      { ...ended, phase: "apply", outcome: "succeeded" },
      ["applying"],
      "applied",
    ],
    [
      "a canceled plan",
      apply,
      { ...ended, phase: "plan", outcome: "canceled" },
      ["plan_queued", "planning"],
      "canceled",
    ],
    [
      "a force-canceled apply",
      apply,
      { ...ended, phase: "apply", outcome: "canceled", forced: true },
      ["apply_queued", "applying"],
      "force_canceled",
    ],
    [
      "a failed plan",
      apply,
      { ...ended, phase: "plan", outcome: "failed", exitCode: 1 },
      ["plan_queued", "planning"],
      "errored",
    ],
    [
      "an errored apply",
      apply,
      { ...ended, phase: "apply", outcome: "errored", reason: "agent lost" },
      ["apply_queued", "applying"],
      "errored",
    ],
  ] as const)("%s", (_name, run, ending, from, to) => {
    const move = moveForEnding(run, ending);
    expect(move.from).toEqual(from);
    expect(move.to).toBe(to);
    for (const status of move.from) {
      expect(canTransition(status, move.to)).toBe(true);
    }
  });

  it("words a failure with its exit code, and catches up a success whose start was lost", () => {
    const failed = moveForEnding(
      { operation: "apply", isSpeculative: false },
      {
        phase: "plan",
        outcome: "failed",
        forced: false,
        reason: null,
        exitCode: 2,
        planSummary: null,
      },
    );
    expect(failed.statusReason).toBe("plan failed with exit code 2");
    const done = moveForEnding(
      { operation: "apply", isSpeculative: false },
      {
        phase: "apply",
        outcome: "succeeded",
        forced: false,
        reason: null,
        exitCode: 0,
        planSummary: null,
      },
    );
    expect(done.catchUp).toEqual({ from: "apply_queued", to: "applying" });
  });
});
