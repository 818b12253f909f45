/**
 * The deferred half of a delivery (run in `waitUntil`, after the answer): with the decisions the
 * request made, a VCS configuration version and a run on each workspace to run on, superseded
 * pull request plans canceled, and the outcome written on the delivery row.
 */
import { vcsActor } from "../authz/actor.ts";
import { createVcsConfigurationVersion } from "../configuration-versions/service.ts";
import type { Deps } from "../deps.ts";
import { flushRunEvents } from "../events/outbox.ts";
import { activePullRequestPlans, vcsRunForCommit } from "../runs/queries.ts";
import { cancelRun, createRun } from "../runs/service.ts";
import type { WorkspaceRow } from "../workspaces/queries.ts";
import type { HookRow } from "./hooks.ts";
import {
  type DeliveryOutcome,
  repeatReason,
  summaryLine,
  type TriggerDecision,
  type VcsEvent,
} from "./model.ts";
import { writeOutcome } from "./queries.ts";

/** The event's decision for one workspace, with the workspace as it was read. */
export type Planned = { workspace: WorkspaceRow; decision: TriggerDecision };

/** The run a webhook already queued that makes the event a repeat on the workspace. */
export function alreadyQueued(deps: Deps, hook: HookRow, workspaceId: string, event: VcsEvent) {
  return vcsRunForCommit(deps.db, {
    workspaceId,
    commitSha: event.commitSha,
    isPush: event.kind === "push",
    hookId: hook.id,
  });
}

/** The event's configuration version and run on one workspace, or why none was queued. */
async function queueFor(
  deps: Deps,
  hook: HookRow,
  ws: WorkspaceRow,
  event: VcsEvent,
  isFork: boolean,
): Promise<{ runId: string } | { reason: string }> {
  const isPush = event.kind === "push";
  const branch = isPush ? event.branch : event.headBranch;
  const configuration = await createVcsConfigurationVersion(deps, {
    orgId: ws.orgId,
    workspaceId: ws.id,
    repoUrl: ws.vcsRepoUrl ?? "",
    commitSha: event.commitSha,
    branch,
    isSpeculative: !isPush,
    isFork,
    actor: hook.id,
  });
  const created = await createRun(deps, ws, {
    operation: isPush ? "apply" : "plan",
    isSpeculative: !isPush,
    message: isPush
      ? summaryLine(event.commitMessage) || `push to ${event.branch}`
      : summaryLine(`#${event.number}: ${event.title ?? event.headBranch}`),
    configurationVersionId: configuration.id,
    source: hook.provider,
    actor: vcsActor(
      hook.id,
      `${hook.provider} ${isPush ? "push" : "pull request"}${event.author ? ` by ${event.author}` : ""}`,
    ),
    vcs: {
      commitSha: event.commitSha,
      branch,
      pullRequestNumber: isPush ? null : event.number,
      author: event.author,
      commitMessage: isPush ? event.commitMessage : event.title,
      isFork,
    },
  });
  return created.ok
    ? { runId: created.value.run.id }
    : { reason: `run not queued: ${created.reason.message}` };
}

/** What the event does to one workspace, added to `outcome`. */
async function applyTo(
  deps: Deps,
  hook: HookRow,
  event: VcsEvent,
  { workspace: ws, decision }: Planned,
  outcome: DeliveryOutcome,
): Promise<void> {
  if (decision.action === "skip") {
    outcome.skipped.push({ workspaceId: ws.id, reason: decision.reason });
    return;
  }
  if (event.kind === "pull_request") {
    const superseded = await activePullRequestPlans(deps.db, {
      workspaceId: ws.id,
      source: hook.provider,
      number: event.number,
      otherThan: event.action === "close" ? null : event.commitSha,
    });
    const canceler = vcsActor(hook.id, `${hook.provider} pull request #${event.number} superseded`);
    for (const old of superseded) {
      if ((await cancelRun(deps, old, canceler)).ok) {
        outcome.canceled.push({ workspaceId: ws.id, runId: old.id });
      }
    }
  }
  if (decision.action === "cancel_only") {
    return;
  }
  const existing = await alreadyQueued(deps, hook, ws.id, event);
  if (existing !== undefined) {
    if (event.kind === "push") {
      outcome.skipped.push({ workspaceId: ws.id, reason: repeatReason(event, existing) });
    } else {
      outcome.runs.push({ workspaceId: ws.id, runId: existing });
    }
    return;
  }
  const queued = await queueFor(deps, hook, ws, event, decision.isFork);
  if ("runId" in queued) {
    outcome.runs.push({ workspaceId: ws.id, runId: queued.runId });
  } else {
    outcome.skipped.push({ workspaceId: ws.id, reason: queued.reason });
  }
}

/**
 * Applies the event to every workspace it was decided for, after the answer. Never throws: a
 * failure is recorded on the delivery row (and the row's dedupe is released so a manual
 * redelivery retries, skipping workspaces that already got their run).
 */
export async function processDelivery(
  deps: Deps,
  hook: HookRow,
  deliveryRowId: string,
  work: { event: VcsEvent; planned: readonly Planned[] },
): Promise<DeliveryOutcome> {
  const outcome: DeliveryOutcome = { status: "processed", runs: [], canceled: [], skipped: [] };
  try {
    for (const planned of work.planned) {
      await applyTo(deps, hook, work.event, planned, outcome);
    }
  } catch (error) {
    outcome.status = "failed";
    outcome.error = error instanceof Error ? error.message : String(error);
    console.error(
      JSON.stringify({ level: "error", msg: "vcs delivery failed", hookId: hook.id, error }),
    );
  }
  await writeOutcome(deps.db, deliveryRowId, outcome);
  // The runs were queued after the answer, so the request's own flush came too early for them;
  // a failure here is the cron's to make good.
  await flushRunEvents(deps).catch((error: unknown) => {
    console.error(JSON.stringify({ level: "error", msg: "run events not flushed", error }));
  });
  return outcome;
}
