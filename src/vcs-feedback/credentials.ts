/**
 * The coordinator's VCS credentials of a hook: a token or a GitHub App key stored only sealed under
 * `ENCRYPTION_KEY`, bound to the hook's row so a ciphertext moved to another hook won't open.
 */
import { ok } from "@outpost/common";
import { and, eq, isNull } from "drizzle-orm";
import { vcsHooks } from "../db/schema.ts";
import type { Deps } from "../deps.ts";
import { loadKeyring, open, seal, sealedKeyId } from "../lib/encryption.ts";
import { type Outcome, refuse } from "../lib/reason.ts";
import { importAppKey, toPkcs8Pem } from "./github-app.ts";

const aad = (hookId: string) => `vcs_hooks:${hookId}:token`;

/** `token` sealed for the hook, or `unavailable` when `ENCRYPTION_KEY` is not usable. */
export async function sealHookToken(
  env: Env,
  hookId: string,
  token: string,
): Promise<Outcome<string, "unavailable">> {
  const keyring = await loadKeyring(env.ENCRYPTION_KEY);
  if (!keyring.ok) {
    return refuse("unavailable", "ENCRYPTION_KEY is not usable; a VCS token cannot be stored");
  }
  return ok((await seal(keyring.value, token, aad(hookId))).sealed);
}

/** The hook's token in clear, or null (none stored, or it no longer opens). */
export async function openHookToken(
  env: Env,
  hook: { id: string; tokenCiphertext: string | null },
): Promise<string | null> {
  if (hook.tokenCiphertext === null) {
    return null;
  }
  const keyring = await loadKeyring(env.ENCRYPTION_KEY);
  if (!keyring.ok) {
    return null;
  }
  const opened = await open(keyring.value, hook.tokenCiphertext, aad(hook.id));
  return opened.ok ? opened.value : null;
}

const appKeyAad = (hookId: string) => `vcs_hooks:${hookId}:app_key`;

/** The GitHub App private key (PKCS#8 PEM) sealed for the hook, like its token. */
export async function sealHookAppKey(
  env: Env,
  hookId: string,
  pkcs8Pem: string,
): Promise<Outcome<string, "unavailable">> {
  const keyring = await loadKeyring(env.ENCRYPTION_KEY);
  if (!keyring.ok) {
    return refuse("unavailable", "ENCRYPTION_KEY is not usable; a GitHub App key cannot be stored");
  }
  return ok((await seal(keyring.value, pkcs8Pem, appKeyAad(hookId))).sealed);
}

/** The hook's GitHub App id and private key in clear, or null (none, or it no longer opens). */
export async function openHookApp(
  env: Env,
  hook: { id: string; appId: number | null; appKeyCiphertext: string | null },
): Promise<{ id: string; appId: number; pkcs8Pem: string } | null> {
  if (hook.appId === null || hook.appKeyCiphertext === null) {
    return null;
  }
  const keyring = await loadKeyring(env.ENCRYPTION_KEY);
  if (!keyring.ok) {
    return null;
  }
  const opened = await open(keyring.value, hook.appKeyCiphertext, appKeyAad(hook.id));
  return opened.ok ? { id: hook.id, appId: hook.appId, pkcs8Pem: opened.value } : null;
}

/** A GitHub App as a hook update gives it: the app's id and its private key (PEM). */
export type AppInput = { appId: number; privateKey: string };

/** The hook columns holding its coordinator credentials. */
export type SealedCredentials = {
  tokenCiphertext?: string | null;
  appId?: number | null;
  appKeyCiphertext?: string | null;
};

/**
 * The columns to write for a change of the hook's credentials: a hook holds a token or a GitHub
 * App, so setting one removes the other (`null` removes it). The app's key must be an RSA
 * private key (PKCS#1 or PKCS#8 PEM) that imports; it is stored as PKCS#8, sealed. Refused:
 * both at once, an app on a GitLab hook, a key that is not one.
 */
