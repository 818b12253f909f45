/**
 * Reads the document `pulumi preview --json` (and `destroy`/`refresh --preview-only --json`)
 * prints: `{steps: [{op, urn, …}], diagnostics, changeSummary: {create: n, …}}`.
 */
import type { PlanSummary } from "@outpost/protocol";

type Step = { op?: unknown; urn?: unknown };
type Diagnostic = { severity?: unknown; message?: unknown };
type Preview = { steps?: Step[]; diagnostics?: Diagnostic[]; changeSummary?: unknown };

function count(summary: Record<string, unknown>, op: string): number {
  const value = summary[op];
  return typeof value === "number" && Number.isInteger(value) && value >= 0 ? value : 0;
}

function parse(json: string): Preview {
  const doc: unknown = JSON.parse(json);
  if (typeof doc !== "object" || doc === null) {
    throw new Error("the preview printed no JSON document");
  }
  return doc as Preview;
}

/**
 * The run's plan summary from the preview's `changeSummary`: creates as adds, updates as
 * changes, deletes as destroys, imports, replaces and sames as Pulumi counts them. Refresh
 * previews count `refresh` steps that change the state as changes, and name the URNs of the
 * resources whose steps are not `same` (what drifted) when `refresh` is set.
 */
export function summarizePreview(json: string, refresh = false): PlanSummary {
  const doc = parse(json);
  const summary =
    typeof doc.changeSummary === "object" && doc.changeSummary !== null
      ? (doc.changeSummary as Record<string, unknown>)
      : {};
  const adds = count(summary, "create");
  const changes = count(summary, "update");
  const destroys = count(summary, "delete");
  const imports = count(summary, "import");
  const replaces = count(summary, "replace");
  const sames = count(summary, "same");
  return {
    adds,
    changes,
    destroys,
    imports,
    replaces,
    sames,
    hasChanges: adds + changes + destroys + imports + replaces > 0,
    ...(refresh ? { driftedResources: driftedUrns(doc) } : {}),
  };
}

/** The URNs a refresh preview would change (at most 1,000): the drifted resources. */
function driftedUrns(doc: Preview): string[] {
  return (doc.steps ?? [])
    .filter((step) => typeof step.op === "string" && step.op !== "same" && step.op !== "read")
    .flatMap((step) => (typeof step.urn === "string" ? [step.urn.slice(0, 1000)] : []))
    .slice(0, 1000);
}

const SYMBOLS: Record<string, string> = {
  create: "+",
  update: "~",
  delete: "-",
  replace: "+-",
  import: "=",
  refresh: "~",
};

/**
 * The preview for people: a line per step that does something, the engine's diagnostics, and
 * the counts. The JSON itself never enters the log.
 */
export function describePreview(json: string): string[] {
  const doc = parse(json);
  const lines: string[] = [];
  for (const step of doc.steps ?? []) {
    const op = typeof step.op === "string" ? step.op : "";
    if (op === "same" || !(op in SYMBOLS)) {
      continue;
    }
    lines.push(`    ${SYMBOLS[op]} ${String(step.urn)} (${op})`);
  }
  for (const d of doc.diagnostics ?? []) {
    lines.push(`    ${String(d.severity ?? "info")}: ${String(d.message ?? "").trimEnd()}`);
  }
  const s = summarizePreview(json);
  lines.push(
    `Resources: ${s.adds} to create, ${s.changes} to update, ${s.destroys} to delete, ${s.replaces ?? 0} to replace, ${s.sames ?? 0} unchanged`,
  );
  return lines;
}
