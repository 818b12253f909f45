/**
 * VCS hooks: one webhook endpoint per repository (or per org), each with its own secret. The
 * secret is returned once (create, rotate) and stored only sealed under `ENCRYPTION_KEY`; a
 * rotation keeps the previous secret valid until a deadline so the VCS side can be updated
 * without dropping deliveries.
 */

import { newId } from "@outpost/common";
import { and, desc, eq } from "drizzle-orm";
import { auditQuery } from "../audit/service.ts";
import type { AuditActor } from "../authz/actor.ts";
import type { Database } from "../db/client.ts";
import { vcsDeliveries, vcsHooks } from "../db/schema.ts";
import { ApiError } from "../errors.ts";
import { randomBase64Url } from "../lib/crypto.ts";
import { type Keyring, loadKeyring, open, seal } from "../lib/encryption.ts";

export type HookRow = typeof vcsHooks.$inferSelect;
export type Provider = HookRow["provider"];

/** Longest grace period a rotation may keep the previous secret valid for. */
export const MAX_ROTATION_GRACE_SECONDS = 7 * 24 * 3600;
export const DEFAULT_ROTATION_GRACE_SECONDS = 24 * 3600;

/** Both secrets of a hook are bound to its row, so a ciphertext moved elsewhere won't open. */
const aad = (hookId: string) => `vcs_hooks:${hookId}:secret`;

/** The keyring, or 503 UNAVAILABLE naming the misconfiguration (never a 500). */
export async function hookKeyring(env: Env): Promise<Keyring> {
  const keyring = await loadKeyring(env.ENCRYPTION_KEY);
  if (!keyring.ok) {
    throw new ApiError(
      "UNAVAILABLE",
      `ENCRYPTION_KEY is ${keyring.reason === "missing" ? "not set" : `unusable (${keyring.reason})`}; webhook secrets cannot be sealed or checked`,
    );
  }
  return keyring.value;
}

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/** The public shape of a hook: its webhook URL, never its secrets. */
export function presentHook(row: HookRow, origin: string, now = Date.now()) {
  const graceActive = row.previousSecretExpiresAt !== null && row.previousSecretExpiresAt > now;
  return {
    id: row.id,
    provider: row.provider,
    repoUrl: row.repoUrl,
    description: row.description,
    url: `${origin}/webhooks/${row.provider}/${row.id}`,
    previousSecretExpiresAt: graceActive ? iso(row.previousSecretExpiresAt) : null,
    createdAt: iso(row.createdAt) ?? "",
    updatedAt: iso(row.updatedAt) ?? "",
  };
}

/** A fresh webhook secret: 32 random bytes, base64url. */
function newSecret(): string {
  return `whsec_${randomBase64Url(32)}`;
}

/** Creates a hook; the returned secret is the only copy in clear that will ever exist. */
export async function createHook(
  db: Database,
  env: Env,
  input: {
    orgId: string;
    provider: Provider;
    repoUrl: string | null;
    description: string;
    actor: AuditActor;
  },
): Promise<{ row: HookRow; secret: string }> {
  const keyring = await hookKeyring(env);
  const id = newId("vcsHook");
  const secret = newSecret();
  const now = Date.now();
  const row: HookRow = {
    id,
    orgId: input.orgId,
    provider: input.provider,
    repoUrl: input.repoUrl,
    description: input.description,
    secretCiphertext: (await seal(keyring, secret, aad(id))).sealed,
    previousSecretCiphertext: null,
    previousSecretExpiresAt: null,
    createdAt: now,
    updatedAt: now,
  };
  await db.batch([
    db.insert(vcsHooks).values(row),
    auditQuery(db, {
      orgId: input.orgId,
      actor: input.actor,
      action: "vcs_hook.create",
      targetType: "vcs_hook",
      targetId: id,
      data: { provider: input.provider, repoUrl: input.repoUrl },
      now,
    }),
  ]);
  return { row, secret };
}

export function listHooks(db: Database, orgId: string): Promise<HookRow[]> {
  return db.select().from(vcsHooks).where(eq(vcsHooks.orgId, orgId)).orderBy(vcsHooks.createdAt);
}

/** The org's hook, or 404 (another org's id is not found either). */
export async function getHook(db: Database, orgId: string, id: string): Promise<HookRow> {
  const row = await db.query.vcsHooks.findFirst({
    where: and(eq(vcsHooks.orgId, orgId), eq(vcsHooks.id, id)),
  });
  if (!row) {
    throw new ApiError("NOT_FOUND", `VCS hook ${id} not found`);
  }
  return row;
}

