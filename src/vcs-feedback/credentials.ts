/**
 * The coordinator's VCS credentials of a hook: a token stored only sealed under
 * `ENCRYPTION_KEY`, bound to the hook's row so a ciphertext moved to another hook won't open.
 */
import { ok } from "@outpost/common";
import { loadKeyring, open, seal } from "../lib/encryption.ts";
import { type Outcome, refuse } from "../lib/reason.ts";

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
