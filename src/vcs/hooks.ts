/**
 * VCS hooks: one webhook endpoint per repository (or per org), each with its own secret. The
 * secret is returned once (create, rotate) and stored only sealed under `ENCRYPTION_KEY`; a
 * rotation keeps the previous secret valid until a deadline so the VCS side can be updated
 * without dropping deliveries.
 */

import { newId, ok } from "@outpost/common";
import { and, eq } from "drizzle-orm";
import { auditQuery } from "../audit/service.ts";
import type { AuditActor } from "../authz/actor.ts";
import type { Database } from "../db/client.ts";
import { vcsDeliveries, vcsHooks } from "../db/schema.ts";
import type { Deps } from "../deps.ts";
import { randomBase64Url } from "../lib/crypto.ts";
import { type Keyring, loadKeyring, open, seal, sealedKeyId } from "../lib/encryption.ts";
import { type Outcome, refuse } from "../lib/reason.ts";
import { type AppInput, sealedCredentials } from "../vcs-feedback/credentials.ts";
import { forgetAppTokensQuery } from "../vcs-feedback/github-app.ts";
import { apiUrlProblem } from "../vcs-feedback/model.ts";

export type HookRow = typeof vcsHooks.$inferSelect;
export type Provider = HookRow["provider"];

/** Longest grace period a rotation may keep the previous secret valid for. */
export const MAX_ROTATION_GRACE_SECONDS = 7 * 24 * 3600;
export const DEFAULT_ROTATION_GRACE_SECONDS = 24 * 3600;

/** Both secrets of a hook are bound to its row, so a ciphertext moved elsewhere won't open. */
const aad = (hookId: string) => `vcs_hooks:${hookId}:secret`;

/** The keyring, or `unavailable` naming the misconfiguration (never a 500). */
async function hookKeyring(env: Env): Promise<Outcome<Keyring, "unavailable">> {
  const keyring = await loadKeyring(env.ENCRYPTION_KEY);
  if (!keyring.ok) {
    return refuse(
      "unavailable",
      `ENCRYPTION_KEY is ${keyring.reason === "missing" ? "not set" : `unusable (${keyring.reason})`}; webhook secrets cannot be sealed or checked`,
    );
  }
  return ok(keyring.value);
}

function hookNotFound(id: string) {
  return refuse("not_found", `VCS hook ${id} not found`);
}

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/** The public shape of a hook: its webhook URL, never its secrets. */
export function presentHook(row: HookRow, origin: string, now: number) {
  const graceActive = row.previousSecretExpiresAt !== null && row.previousSecretExpiresAt > now;
  return {
    id: row.id,
    provider: row.provider,
    repoUrl: row.repoUrl,
    description: row.description,
    feedback: row.feedback,
    apiUrl: row.apiUrl,
    hasToken: row.tokenCiphertext !== null,
    appId: row.appKeyCiphertext === null ? null : row.appId,
    url: `${origin}/webhooks/${row.provider}/${row.id}`,
    previousSecretExpiresAt: graceActive ? iso(row.previousSecretExpiresAt) : null,
    createdAt: iso(row.createdAt) ?? "",
    updatedAt: iso(row.updatedAt) ?? "",
  };
}

/** A refusal naming what is wrong with a hook's `apiUrl`, or null when it is fine or unset. */
function apiUrlRefusal(env: Env, apiUrl: string | null | undefined) {
  const problem =
    apiUrl === null || apiUrl === undefined
      ? null
      : apiUrlProblem(apiUrl, env.VCS_ALLOW_LOOPBACK === "true");
  return problem === null ? null : refuse("invalid", `apiUrl ${problem}`);
}

/** A fresh webhook secret: 32 random bytes, base64url. */
function newSecret(): string {
  return `whsec_${randomBase64Url(32)}`;
}