/** A hook by id alone, for the public webhook endpoint (which has no org token). */
export function findHookById(db: Database, id: string): Promise<HookRow | undefined> {
  return db.query.vcsHooks.findFirst({ where: eq(vcsHooks.id, id) });
}

/** Changes description and/or repository scope. */
export async function updateHook(
  db: Database,
  hook: HookRow,
  patch: { description?: string | undefined; repoUrl?: string | null | undefined },
  actor: AuditActor,
): Promise<HookRow> {
  const now = Date.now();
  const values = {
    ...(patch.description === undefined ? {} : { description: patch.description }),
    ...(patch.repoUrl === undefined ? {} : { repoUrl: patch.repoUrl }),
    updatedAt: now,
  };
  const [updated] = await db.batch([
    db.update(vcsHooks).set(values).where(eq(vcsHooks.id, hook.id)).returning(),
    auditQuery(db, {
      orgId: hook.orgId,
      actor,
      action: "vcs_hook.update",
      targetType: "vcs_hook",
      targetId: hook.id,
      data: patch,
      now,
    }),
  ]);
  const row = updated[0];
  if (!row) {
    throw new ApiError("NOT_FOUND", `VCS hook ${hook.id} not found`);
  }
  return row;
}

/** Deletes the hook and its delivery records; its URL answers 404 from now on. */
export async function deleteHook(db: Database, hook: HookRow, actor: AuditActor): Promise<void> {
  await db.batch([
    db.delete(vcsDeliveries).where(eq(vcsDeliveries.hookId, hook.id)),
    db.delete(vcsHooks).where(eq(vcsHooks.id, hook.id)),
    auditQuery(db, {
      orgId: hook.orgId,
      actor,
      action: "vcs_hook.delete",
      targetType: "vcs_hook",
      targetId: hook.id,
      now: Date.now(),
    }),
  ]);
}

/**
 * Replaces the secret; the old one stays valid for `graceSeconds` (0: revoked at once). A
 * second rotation within a grace period ends the first one's grace: only one previous secret
 * is ever kept.
 */
export async function rotateHookSecret(
  db: Database,
  env: Env,
  hook: HookRow,
  graceSeconds: number,
  actor: AuditActor,
): Promise<{ row: HookRow; secret: string }> {
  const keyring = await hookKeyring(env);
  const secret = newSecret();
  const now = Date.now();
  const [updated] = await db.batch([
    db
      .update(vcsHooks)
      .set({
        secretCiphertext: (await seal(keyring, secret, aad(hook.id))).sealed,
        previousSecretCiphertext: graceSeconds > 0 ? hook.secretCiphertext : null,
        previousSecretExpiresAt: graceSeconds > 0 ? now + graceSeconds * 1000 : null,
        updatedAt: now,
      })
      .where(eq(vcsHooks.id, hook.id))
      .returning(),
    auditQuery(db, {
      orgId: hook.orgId,
      actor,
      action: "vcs_hook.rotate_secret",
      targetType: "vcs_hook",
      targetId: hook.id,
      data: { graceSeconds },
      now,
    }),
  ]);
  const row = updated[0];
  if (!row) {
    throw new ApiError("NOT_FOUND", `VCS hook ${hook.id} not found`);
  }
  return { row, secret };
}

/**
 * The secrets a delivery may be signed with right now: the current one, then the previous one
 * while its grace period lasts. A secret that no longer opens (key removed from the keyring) is
 * left out rather than failing the delivery with a 500.
 */
export async function acceptedSecrets(env: Env, hook: HookRow, now: number): Promise<string[]> {
  const keyring = await hookKeyring(env);
  const sealed = [hook.secretCiphertext];
  if (
    hook.previousSecretCiphertext &&
    hook.previousSecretExpiresAt !== null &&
    hook.previousSecretExpiresAt > now
  ) {
    sealed.push(hook.previousSecretCiphertext);
  }
  const secrets: string[] = [];
  for (const s of sealed) {
    const opened = await open(keyring, s, aad(hook.id));
    if (opened.ok) {
      secrets.push(opened.value);
    }
  }
  return secrets;
}

export type DeliveryRow = typeof vcsDeliveries.$inferSelect;

/** The hook's most recent deliveries, newest first. */
export function recentDeliveries(db: Database, hookId: string, limit: number) {
  return db
    .select()
    .from(vcsDeliveries)
    .where(eq(vcsDeliveries.hookId, hookId))
    .orderBy(desc(vcsDeliveries.receivedAt))
    .limit(limit);
}
