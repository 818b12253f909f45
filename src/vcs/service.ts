/**
 * Acting on a verified delivery: record it once (unique per hook by delivery id and by the
 * SHA-256 of the raw body, so a captured body replayed under a new delivery id is a duplicate),
 * then, outside the request (`waitUntil`), create a VCS configuration version and a run on every
 * workspace the event reaches, cancel superseded pull request plans, and write what happened
 * back on the delivery row so an admin can see why a push did or did not run. A push never runs
 * a commit twice on a workspace.
 */

import { newId } from "@outpost/common";
import { and, eq, inArray, isNotNull, isNull, lt, ne, sql } from "drizzle-orm";
import { vcsActor } from "../authz/actor.ts";
import { configurationVersions, runs, vcsDeliveries, workspaces } from "../db/schema.ts";
import type { Deps } from "../runs/deps.ts";
import { ACTIVE_STATUSES } from "../runs/model.ts";
import { cancelRun, createRun } from "../runs/service.ts";
import type { WorkspaceRow } from "../workspaces/queries.ts";
import type { HookRow, Provider } from "./hooks.ts";
import { decideTriggers, summaryLine, type VcsEvent } from "./model.ts";

/** Run sources that mean "queued by a webhook". */
const VCS_SOURCES = ["github", "gitlab"] as const;

/** After this long without an outcome, a delivery's processing is presumed lost. */
export const STALE_DELIVERY_MS = 10 * 60_000;

/** What a delivery did, per workspace; stored as JSON on the delivery row. */
export type DeliveryOutcome = {
  status: "processed" | "failed";
  runs: { workspaceId: string; runId: string }[];
  canceled: { workspaceId: string; runId: string }[];
  skipped: { workspaceId: string; reason: string }[];
  error?: string;
};

/**
 * Records the delivery; `isNew` is false when this hook already recorded the same delivery id
 * (a redelivery) or the same body (a replay: `replayOf` names the first delivery), in which case
 * nothing else may happen.
 */
export async function recordDelivery(
  deps: Deps,
  hook: HookRow,
  delivery: { deliveryId: string; event: string; bodySha256: string },
): Promise<{ isNew: boolean; id: string; replayOf?: string }> {
  const { deliveryId, event, bodySha256 } = delivery;
  const id = newId("delivery");
  const now = Date.now();
  const inserted = await deps.db
    .insert(vcsDeliveries)
    .values({
      id,
      orgId: hook.orgId,
      hookId: hook.id,
      deliveryId,
      bodySha256,
      event,
      receivedAt: now,
    })
    .onConflictDoNothing()
    .returning({ id: vcsDeliveries.id });
  if (inserted.length > 0) {
    return { isNew: true, id };
  }
  // A delivery still without an outcome long after it arrived was cut off mid-way (the isolate
  // went away): a redelivery takes it over, compare-and-set so only one redelivery does.
  const takenOver = await deps.db
    .update(vcsDeliveries)
    .set({ receivedAt: now })
    .where(
      and(
        eq(vcsDeliveries.hookId, hook.id),
        eq(vcsDeliveries.deliveryId, deliveryId),
        isNull(vcsDeliveries.outcome),
        lt(vcsDeliveries.receivedAt, now - STALE_DELIVERY_MS),
      ),
    )
    .returning({ id: vcsDeliveries.id });
  const stale = takenOver[0];
  if (stale) {
    return { isNew: true, id: stale.id };
  }
  const first = await deps.db.query.vcsDeliveries.findFirst({
    where: and(eq(vcsDeliveries.hookId, hook.id), eq(vcsDeliveries.bodySha256, bodySha256)),
    columns: { deliveryId: true },
  });
  return first && first.deliveryId !== deliveryId
    ? { isNew: false, id, replayOf: first.deliveryId }
    : { isNew: false, id };
}

/** Workspaces of the org with a repository configured; matching is done by the pure model. */
function vcsWorkspaces(deps: Deps, orgId: string): Promise<WorkspaceRow[]> {
  return deps.db
    .select()
    .from(workspaces)
    .where(and(eq(workspaces.orgId, orgId), isNotNull(workspaces.vcsRepoUrl)));
}