/** Creates a hook; the returned secret is the only copy in clear that will ever exist. */
export async function createHook(
  deps: Deps,
  input: {
    orgId: string;
    provider: Provider;
    repoUrl: string | null;
    description: string;
    feedback?: HookRow["feedback"];
    apiUrl?: string | null;
    token?: string | undefined;
    app?: AppInput | undefined;
    actor: AuditActor;
  },
): Promise<Outcome<{ row: HookRow; secret: string }, "unavailable" | "invalid">> {
  const { db, env } = deps;
  const badUrl = apiUrlRefusal(env, input.apiUrl);
  if (badUrl) {
    return badUrl;
  }
  const keyring = await hookKeyring(env);
  if (!keyring.ok) {
    return keyring;
  }
  const id = newId("vcsHook");
  const secret = newSecret();
  const credentials = await sealedCredentials(
    env,
    { id, provider: input.provider },
    { token: input.token, app: input.app },
  );
  if (!credentials.ok) {
    return credentials;
  }
  const now = deps.now();
  const row: HookRow = {
    id,
    orgId: input.orgId,
    provider: input.provider,
    repoUrl: input.repoUrl,
    description: input.description,
    secretCiphertext: (await seal(keyring.value, secret, aad(id))).sealed,
    previousSecretCiphertext: null,
    previousSecretExpiresAt: null,
    feedback: input.feedback ?? "off",
    apiUrl: input.apiUrl ?? null,
    tokenCiphertext: credentials.value.tokenCiphertext ?? null,
    appId: credentials.value.appId ?? null,
    appKeyCiphertext: credentials.value.appKeyCiphertext ?? null,
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
      data: {
        provider: input.provider,
        repoUrl: input.repoUrl,
        feedback: row.feedback,
        apiUrl: row.apiUrl,
        hasToken: row.tokenCiphertext !== null,
        appId: row.appId,
      },
      now,
    }),
  ]);
  return ok({ row, secret });
}

export function listHooks(db: Database, orgId: string): Promise<HookRow[]> {
  return db.select().from(vcsHooks).where(eq(vcsHooks.orgId, orgId)).orderBy(vcsHooks.createdAt);
}

/** The org's hook, or `not_found` (another org's id is not found either). */
export async function getHook(
  db: Database,
  orgId: string,
  id: string,
): Promise<Outcome<HookRow, "not_found">> {
  const row = await db.query.vcsHooks.findFirst({
    where: and(eq(vcsHooks.orgId, orgId), eq(vcsHooks.id, id)),
  });
  return row ? ok(row) : hookNotFound(id);
}

/** A hook by id alone, for the public webhook endpoint (which has no org token). */
export function findHookById(db: Database, id: string): Promise<HookRow | undefined> {
  return db.query.vcsHooks.findFirst({ where: eq(vcsHooks.id, id) });
}

/** What a hook update may change; `token: null` removes the coordinator's VCS token. */
export type HookPatch = {
  description?: string | undefined;
  repoUrl?: string | null | undefined;
  feedback?: HookRow["feedback"] | undefined;
  apiUrl?: string | null | undefined;
  token?: string | null | undefined;
  /** A GitHub App instead of a token; `null` removes it. */
  app?: AppInput | null | undefined;
};

/** Changes description, repository scope and feedback settings (the token stored sealed). */
export async function updateHook(
  deps: Deps,
  hook: HookRow,
  patch: HookPatch,
  actor: AuditActor,
): Promise<Outcome<HookRow, "not_found" | "unavailable" | "invalid">> {
  const { db } = deps;
  const badUrl = apiUrlRefusal(deps.env, patch.apiUrl);
  if (badUrl) {
    return badUrl;
  }
  const now = deps.now();
  const { token, app, ...plain } = patch;
  const sealed = await sealedCredentials(deps.env, hook, { token, app });
  if (!sealed.ok) {
    return sealed;
  }
  const values = {
    ...Object.fromEntries(Object.entries(plain).filter(([, v]) => v !== undefined)),
    ...sealed.value,
    updatedAt: now,
  };
  const [updated] = await db.batch([
    db.update(vcsHooks).set(values).where(eq(vcsHooks.id, hook.id)).returning(),
    // Installation tokens minted under the hook as it was (another app, another apiUrl) must
    // not outlive that: the next post mints one under the hook as it now is.
    forgetAppTokensQuery(db, hook.id),
    auditQuery(db, {
      orgId: hook.orgId,
      actor,
      action: "vcs_hook.update",
      targetType: "vcs_hook",
      targetId: hook.id,
      data: {
        ...plain,
        ...(token === undefined ? {} : { hasToken: token !== null }),
        ...(app === undefined ? {} : { appId: app?.appId ?? null }),
      },
      now,
    }),
  ]);
  const row = updated[0];
  return row ? ok(row) : hookNotFound(hook.id);
}

