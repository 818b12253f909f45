/**
 * The run triggers sink of the run events queue: when a source workspace's run is applied, each
 * target workspace gets a run (`source: "run-trigger"`, its message naming the source run) that
 * follows the target's own auto-apply setting. Idempotent: a source run queues at most one run on
 * each target (`runs.triggering_run_id`, unique per workspace), however often its event arrives.
 */
import type { RunEvent } from "../events/model.ts";
import type { RunEventSink } from "../events/sinks.ts";
import { createRun } from "../runs/service.ts";
import { getWorkspaceById } from "../workspaces/queries.ts";
import { triggeredRunMessage } from "./model.ts";
import { hasTriggeredRun, type RunTriggerRow, triggersFrom } from "./queries.ts";
import { runTriggerActor } from "./service.ts";

async function queueOn(
  deps: Parameters<RunEventSink["handle"]>[0],
  trigger: RunTriggerRow,
  event: RunEvent,
  sourceName: string,
): Promise<void> {
  if (await hasTriggeredRun(deps.db, trigger.workspaceId, event.runId)) {
    return;
  }
  const target = await getWorkspaceById(deps.db, trigger.workspaceId);
  if (!target) {
    return;
  }
  let created: Awaited<ReturnType<typeof createRun>>;
  try {
    created = await createRun(deps, target, {
      operation: "apply",
      message: triggeredRunMessage(event.runId, sourceName),
      source: "run-trigger",
      actor: runTriggerActor(trigger, sourceName),
      triggeringRunId: event.runId,
    });
  } catch (err) {
    // Another delivery of this event queued it first (the unique index refused the second).
    if (await hasTriggeredRun(deps.db, trigger.workspaceId, event.runId)) {
      return;
    }
    throw err;
  }
  if (created.ok) {
    return;
  }
  if (created.reason.kind === "over_limit") {
    // The organization's queue is full: the message is retried with backoff.
    throw new Error(created.reason.message);
  }
  // A target that cannot run (local execution, no pool, no configuration) is skipped, said once.
  console.warn(
    JSON.stringify({
      level: "warn",
      msg: "run trigger did not queue a run",
      triggerId: trigger.id,
      workspaceId: trigger.workspaceId,
      sourceRunId: event.runId,
      reason: created.reason.message,
    }),
  );
}

export const runTriggerSink: RunEventSink = {
  name: "run-triggers",
  async handle(deps, event) {
    if (event.type !== "run:completed" || event.status !== "applied") {
      return;
    }
    const [triggers, source] = await Promise.all([
      triggersFrom(deps.db, event.workspaceId),
      getWorkspaceById(deps.db, event.workspaceId),
    ]);
    const sourceName = source?.name ?? event.workspaceId;
    const results = await Promise.allSettled(
      triggers.map((trigger) => queueOn(deps, trigger, event, sourceName)),
    );
    const failed = results.find((r) => r.status === "rejected");
    if (failed) {
      throw failed.reason;
    }
  },
};
