/**
 * Runs, plans and applies in Terraform Cloud's words (go-tfe `run.go`, `plan.go`, `apply.go`):
 * an Outpost run is the `runs` resource (its statuses already carry Terraform Cloud's names), and
 * its two phases are the `plans` and `applies` resources, whose ids are the run's with another
 * prefix, so nothing else is stored. Only the mapping lives here; the run rules stay in
 * `src/runs/model.ts`.
 */
import { z } from "@hono/zod-openapi";
import { decideWorkspace, type Grants } from "../authz/model.ts";
import {
  canForceCancel,
  FORCE_CANCEL_AFTER_MS,
  isSpeculativeRun,
  isTerminal,
  planCancel,
  type RunStatus,
} from "../runs/model.ts";
import type { RunRow } from "../runs/queries.ts";
import type { Resource } from "./jsonapi.ts";

const RUN_SUFFIX = /^run_([a-z2-7]{26})$/;

/** The phase id of a run: `plan_…` or `apply_…` with the run id's random part. */
export function phaseId(phase: "plan" | "apply", runId: string): string {
  return `${phase}_${RUN_SUFFIX.exec(runId)?.[1] ?? ""}`;
}

/** The run id of a phase id (`PlanId`/`ApplyId` already checked its shape). */
export function runIdOf(phaseIdValue: string): string {
  return `run_${phaseIdValue.slice(phaseIdValue.indexOf("_") + 1)}`;
}

/** A plan id and an apply id as path parameters. */
export const PlanId = z.string().regex(/^plan_[a-z2-7]{26}$/, "must be a plan_ id");
export const ApplyId = z.string().regex(/^apply_[a-z2-7]{26}$/, "must be an apply_ id");

const iso = (ms: number | undefined) => (ms === undefined ? undefined : new Date(ms).toISOString());

/** Whether the run's plan finished: its summary is recorded when the plan job succeeds. */
function planFinished(run: RunRow): boolean {
  return run.planSummary !== null;
}

/** Terraform Cloud's plan status for the run's plan phase. */
export function planStatus(run: RunRow): string {
  if (planFinished(run)) {
    return "finished";
  }
  switch (run.status) {
    case "pending":
      return "pending";
    case "plan_queued":
      return "queued";
    case "planning":
      return "running";
    case "canceled":
    case "force_canceled":
      return "canceled";
    default:
      return "errored";
  }
}

/** Terraform Cloud's apply status: `unreachable` for a run that ended without applying. */
export function applyStatus(run: RunRow): string {
  const applyStarted = run.statusTimestamps?.apply_queued !== undefined;
  switch (run.status) {
    case "apply_queued":
      return "queued";
    case "applying":
      return "running";
    case "applied":
      return "finished";
    case "errored":
      return applyStarted ? "errored" : "unreachable";
    case "canceled":
    case "force_canceled":
      return applyStarted ? "canceled" : "unreachable";
    default:
      return isTerminal(run.status) ? "unreachable" : "pending";
  }
}

/** `<status>-at` timestamps of the run, as Terraform Cloud names them. */
function runTimestamps(run: RunRow): Record<string, string> {
  return Object.fromEntries(
    Object.entries(run.statusTimestamps ?? {}).map(([status, ms]) => [
      `${status.replaceAll("_", "-")}-at`,
      new Date(ms).toISOString(),
    ]),
  );
}

function phaseTimestamps(run: RunRow, steps: [RunStatus, string][]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [status, name] of steps) {
    const at = iso(run.statusTimestamps?.[status]);
    if (at !== undefined) {
      out[`${name}-at`] = at;
    }
  }
  return out;
}

/** What the run's state and the caller's grants allow now (`actions`, `permissions`). */
function runActions(run: RunRow, grants: Grants, now: number) {
  const allowed = (action: "run.confirm" | "run.discard" | "run.cancel") =>
    decideWorkspace(grants, action) === "allow";
  const cancelable = planCancel(run.status, run.cancelRequestedAt).kind !== "refused";
  const forceCancelable = canForceCancel(run.status, run.cancelRequestedAt, now).ok;
  return {
    actions: {
      "is-confirmable": run.status === "planned" && allowed("run.confirm"),
      "is-discardable": run.status === "planned" && allowed("run.discard"),
      "is-cancelable": cancelable && allowed("run.cancel"),
      "is-force-cancelable": forceCancelable && allowed("run.cancel"),
    },
    permissions: {
      "can-apply": allowed("run.confirm"),
      "can-discard": allowed("run.discard"),
      "can-cancel": allowed("run.cancel"),
      "can-force-cancel": allowed("run.cancel"),
      "can-force-execute": false,
    },
  };
}

