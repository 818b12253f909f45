import type { PlanSummary } from "@outpost/protocol";

type Change = {
  address?: unknown;
  mode?: unknown;
  change?: { actions?: unknown; importing?: unknown };
};

/** What the summary needs to know of the plan: whether it was a `-refresh-only` one. */
export type PlanKind = { refreshOnly: boolean };

/** At most this many drifted addresses are reported (the coordinator keeps as many). */
const MAX_DRIFTED = 1000;

/**
 * The addresses of `resource_drift`: objects that changed outside Terraform, as the refresh
 * found them. Terraform omits unchanged objects there; a `no-op` entry is skipped all the same.
 */
export function driftedAddresses(doc: { resource_drift?: unknown }): string[] {
  const drift = Array.isArray(doc.resource_drift) ? (doc.resource_drift as Change[]) : [];
  return drift
    .filter((d) => {
      const actions = Array.isArray(d.change?.actions) ? (d.change.actions as unknown[]) : [];
      return actions.some((a) => a !== "no-op");
    })
    .flatMap((d) => (typeof d.address === "string" ? [d.address.slice(0, 1000)] : []))
    .slice(0, MAX_DRIFTED);
}

/**
 * Counts a `terraform show -json` plan the way the CLI's "Plan: N to add…" line does: a
 * replacement (delete+create in either order) counts as one add and one destroy, `importing`
 * as an import. `sames` counts the managed resources left as they are (`no-op`), so the
 * coordinator can tell a plan that empties the state from one that only removes some resources.
 * `hasChanges` is also true for output-only changes, like `-detailed-exitcode`.
 * A `-refresh-only` plan proposes no actions: it has changes when the refresh found drift
 * (`-detailed-exitcode` answers 2 then too), and names the drifted addresses.
 * Throws if the document is not a JSON plan.
 */
export function summarizePlan(json: string, kind: PlanKind = { refreshOnly: false }): PlanSummary {
  const doc = JSON.parse(json) as {
    resource_changes?: unknown;
    output_changes?: unknown;
    resource_drift?: unknown;
  };
  if (typeof doc !== "object" || doc === null) {
    throw new Error("the JSON plan is not an object");
  }
  const summary: PlanSummary = {
    adds: 0,
    changes: 0,
    destroys: 0,
    imports: 0,
    sames: 0,
    hasChanges: false,
  };
  const resources = Array.isArray(doc.resource_changes) ? (doc.resource_changes as Change[]) : [];
  for (const rc of resources) {
    const actions = Array.isArray(rc.change?.actions) ? (rc.change.actions as string[]) : [];
    if (actions.includes("create")) {
      summary.adds += 1;
    }
    if (actions.includes("delete")) {
      summary.destroys += 1;
    }
    if (actions.includes("update")) {
      summary.changes += 1;
    }
    if (rc.mode !== "data" && actions.length === 1 && actions[0] === "no-op") {
      summary.sames = (summary.sames ?? 0) + 1;
    }
    if (rc.change?.importing !== undefined && rc.change.importing !== null) {
      summary.imports += 1;
    }
  }
  const outputs = doc.output_changes;
  const outputChanged =
    typeof outputs === "object" &&
    outputs !== null &&
    Object.values(outputs as Record<string, { actions?: unknown }>).some((o) => {
      const actions = o.actions;
      return Array.isArray(actions) && actions.some((a) => a !== "no-op");
    });
  summary.hasChanges =
    summary.adds + summary.changes + summary.destroys + summary.imports > 0 || outputChanged;
  if (kind.refreshOnly) {
    summary.driftedResources = driftedAddresses(doc);
    summary.hasChanges = summary.hasChanges || summary.driftedResources.length > 0;
  }
  return summary;
}