export async function sealedCredentials(
  env: Env,
  hook: { id: string; provider: "github" | "gitlab" },
  input: { token?: string | null | undefined; app?: AppInput | null | undefined },
): Promise<Outcome<SealedCredentials, "invalid" | "unavailable">> {
  const { token, app } = input;
  if (typeof token === "string" && app) {
    return refuse("invalid", "give either token or app, not both: a hook holds one credential");
  }
  if (app) {
    if (hook.provider !== "github") {
      return refuse("invalid", "app (a GitHub App) is only for GitHub hooks");
    }
    const pem = toPkcs8Pem(app.privateKey);
    if (pem === null || (await importAppKey(pem)) === null) {
      return refuse(
        "invalid",
        "app.privateKey is not an RSA private key in PEM form (PKCS#1 or PKCS#8)",
      );
    }
    const sealed = await sealHookAppKey(env, hook.id, pem);
    return sealed.ok
      ? ok({ appId: app.appId, appKeyCiphertext: sealed.value, tokenCiphertext: null })
      : sealed;
  }
  if (typeof token === "string") {
    const sealed = await sealHookToken(env, hook.id, token);
    return sealed.ok
      ? ok({ tokenCiphertext: sealed.value, appId: null, appKeyCiphertext: null })
      : sealed;
  }
  return ok({
    ...(token === null ? { tokenCiphertext: null } : {}),
    ...(app === null ? { appId: null, appKeyCiphertext: null } : {}),
  });
}

/**
 * Key rotation for the coordinator credentials of the org's hooks (token, GitHub App key):
 * re-seals with the primary key those of up to `limit` hooks sealed with another key.
 * `remaining` counts the org's hooks still holding one under another key afterwards (including
 * any that do not open). A change of the credential meanwhile wins (compare-and-set on what was
 * read). Cached installation tokens are not re-sealed: one that no longer opens is minted anew.
 */
export async function reencryptHookCredentials(
  deps: Deps,
  orgId: string,
  limit: number,
): Promise<Outcome<{ reencrypted: number; remaining: number }, "unavailable">> {
  const keyring = await loadKeyring(deps.env.ENCRYPTION_KEY);
  if (!keyring.ok) {
    return refuse(
      "unavailable",
      "ENCRYPTION_KEY is not usable; VCS credentials cannot be re-sealed",
    );
  }
  const ring = keyring.value;
  const stale = (sealed: string | null) =>
    sealed !== null && sealedKeyId(sealed) !== ring.primaryId;
  const staleHooks = async () =>
    (await deps.db.select().from(vcsHooks).where(eq(vcsHooks.orgId, orgId))).filter(
      (h) => stale(h.tokenCiphertext) || stale(h.appKeyCiphertext),
    );
  const reseal = async (sealed: string | null, aadText: string) => {
    if (sealed === null) {
      return null;
    }
    const opened = await open(ring, sealed, aadText);
    return opened.ok ? (await seal(ring, opened.value, aadText)).sealed : undefined;
  };
  let reencrypted = 0;
  for (const hook of (await staleHooks()).slice(0, limit)) {
    const token = await reseal(hook.tokenCiphertext, aad(hook.id));
    const appKey = await reseal(hook.appKeyCiphertext, appKeyAad(hook.id));
    if (token === undefined || appKey === undefined) {
      continue;
    }
    const done = await deps.db
      .update(vcsHooks)
      .set({ tokenCiphertext: token, appKeyCiphertext: appKey })
      .where(
        and(
          eq(vcsHooks.id, hook.id),
          sameOrNull(vcsHooks.tokenCiphertext, hook.tokenCiphertext),
          sameOrNull(vcsHooks.appKeyCiphertext, hook.appKeyCiphertext),
        ),
      )
      .returning({ id: vcsHooks.id });
    reencrypted += done.length;
  }
  return ok({ reencrypted, remaining: (await staleHooks()).length });
}

function sameOrNull(
  column: typeof vcsHooks.tokenCiphertext | typeof vcsHooks.appKeyCiphertext,
  value: string | null,
) {
  return value === null ? isNull(column) : eq(column, value);
}

/** Whether the coordinator holds a credential of its own for the hook (a token or a GitHub App). */
export function hasCoordinatorCredential(hook: {
  tokenCiphertext: string | null;
  appKeyCiphertext: string | null;
}): boolean {
  return hook.tokenCiphertext !== null || hook.appKeyCiphertext !== null;
}
