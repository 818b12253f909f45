/**
 * Key rotation, the operator's step: once a new key is first in `ENCRYPTION_KEY`, the secrets
 * the organization keeps sealed (sensitive variables, webhook secrets: VCS hooks' and
 * notification configurations' signing secrets) are sealed again with it,
 * a bounded batch per call, so the old key can be dropped when nothing remains under it.
 * Scoped to the caller's organization, like everything an org token does.
 */

import { ok } from "@outpost/common";
import { auditQuery } from "../audit/service.ts";
import type { AuditActor } from "../authz/actor.ts";
import type { Deps } from "../deps.ts";
import type { Outcome } from "../lib/reason.ts";
import { reencryptNotificationSecrets } from "../notifications/rotation.ts";
import { reencryptVariables } from "../variables/rotation.ts";
import { reencryptHookSecrets } from "../vcs/hooks.ts";
import { reencryptHookCredentials } from "../vcs-feedback/credentials.ts";

/** Most values one call re-encrypts of each kind; the CLI calls again until none remain. */
export const MAX_REENCRYPT_BATCH = 500;

/** Per kind of secret: sealed again by this call, and still under another key after it. */
export type Reencryption = {
  variables: { reencrypted: number; remaining: number };
  webhookSecrets: { reencrypted: number; remaining: number };
};

/**
 * Re-seals up to `limit` sensitive variables, `limit` VCS hooks' secrets, `limit` hooks' VCS
 * credentials (token, GitHub App key; counted with the webhook secrets) and `limit`
 * notification configurations' secrets of the org with the primary key, audited as `organization.reencrypt`. Refused `unavailable` without a usable
 * `ENCRYPTION_KEY`. A secret whose key is no longer in the ring stays counted in `remaining`.
 */
export async function reencryptSecrets(
  deps: Deps,
  input: { orgId: string; actor: AuditActor; limit: number },
): Promise<Outcome<Reencryption, "unavailable">> {
  const variables = await reencryptVariables(deps, input.orgId, input.limit);
  if (!variables.ok) {
    return variables;
  }
  const hookSecrets = await reencryptHookSecrets(deps, input.orgId, input.limit);
  if (!hookSecrets.ok) {
    return hookSecrets;
  }
  const notificationSecrets = await reencryptNotificationSecrets(deps, input.orgId, input.limit);
  if (!notificationSecrets.ok) {
    return notificationSecrets;
  }
  const vcsCredentials = await reencryptHookCredentials(deps, input.orgId, input.limit);
  if (!vcsCredentials.ok) {
    return vcsCredentials;
  }
  const parts = [hookSecrets.value, notificationSecrets.value, vcsCredentials.value];
  const webhookSecrets = {
    reencrypted: parts.reduce((sum, p) => sum + p.reencrypted, 0),
    remaining: parts.reduce((sum, p) => sum + p.remaining, 0),
  };
  const done = { variables: variables.value, webhookSecrets };
  await auditQuery(deps.db, {
    orgId: input.orgId,
    actor: input.actor,
    action: "organization.reencrypt",
    targetType: "organization",
    targetId: input.orgId,
    data: done,
    now: deps.now(),
  });
  return ok(done);
}
