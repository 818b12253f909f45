/**
 * Acting on a verified delivery. In the request: record it once (unique per hook by delivery id
 * and by the SHA-256 of the raw body, so a captured body replayed under a new delivery id is a
 * duplicate), decide once what it does to each workspace of its repository, and stop there
 * when a push's commit already ran everywhere it triggers. Outside the request (`waitUntil`),
 * with those decisions (`process.ts`): a configuration version and a run per workspace to run on, superseded
 * pull request plans canceled, and what happened written back on the delivery row so an admin
 * can see why a push did or did not run. A push never runs a commit twice on a workspace.
 */
import { newId } from "@outpost/common";
import type { Deps } from "../deps.ts";
import { sha256Hex } from "../lib/crypto.ts";
import { listVcsWorkspaces } from "../workspaces/queries.ts";
import type { HookRow } from "./hooks.ts";
import {
  type DeliveryOutcome,
  decideTriggers,
  type ParsedDelivery,
  repeatReason,
  sameRepository,
  type VcsEvent,
} from "./model.ts";
import { alreadyQueued, type Planned, processDelivery } from "./process.ts";
import {
  firstDeliveryOfBody,
  insertDelivery,
  takeOverStaleDelivery,
  writeOutcome,
} from "./queries.ts";

/** After this long without an outcome, a delivery's processing is presumed lost. */
export const STALE_DELIVERY_MS = 10 * 60_000;

/**
 * What a verified delivery leads to: nothing to do (a ping, an ignored event, one already
 * received, whose `replayOf` names the first delivery of the same body), or accepted, with the
 * work to run after the answer.
 */
export type Receipt =
  | { kind: "ping" }
  | { kind: "ignored"; reason: string }
  | { kind: "duplicate"; replayOf: string | null }
  | { kind: "accepted"; process: () => Promise<DeliveryOutcome> };

/**
 * Takes a verified, parsed delivery of `hook`: records it, decides what it does once, and
 * answers what the route says, with the deferred work when there is some.
 */
export async function receiveDelivery(
  deps: Deps,
  hook: HookRow,
  received: { eventName: string; deliveryId: string; body: string },
  delivery: ParsedDelivery,
): Promise<Receipt> {
  if (delivery.kind !== "event") {
    return delivery.kind === "ping" ? { kind: "ping" } : delivery;
  }
  const event = delivery.event;
  if (hook.repoUrl && !sameRepository(hook.repoUrl, event.repoUrls)) {
    return { kind: "ignored", reason: `this hook serves ${hook.repoUrl} only` };
  }
  const recorded = await recordDelivery(deps, hook, {
    deliveryId: received.deliveryId,
    event: received.eventName,
    bodySha256: await sha256Hex(received.body),
  });
  if (!recorded.isNew) {
    return { kind: "duplicate", replayOf: recorded.replayOf };
  }
  const planned = await planDelivery(deps, hook, event);
  const repeat = await pushAlreadyRun(deps, hook, event, planned);
  if (repeat) {
    await writeOutcome(deps.db, recorded.id, {
      status: "processed",
      runs: [],
      canceled: [],
      skipped: repeat.skipped,
    });
    return { kind: "ignored", reason: repeat.reason };
  }
  return {
    kind: "accepted",
    process: () => processDelivery(deps, hook, recorded.id, { event, planned }),
  };
}

/**
 * Records the delivery; `isNew` is false when this hook already recorded the same delivery id
 * (a redelivery) or the same body (a replay: `replayOf` names the first delivery), in which case
 * nothing else may happen. A delivery still without an outcome long after it arrived was cut
 * off mid-way (the isolate went away): a redelivery takes it over, once.
 */
async function recordDelivery(
  deps: Deps,
  hook: HookRow,
  delivery: { deliveryId: string; event: string; bodySha256: string },
): Promise<{ isNew: true; id: string } | { isNew: false; replayOf: string | null }> {
  const { db } = deps;
  const now = deps.now();
  const id = newId("delivery");
  if (
    await insertDelivery(db, {
      id,
      orgId: hook.orgId,
      hookId: hook.id,
      receivedAt: now,
      ...delivery,
    })
  ) {
    return { isNew: true, id };
  }
  const stale = await takeOverStaleDelivery(db, {
    hookId: hook.id,
    deliveryId: delivery.deliveryId,
    staleBefore: now - STALE_DELIVERY_MS,
    now,
  });
  if (stale !== undefined) {
    return { isNew: true, id: stale };
  }
  const first = await firstDeliveryOfBody(db, hook.id, delivery.bodySha256);
  return {
    isNew: false,
    replayOf: first !== undefined && first !== delivery.deliveryId ? first : null,
  };
}

/** The event's decision for every workspace of the org its repository reaches. */
async function planDelivery(deps: Deps, hook: HookRow, event: VcsEvent): Promise<Planned[]> {
  const candidates = await listVcsWorkspaces(deps.db, hook.orgId);
  const byId = new Map(candidates.map((w) => [w.id, w]));
  return decideTriggers(event, candidates).flatMap((decision) => {
    const workspace = byId.get(decision.workspaceId);
    return workspace ? [{ workspace, decision }] : [];
  });
}

/**
 * For a push whose every workspace to run on already has a webhook-queued run for its commit (a
 * replayed or repeated push): why it queues nothing, and per workspace the run it already has.
 * Null when the push has something to do.
 */
async function pushAlreadyRun(
  deps: Deps,
  hook: HookRow,
  event: VcsEvent,
  planned: readonly Planned[],
): Promise<{ reason: string; skipped: DeliveryOutcome["skipped"] } | null> {
  if (event.kind !== "push") {
    return null;
  }
  const skipped: DeliveryOutcome["skipped"] = [];
  for (const { workspace } of planned.filter((p) => p.decision.action === "run")) {
    const runId = await alreadyQueued(deps, hook, workspace.id, event);
    if (runId === undefined) {
      return null;
    }
    skipped.push({ workspaceId: workspace.id, reason: repeatReason(event, runId) });
  }
  if (skipped.length === 0) {
    return null;
  }
  return {
    reason: `commit ${event.commitSha} already has a run on every workspace it triggers; a push never runs a commit twice`,
    skipped,
  };
}
