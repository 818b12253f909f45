/**
 * Notification configurations: create (the signing secret is returned once), list, read,
 * change, delete, rotate the secret, verify (one test delivery, answered with how it went), and
 * the last deliveries. Destinations are checked by `model.ts`; secrets are stored only sealed.
 */
import { base32, newId, ok } from "@outpost/common";
import { eq } from "drizzle-orm";
import { auditQuery } from "../audit/service.ts";
import { type AuditActor, plainActor } from "../authz/actor.ts";
import { notificationConfigurations, organizations } from "../db/schema.ts";
import type { Deps } from "../deps.ts";
import type { DestinationType, NotificationTrigger } from "../events/model.ts";
import { loadKeyring, seal } from "../lib/encryption.ts";
import { invalidInput, type Outcome, refuse } from "../lib/reason.ts";
import type { RunRow } from "../runs/queries.ts";
import type { WorkspaceRow } from "../workspaces/queries.ts";
import { attemptDelivery, secretAad } from "./deliver.ts";
import { destinationProblem, generateSecret } from "./model.ts";
import { type NotificationFacts, payloadFor } from "./payloads.ts";
import {
  countNotifications,
  type DeliveryRow,
  getNotification,
  insertDeliveries,
  listDeliveries,
  type NotificationRow,
} from "./queries.ts";

/** Configurations one workspace may have. */
export const MAX_NOTIFICATIONS_PER_WORKSPACE = 20;

export type NotificationInput = {
  name: string;
  destinationType: DestinationType;
  url: string;
  enabled: boolean;
  triggers: NotificationTrigger[];
};

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/** A configuration as the API answers it: never its secret. */
export function presentNotification(row: NotificationRow) {
  return {
    id: row.id,
    workspaceId: row.workspaceId,
    name: row.name,
    destinationType: row.destinationType,
    url: row.url,
    enabled: row.enabled,
    triggers: row.triggers,
    createdBy: row.createdBy ?? null,
    createdAt: iso(row.createdAt),
    updatedAt: iso(row.updatedAt),
  };
}

/** A delivery as the API answers it: its body is not repeated. */
export function presentDelivery(row: DeliveryRow) {
  return {
    id: row.id,
    trigger: row.trigger,
    eventId: row.eventId,
    status: row.status,
    responseStatus: row.responseStatus,
    attempts: row.attempts,
    error: row.error,
    createdAt: iso(row.createdAt),
    lastAttemptAt: iso(row.lastAttemptAt),
    nextAttemptAt: row.status === "pending" ? iso(row.nextAttemptAt) : null,
    completedAt: iso(row.completedAt),
  };
}

function checkUrl(env: Env, url: string): Outcome<string, "invalid"> {
  const problem = destinationProblem(url, env.NOTIFICATIONS_ALLOW_LOOPBACK === "true");
  return problem ? invalidInput("body.url", problem, `url ${problem}`) : ok(url);
}

async function sealSecret(env: Env, id: string, secret: string) {
  const keyring = await loadKeyring(env.ENCRYPTION_KEY);
  if (!keyring.ok) {
    return refuse(
      "unavailable",
      `ENCRYPTION_KEY is unusable (${keyring.reason}); notification secrets cannot be sealed`,
    );
  }
  return ok((await seal(keyring.value, secret, secretAad(id))).sealed);
}

/** Creates a configuration; the answer carries its `whsec_` secret, shown this once. */
export async function createNotification(
  deps: Deps,
  workspace: WorkspaceRow,
  input: NotificationInput,
  actor: AuditActor,
): Promise<
  Outcome<{ row: NotificationRow; secret: string }, "invalid" | "conflict" | "unavailable">
> {
  const url = checkUrl(deps.env, input.url);
  if (!url.ok) {
    return url;
  }
  if ((await countNotifications(deps.db, workspace.id)) >= MAX_NOTIFICATIONS_PER_WORKSPACE) {
    return refuse(
      "conflict",
      `workspace ${workspace.name} already has ${MAX_NOTIFICATIONS_PER_WORKSPACE} notification configurations`,
    );
  }
  const id = newId("notification");
  const secret = generateSecret();
  const sealed = await sealSecret(deps.env, id, secret);
  if (!sealed.ok) {
    return sealed;
  }
  const now = deps.now();
  const [[row]] = await deps.db.batch([
    deps.db
      .insert(notificationConfigurations)
      .values({
        id,
        orgId: workspace.orgId,
        workspaceId: workspace.id,
        ...input,
        secretCiphertext: sealed.value,
        createdBy: plainActor(actor),
        createdAt: now,
        updatedAt: now,
      })
      .returning(),
    auditQuery(deps.db, {
      orgId: workspace.orgId,
      actor,
      action: "notification.create",
      targetType: "notification",
      targetId: id,
      data: { workspaceId: workspace.id, destinationType: input.destinationType },
      now,
    }),
  ]);
  if (!row) {
    throw new Error(`notification ${id} vanished after insert`);
  }
  return ok({ row, secret });
}