/** The run as a `runs` resource, with what `grants` let its caller do to it at `now`. */
export function runResource(
  run: RunRow,
  context: { grants: Grants; now: number; engineVersion: string },
): Resource {
  const summary = run.planSummary;
  const { actions, permissions } = runActions(run, context.grants, context.now);
  const forceAt =
    run.cancelRequestedAt === null ? null : run.cancelRequestedAt + FORCE_CANCEL_AFTER_MS;
  return {
    id: run.id,
    type: "runs",
    attributes: {
      actions,
      permissions,
      "auto-apply": run.isAutoApply,
      "allow-empty-apply": run.allowEmptyApply,
      "created-at": new Date(run.createdAt).toISOString(),
      "canceled-at":
        iso(run.statusTimestamps?.canceled ?? run.statusTimestamps?.force_canceled) ?? null,
      "force-cancel-available-at": forceAt === null ? null : new Date(forceAt).toISOString(),
      "has-changes": summary?.hasChanges ?? false,
      "is-destroy": run.operation === "destroy",
      message: run.message,
      "plan-only": isSpeculativeRun(run),
      refresh: run.refresh,
      "refresh-only": run.operation === "refresh",
      "replace-addrs": run.replaceAddrs ?? [],
      "target-addrs": run.targetAddrs ?? [],
      "save-plan": false,
      source: "tfe-api",
      status: run.status,
      "status-timestamps": runTimestamps(run),
      "terraform-version": context.engineVersion,
      "trigger-reason": "manual",
      // The values are sealed on the run and never shown back: only the keys.
      variables: [],
      "position-in-queue": 0,
    },
    relationships: {
      workspace: { data: { id: run.workspaceId, type: "workspaces" } },
      "configuration-version": {
        data: run.configurationVersionId
          ? { id: run.configurationVersionId, type: "configuration-versions" }
          : null,
      },
      plan: { data: { id: phaseId("plan", run.id), type: "plans" } },
      apply: { data: { id: phaseId("apply", run.id), type: "applies" } },
      "cost-estimate": { data: null },
      "policy-checks": { data: [] },
      "task-stages": { data: [] },
      "run-events": { data: [] },
    },
    links: { self: `/api/v2/runs/${run.id}` },
  };
}

/** The run's plan as a `plans` resource; `logReadUrl` is its capability URL. */
export function planResource(run: RunRow, logReadUrl: string): Resource {
  const summary = run.planSummary;
  return {
    id: phaseId("plan", run.id),
    type: "plans",
    attributes: {
      "has-changes": summary?.hasChanges ?? false,
      "generated-configuration": false,
      "log-read-url": logReadUrl,
      "resource-additions": summary?.adds ?? 0,
      "resource-changes": summary?.changes ?? 0,
      "resource-destructions": summary?.destroys ?? 0,
      "resource-imports": summary?.imports ?? 0,
      status: planStatus(run),
      "status-timestamps": phaseTimestamps(run, [
        ["plan_queued", "queued"],
        ["planning", "started"],
        ["planned", "finished"],
        ["planned_and_finished", "finished"],
      ]),
    },
    relationships: { run: { data: { id: run.id, type: "runs" } } },
    links: {
      self: `/api/v2/plans/${phaseId("plan", run.id)}`,
      "json-output": `/api/v2/plans/${phaseId("plan", run.id)}/json-output`,
    },
  };
}

/**
 * The run's apply as an `applies` resource. Outpost counts changes when it plans, so the
 * resource counts of a finished apply are those of its plan (the plan it applied, exactly).
 */
export function applyResource(run: RunRow, logReadUrl: string): Resource {
  const summary = run.status === "applied" ? run.planSummary : null;
  return {
    id: phaseId("apply", run.id),
    type: "applies",
    attributes: {
      "log-read-url": logReadUrl,
      "resource-additions": summary?.adds ?? 0,
      "resource-changes": summary?.changes ?? 0,
      "resource-destructions": summary?.destroys ?? 0,
      "resource-imports": summary?.imports ?? 0,
      status: applyStatus(run),
      "status-timestamps": phaseTimestamps(run, [
        ["apply_queued", "queued"],
        ["applying", "started"],
        ["applied", "finished"],
      ]),
    },
    relationships: { run: { data: { id: run.id, type: "runs" } } },
    links: { self: `/api/v2/applies/${phaseId("apply", run.id)}` },
  };
}