/** Active speculative plans of the same pull request on the workspace at another commit. */
function supersededPlans(deps: Deps, workspaceId: string, source: Provider, event: VcsEvent) {
  if (event.kind !== "pull_request") {
    return Promise.resolve([]);
  }
  return deps.db
    .select()
    .from(runs)
    .where(
      and(
        eq(runs.workspaceId, workspaceId),
        eq(runs.source, source),
        eq(runs.pullRequestNumber, event.number),
        eq(runs.isSpeculative, true),
        inArray(runs.status, [...ACTIVE_STATUSES]),
        event.action === "close" ? undefined : ne(runs.commitSha, event.commitSha),
      ),
    );
}

async function queueFor(
  deps: Deps,
  hook: HookRow,
  ws: WorkspaceRow,
  event: VcsEvent,
  isFork: boolean,
): Promise<{ runId: string } | { reason: string }> {
  const repoUrl = ws.vcsRepoUrl ?? "";
  const branch = event.kind === "push" ? event.branch : event.headBranch;
  const cvId = newId("configurationVersion");
  await deps.db.insert(configurationVersions).values({
    id: cvId,
    orgId: ws.orgId,
    workspaceId: ws.id,
    source: "vcs",
    repoUrl,
    commitSha: event.commitSha,
    branch,
    isSpeculative: event.kind === "pull_request",
    isFork,
    createdBy: hook.id,
    createdAt: Date.now(),
  });
  const message =
    event.kind === "push"
      ? summaryLine(event.commitMessage) || `push to ${event.branch}`
      : summaryLine(`#${event.number}: ${event.title ?? event.headBranch}`);
  const created = await createRun(deps, ws, {
    operation: event.kind === "push" ? "apply" : "plan",
    isSpeculative: event.kind === "pull_request",
    message,
    configurationVersionId: cvId,
    source: hook.provider,
    actor: vcsActor(
      hook.id,
      `${hook.provider} ${event.kind === "push" ? "push" : "pull request"}${event.author ? ` by ${event.author}` : ""}`,
    ),
    vcs: {
      commitSha: event.commitSha,
      branch,
      pullRequestNumber: event.kind === "pull_request" ? event.number : null,
      author: event.author,
      commitMessage: event.kind === "push" ? event.commitMessage : event.title,
      isFork,
    },
  });
  if (!created.ok) {
    return { reason: `run not queued: ${created.reason}` };
  }
  return { runId: created.value.run.id };
}

/**
 * The run that makes this event a repeat on the workspace, or null. A push: any run a webhook
 * queued for the same commit on the workspace, whatever its status, so a commit is never
 * applied twice through VCS. A pull request: an active speculative plan of this hook for the
 * commit (a finished one does not count, so a reopened pull request is planned again).
 */
async function alreadyQueued(deps: Deps, hook: HookRow, wsId: string, event: VcsEvent) {
  const isPush = event.kind === "push";
  const existing = await deps.db
    .select({ id: runs.id })
    .from(runs)
    .where(
      and(
        eq(runs.workspaceId, wsId),
        eq(runs.commitSha, event.commitSha),
        eq(runs.isSpeculative, !isPush),
        isPush
          ? inArray(runs.source, [...VCS_SOURCES])
          : and(
              sql`json_extract(${runs.createdBy}, '$.id') = ${hook.id}`,
              inArray(runs.status, [...ACTIVE_STATUSES]),
            ),
      ),
    )
    .limit(1);
  return existing[0]?.id ?? null;
}

/** Why an existing run makes the event a repeat on a workspace, in words. */
function repeatReason(event: VcsEvent, runId: string): string {
  return event.kind === "push"
    ? `commit ${event.commitSha} already has run ${runId} on this workspace; a push never runs a commit twice`
    : `run ${runId} already plans commit ${event.commitSha}`;
}

/**
 * For a push whose every workspace to run on already has a webhook-queued run for its commit (a
 * replayed or repeated push): why it queues nothing, and per workspace the run it already has.
 * Null when the push has something to do.
 */
