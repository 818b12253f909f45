import { describe, expect, it } from "vitest";
import {
  canForceCancel,
  canTransition,
  FORCE_CANCEL_AFTER_MS,
  parseJobId,
  planCancel,
  priorityClass,
  RUN_STATUSES,
  type RunStatus,
  statusAfterPlan,
  transition,
} from "../../src/runs/model.ts";

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
      expect(transition(from, to)).toEqual(
        allowed ? { ok: true, value: to } : { ok: false, reason: "invalid_transition" },
      );
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
