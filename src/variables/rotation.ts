/**
 * Key rotation for sensitive variables, the workspaces' and the variable sets' alike: after a new
 * key is put first in `ENCRYPTION_KEY`, every value sealed with an older one is opened and sealed
 * again with the new one, so the old key can be dropped. A re-encryption is not a change of the
 * variable: `updated_at` stays, and a concurrent write of the same variable wins.
 */

import { ok } from "@outpost/common";
import type { Deps } from "../deps.ts";
import { open, seal } from "../lib/encryption.ts";
import type { Outcome } from "../lib/reason.ts";
import {
  countSetSealedWithOtherKeys,
  resealSetVariableQuery,
  setRowsSealedWithOtherKeys,
} from "../varsets/queries.ts";
import { variableAad } from "./model.ts";
import {
  countSealedWithOtherKeys,
  replaceVariableQuery,
  rowsSealedWithOtherKeys,
} from "./queries.ts";
import { keyringOf } from "./service.ts";

/** What one pass did: values sealed again with the primary key, and those still under others. */
export type Reencrypted = { reencrypted: number; remaining: number };

/**
 * Re-seals up to `limit` sensitive values of the org that a non-primary key of the ring sealed.
 * `remaining` counts the org's values still sealed with another key afterwards (including any
 * whose key is no longer in the ring or that do not open): run until it is 0, then drop the old
 * key. Refused `unavailable` without a usable `ENCRYPTION_KEY`.
 */
export async function reencryptVariables(
  deps: Deps,
  orgId: string,
  limit: number,
): Promise<Outcome<Reencrypted, "unavailable">> {
  const loaded = await keyringOf(deps.env.ENCRYPTION_KEY);
  if (!loaded.ok) {
    return loaded;
  }
  const keyring = loaded.value;
  const readable = [...keyring.keys.keys()].filter((id) => id !== keyring.primaryId);
  let reencrypted = 0;
  /** Opens and seals again one value; the store's compare-and-set decides whether it counts. */
  const reseal = async (
    ownerId: string,
    row: { id: string; ciphertext: string | null },
    store: (sealed: { ciphertext: string; keyId: string }) => Promise<unknown[]>,
  ) => {
    const aad = variableAad(ownerId, row.id);
    const opened = await open(keyring, row.ciphertext ?? "", aad);
    if (opened.ok) {
      const sealed = await seal(keyring, opened.value, aad);
      // Same updatedAt: compare-and-set against the row as read, so a concurrent write wins.
      const [done] = await store({ ciphertext: sealed.sealed, keyId: sealed.keyId });
      reencrypted += done ? 1 : 0;
    }
  };
  for (const row of await rowsSealedWithOtherKeys(deps.db, orgId, readable, limit)) {
    await reseal(row.workspaceId, row, (sealed) => replaceVariableQuery(deps.db, row, sealed));
  }
  const left = Math.max(0, limit - reencrypted);
  for (const row of await setRowsSealedWithOtherKeys(deps.db, orgId, readable, left)) {
    await reseal(row.varsetId, row, (sealed) => resealSetVariableQuery(deps.db, row, sealed));
  }
  const remaining =
    (await countSealedWithOtherKeys(deps.db, orgId, keyring.primaryId)) +
    (await countSetSealedWithOtherKeys(deps.db, orgId, keyring.primaryId));
  return ok({ reencrypted, remaining });
}
