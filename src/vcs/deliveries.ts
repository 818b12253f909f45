/**
 * A hook's delivery list as the API shows it: what each delivery did (runs queued, plans
 * canceled, workspaces skipped) and, for each run it queued, what VCS feedback posted for it or
 * why not, so a hook whose statuses never arrive shows the reason next to the delivery.
 */
import type { Database } from "../db/client.ts";
import { presentFeedback } from "../vcs-feedback/present.ts";
import { feedbackOfRuns } from "../vcs-feedback/queries.ts";
import type { DeliveryOutcome } from "./model.ts";
import { recentDeliveries } from "./queries.ts";

function parseOutcome(text: string | null): Record<string, unknown> | null {
  if (text === null) {
    return null;
  }
  try {
    return JSON.parse(text) as Record<string, unknown>;
  } catch {
    return { status: "unreadable" };
  }
}

/** The run ids an outcome names as queued (an unreadable one names none). */
function queuedRuns(outcome: Record<string, unknown> | null): string[] {
  const runs = (outcome as Partial<DeliveryOutcome> | null)?.runs;
  return Array.isArray(runs)
    ? runs.flatMap((r) => (typeof r?.runId === "string" ? [r.runId] : []))
    : [];
}

/** The hook's `limit` most recent deliveries, newest first, each with its runs' feedback. */
export async function listDeliveries(db: Database, hookId: string, limit: number) {
  const rows = await recentDeliveries(db, hookId, limit);
  const parsed = rows.map((row) => ({ row, outcome: parseOutcome(row.outcome) }));
  const feedback = await feedbackOfRuns(
    db,
    parsed.flatMap((p) => queuedRuns(p.outcome)),
  );
  return parsed.map(({ row, outcome }) => ({
    id: row.id,
    deliveryId: row.deliveryId,
    event: row.event,
    receivedAt: new Date(row.receivedAt).toISOString(),
    outcome,
    feedback: queuedRuns(outcome).flatMap((runId) =>
      presentFeedback(feedback.get(runId) ?? []).map((f) => ({ runId, ...f })),
    ),
  }));
}