/** Changes what `patch` names; the URL is checked again. */
export async function updateNotification(
  deps: Deps,
  row: NotificationRow,
  patch: Partial<NotificationInput>,
  actor: AuditActor,
): Promise<Outcome<NotificationRow, "invalid">> {
  if (patch.url !== undefined) {
    const url = checkUrl(deps.env, patch.url);
    if (!url.ok) {
      return url;
    }
  }
  const now = deps.now();
  const [[updated]] = await deps.db.batch([
    deps.db
      .update(notificationConfigurations)
      .set({ ...patch, updatedAt: now })
      .where(eq(notificationConfigurations.id, row.id))
      .returning(),
    auditQuery(deps.db, {
      orgId: row.orgId,
      actor,
      action: "notification.update",
      targetType: "notification",
      targetId: row.id,
      data: { workspaceId: row.workspaceId, fields: Object.keys(patch) },
      now,
    }),
  ]);
  return ok(updated ?? row);
}

/** Deletes a configuration and its deliveries. */
export async function deleteNotification(deps: Deps, row: NotificationRow, actor: AuditActor) {
  const now = deps.now();
  await deps.db.batch([
    deps.db.delete(notificationConfigurations).where(eq(notificationConfigurations.id, row.id)),
    auditQuery(deps.db, {
      orgId: row.orgId,
      actor,
      action: "notification.delete",
      targetType: "notification",
      targetId: row.id,
      data: { workspaceId: row.workspaceId },
      now,
    }),
  ]);
}

/** A new secret replaces the old at once; the answer carries it, shown this once. */
export async function rotateNotificationSecret(
  deps: Deps,
  row: NotificationRow,
  actor: AuditActor,
): Promise<Outcome<string, "unavailable">> {
  const secret = generateSecret();
  const sealed = await sealSecret(deps.env, row.id, secret);
  if (!sealed.ok) {
    return sealed;
  }
  const now = deps.now();
  await deps.db.batch([
    deps.db
      .update(notificationConfigurations)
      .set({ secretCiphertext: sealed.value, updatedAt: now })
      .where(eq(notificationConfigurations.id, row.id)),
    auditQuery(deps.db, {
      orgId: row.orgId,
      actor,
      action: "notification.rotate_secret",
      targetType: "notification",
      targetId: row.id,
      data: { workspaceId: row.workspaceId },
      now,
    }),
  ]);
  return ok(secret);
}

/** The link to a run in the dashboard, when the deployment knows its public URL. */
function runUrl(env: Env, runId: string): string | null {
  return env.PUBLIC_URL ? `${env.PUBLIC_URL}/ui/runs/${runId}` : null;
}

async function orgName(deps: Deps, orgId: string): Promise<string> {
  const org = await deps.db
    .select({ name: organizations.name })
    .from(organizations)
    .where(eq(organizations.id, orgId))
    .get();
  return org?.name ?? orgId;
}

/** What a notification about `run` (or a verification, without one) reports. */
export async function notificationFacts(
  deps: Deps,
  config: NotificationRow,
  workspace: Pick<WorkspaceRow, "id" | "name" | "orgId">,
  about: {
    trigger: NotificationFacts["trigger"];
    eventId: string | null;
    occurredAt: number;
    run: RunRow | null;
    details: Record<string, unknown> | null;
  },
): Promise<NotificationFacts> {
  const { run } = about;
  return {
    trigger: about.trigger,
    eventId: about.eventId,
    occurredAt: about.occurredAt,
    notification: { id: config.id, name: config.name },
    organization: { id: workspace.orgId, name: await orgName(deps, workspace.orgId) },
    workspace: { id: workspace.id, name: workspace.name },
    run: run
      ? {
          id: run.id,
          status: run.status,
          operation: run.operation,
          isSpeculative: run.isSpeculative,
          message: run.message,
          source: run.source,
          planSummary: run.planSummary ?? null,
          createdBy: run.createdBy ?? null,
          url: runUrl(deps.env, run.id),
        }
      : null,
    details: about.details,
  };
}

/**
 * The id of the delivery of event `eventId` to configuration `notificationId`: derived, so a
 * redelivered event finds the delivery it already made instead of making another.
 */
export async function deliveryId(eventId: string, notificationId: string): Promise<string> {
  const digest = await crypto.subtle.digest(
    "SHA-256",
    new TextEncoder().encode(`${eventId}|${notificationId}`),
  );
  return `ndl_${base32(new Uint8Array(digest).slice(0, 16)).slice(0, 26)}`;
}

/** Sends one test delivery now, without retries, and answers how it went. */
export async function verifyNotification(
  deps: Deps,
  config: NotificationRow,
  workspace: WorkspaceRow,
): Promise<DeliveryRow> {
  const now = deps.now();
  const facts = await notificationFacts(deps, config, workspace, {
    trigger: "verification",
    eventId: null,
    occurredAt: now,
    run: null,
    details: null,
  });
  const [delivery] = await insertDeliveries(deps.db, [
    {
      id: newId("notificationDelivery"),
      orgId: config.orgId,
      notificationId: config.id,
      eventId: null,
      trigger: "verification",
      status: "pending",
      body: payloadFor(config.destinationType, facts),
      createdAt: now,
      nextAttemptAt: null,
    },
  ]);
  if (!delivery) {
    throw new Error("verification delivery vanished after insert");
  }
  return (await attemptDelivery(deps, delivery, config, { retry: false })) ?? delivery;
}

/** The last `limit` deliveries of a configuration, newest first. */
export function recentDeliveries(deps: Deps, config: NotificationRow, limit: number) {
  return listDeliveries(deps.db, config.id, limit);
}

export async function findNotification(deps: Deps, orgId: string, id: string) {
  const row = await getNotification(deps.db, orgId, id);
  return row ? ok(row) : refuse("not_found", `notification ${id} not found`);
}