/** Deletes the hook and its delivery records; its URL answers 404 from now on. */
export async function deleteHook(deps: Deps, hook: HookRow, actor: AuditActor): Promise<void> {
  const { db } = deps;
  await db.batch([
    db.delete(vcsDeliveries).where(eq(vcsDeliveries.hookId, hook.id)),
    forgetAppTokensQuery(db, hook.id),
    db.delete(vcsHooks).where(eq(vcsHooks.id, hook.id)),
    auditQuery(db, {
      orgId: hook.orgId,
      actor,
      action: "vcs_hook.delete",
      targetType: "vcs_hook",
      targetId: hook.id,
      now: deps.now(),
    }),
  ]);
}

/**
 * Replaces the secret; the old one stays valid for `graceSeconds` (0: revoked at once). A
 * second rotation within a grace period ends the first one's grace: only one previous secret
 * is ever kept.
 */
export async function rotateHookSecret(
  deps: Deps,
  hook: HookRow,
  graceSeconds: number,
  actor: AuditActor,
): Promise<Outcome<{ row: HookRow; secret: string }, "unavailable" | "not_found">> {
  const { db, env } = deps;
  const keyring = await hookKeyring(env);
  if (!keyring.ok) {
    return keyring;
  }
  const secret = newSecret();
  const now = deps.now();
  const [updated] = await db.batch([
    db
      .update(vcsHooks)
      .set({
        secretCiphertext: (await seal(keyring.value, secret, aad(hook.id))).sealed,
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
  return row ? ok({ row, secret }) : hookNotFound(hook.id);
}

/**
 * The secrets a delivery may be signed with right now: the current one, then the previous one
 * while its grace period lasts. A secret that no longer opens (key removed from the keyring) is
 * left out rather than failing the delivery with a 500.
 */
export async function acceptedSecrets(
  deps: Deps,
  hook: HookRow,
): Promise<Outcome<string[], "unavailable">> {
  const now = deps.now();
  const keyring = await hookKeyring(deps.env);
  if (!keyring.ok) {
    return keyring;
  }
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
    const opened = await open(keyring.value, s, aad(hook.id));
    if (opened.ok) {
      secrets.push(opened.value);
    }
  }
  return ok(secrets);
}

/** Whether a sealed secret was sealed with a key other than the ring's primary one. */
function isSealedWithOtherKey(sealed: string | null, keyring: Keyring): boolean {
  return sealed !== null && sealedKeyId(sealed) !== keyring.primaryId;
}

/** `sealed` opened and sealed again with the primary key; null when it does not open. */
async function resealed(keyring: Keyring, sealed: string, hookId: string): Promise<string | null> {
  const opened = await open(keyring, sealed, aad(hookId));
  return opened.ok ? (await seal(keyring, opened.value, aad(hookId))).sealed : null;
}

/**
 * Key rotation for webhook secrets: re-seals with the primary key the secrets (current and
 * previous) of up to `limit` hooks of the org sealed with an older key. `remaining` counts the
 * org's hooks still holding a secret under another key afterwards (including any that do not
 * open): run until it is 0, then drop the old key. A rotation of the hook's secret meanwhile
 * wins (compare-and-set on the secret as read).
 */
export async function reencryptHookSecrets(
  deps: Deps,
  orgId: string,
  limit: number,
): Promise<Outcome<{ reencrypted: number; remaining: number }, "unavailable">> {
  const keyring = await hookKeyring(deps.env);
  if (!keyring.ok) {
    return keyring;
  }
  const ring = keyring.value;
  const isStale = (hook: HookRow) =>
    isSealedWithOtherKey(hook.secretCiphertext, ring) ||
    isSealedWithOtherKey(hook.previousSecretCiphertext, ring);
  let reencrypted = 0;
  for (const hook of (await listHooks(deps.db, orgId)).filter(isStale).slice(0, limit)) {
    const current = await resealed(ring, hook.secretCiphertext, hook.id);
    const previous =
      hook.previousSecretCiphertext === null
        ? null
        : await resealed(ring, hook.previousSecretCiphertext, hook.id);
    if (current === null || (hook.previousSecretCiphertext !== null && previous === null)) {
      continue;
    }
    const done = await deps.db
      .update(vcsHooks)
      .set({ secretCiphertext: current, previousSecretCiphertext: previous })
      .where(and(eq(vcsHooks.id, hook.id), eq(vcsHooks.secretCiphertext, hook.secretCiphertext)))
      .returning({ id: vcsHooks.id });
    reencrypted += done.length;
  }
  const remaining = (await listHooks(deps.db, orgId)).filter(isStale).length;
  return ok({ reencrypted, remaining });
}