export async function pushAlreadyRun(
  deps: Deps,
  hook: HookRow,
  event: VcsEvent,
): Promise<{ reason: string; skipped: DeliveryOutcome["skipped"] } | null> {
  if (event.kind !== "push") {
    return null;
  }
  const toRun = decideTriggers(event, await vcsWorkspaces(deps, hook.orgId)).filter(
    (d) => d.action === "run",
  );
  const skipped: DeliveryOutcome["skipped"] = [];
  for (const decision of toRun) {
    const runId = await alreadyQueued(deps, hook, decision.workspaceId, event);
    if (runId === null) {
      return null;
    }
    skipped.push({ workspaceId: decision.workspaceId, reason: repeatReason(event, runId) });
  }
  if (skipped.length === 0) {
    return null;
  }
  return {
    reason: `commit ${event.commitSha} already has a run on every workspace it triggers; a push never runs a commit twice`,
    skipped,
  };
}

/** Writes what a delivery did on its row. */
export async function recordOutcome(
  deps: Deps,
  deliveryRowId: string,
  outcome: DeliveryOutcome,
): Promise<void> {
  await deps.db
    .update(vcsDeliveries)
    .set({
      outcome: JSON.stringify(outcome),
      // A failed delivery frees its id and body so a manual redelivery tries again instead of
      // being answered "duplicate" forever; the row stays, renamed, as the record of the failure.
      ...(outcome.status === "failed"
        ? { deliveryId: `failed:${deliveryRowId}`, bodySha256: null }
        : {}),
    })
    .where(eq(vcsDeliveries.id, deliveryRowId));
}

/**
 * Applies the event to every matching workspace. Never throws: a failure is recorded on the
 * delivery row (and the row's dedupe is released so a manual redelivery retries, skipping
 * workspaces that already got their run).
 */
export async function processDelivery(
  deps: Deps,
  hook: HookRow,
  deliveryRowId: string,
  event: VcsEvent,
): Promise<DeliveryOutcome> {
  const outcome: DeliveryOutcome = { status: "processed", runs: [], canceled: [], skipped: [] };
  try {
    const candidates = await vcsWorkspaces(deps, hook.orgId);
    const byId = new Map(candidates.map((w) => [w.id, w]));
    for (const decision of decideTriggers(event, candidates)) {
      const ws = byId.get(decision.workspaceId);
      if (!ws) {
        continue;
      }
      if (decision.action === "skip") {
        outcome.skipped.push({ workspaceId: ws.id, reason: decision.reason });
        continue;
      }
      for (const old of await supersededPlans(deps, ws.id, hook.provider, event)) {
        const canceled = await cancelRun(
          deps,
          old,
          vcsActor(
            hook.id,
            `${hook.provider} pull request #${event.kind === "pull_request" ? event.number : ""} superseded`,
          ),
        );
        if (canceled.ok) {
          outcome.canceled.push({ workspaceId: ws.id, runId: old.id });
        }
      }
      if (decision.action === "cancel_only") {
        continue;
      }
      const existing = await alreadyQueued(deps, hook, ws.id, event);
      if (existing) {
        if (event.kind === "push") {
          outcome.skipped.push({ workspaceId: ws.id, reason: repeatReason(event, existing) });
        } else {
          outcome.runs.push({ workspaceId: ws.id, runId: existing });
        }
        continue;
      }
      const queued = await queueFor(deps, hook, ws, event, decision.isFork);
      if ("runId" in queued) {
        outcome.runs.push({ workspaceId: ws.id, runId: queued.runId });
      } else {
        outcome.skipped.push({ workspaceId: ws.id, reason: queued.reason });
      }
    }
  } catch (error) {
    outcome.status = "failed";
    outcome.error = error instanceof Error ? error.message : String(error);
    console.error(
      JSON.stringify({ level: "error", msg: "vcs delivery failed", hookId: hook.id, error }),
    );
  }
  await recordOutcome(deps, deliveryRowId, outcome);
  return outcome;
}
