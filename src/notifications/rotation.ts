/**
 * Key rotation for notification signing secrets: the same step as the VCS hooks' webhook secrets
 * (`src/orgs/reencrypt.ts` counts both as webhook secrets), so the old `ENCRYPTION_KEY` key can be
 * dropped once nothing remains sealed under it.
 */
import { ok } from "@outpost/common";
import { and, eq } from "drizzle-orm";
import { notificationConfigurations } from "../db/schema.ts";
import type { Deps } from "../deps.ts";
import { loadKeyring, open, seal, sealedKeyId } from "../lib/encryption.ts";
import { type Outcome, refuse } from "../lib/reason.ts";
import { secretAad } from "./deliver.ts";

/**
 * Re-seals with the primary key the secrets of up to `limit` of the org's configurations sealed
 * with another key. `remaining` counts those still under another key afterwards (including any
 * that do not open). A secret rotated meanwhile wins (compare-and-set on the secret as read).
 */
export async function reencryptNotificationSecrets(
  deps: Deps,
  orgId: string,
  limit: number,
): Promise<Outcome<{ reencrypted: number; remaining: number }, "unavailable">> {
  const keyring = await loadKeyring(deps.env.ENCRYPTION_KEY);
  if (!keyring.ok) {
    return refuse("unavailable", `ENCRYPTION_KEY is unusable (${keyring.reason})`);
  }
  const ring = keyring.value;
  const stale = async () =>
    (
      await deps.db
        .select({
          id: notificationConfigurations.id,
          secretCiphertext: notificationConfigurations.secretCiphertext,
        })
        .from(notificationConfigurations)
        .where(eq(notificationConfigurations.orgId, orgId))
    ).filter((row) => sealedKeyId(row.secretCiphertext) !== ring.primaryId);
  let reencrypted = 0;
  for (const row of (await stale()).slice(0, limit)) {
    const opened = await open(ring, row.secretCiphertext, secretAad(row.id));
    if (!opened.ok) {
      continue;
    }
    const sealed = (await seal(ring, opened.value, secretAad(row.id))).sealed;
    const done = await deps.db
      .update(notificationConfigurations)
      .set({ secretCiphertext: sealed })
      .where(
        and(
          eq(notificationConfigurations.id, row.id),
          eq(notificationConfigurations.secretCiphertext, row.secretCiphertext),
        ),
      )
      .returning({ id: notificationConfigurations.id });
    reencrypted += done.length;
  }
  return ok({ reencrypted, remaining: (await stale()).length });
}
