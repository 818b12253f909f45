/**
 * Sending deliveries: one attempt of one delivery (claimed first, so no two ticks send it at
 * once), and the cron's sweep of the due ones. Every attempt of a delivery sends the same body
 * under the same `webhook-id` (the delivery's id) with a fresh `webhook-timestamp` and signature,
 * so receivers dedupe retries. Attempts run side by side with a timeout: a slow or failing
 * destination delays neither runs nor other destinations.
 */
import { ok } from "@outpost/common";
import type { Deps } from "../deps.ts";
import { loadKeyring, open } from "../lib/encryption.ts";
import { type Outcome, refuse } from "../lib/reason.ts";
import {
  ATTEMPT_CLAIM_MS,
  ATTEMPT_TIMEOUT_MS,
  type AttemptAnswer,
  judgeAttempt,
  MAX_ATTEMPTS,
  nextAttemptAt,
  signPayload,
} from "./model.ts";
import {
  claimAttempt,
  type DeliveryRow,
  dueDeliveries,
  getNotification,
  type NotificationRow,
  recordAttempt,
} from "./queries.ts";

/** Deliveries one cron tick attempts at most; more wait for the next tick. */
const SWEEP_LIMIT = 50;
/** Bytes of an answer's body kept for the error sentence. */
const ANSWER_BODY_BYTES = 1024;

/** The associated data a configuration's secret is sealed with: it opens only for that row. */
export const secretAad = (notificationId: string) =>
  `notification_configurations:${notificationId}:secret`;

/** The configuration's signing secret, opened; `unavailable` when the key is gone or wrong. */
export async function openSecret(
  env: Env,
  config: NotificationRow,
): Promise<Outcome<string, "unavailable">> {
  const keyring = await loadKeyring(env.ENCRYPTION_KEY);
  if (!keyring.ok) {
    return refuse("unavailable", `ENCRYPTION_KEY is unusable (${keyring.reason})`);
  }
  const secret = await open(keyring.value, config.secretCiphertext, secretAad(config.id));
  return secret.ok
    ? ok(secret.value)
    : refuse("unavailable", `the signing secret cannot be opened (${secret.reason})`);
}

async function send(
  deps: Deps,
  delivery: DeliveryRow,
  config: NotificationRow,
): Promise<AttemptAnswer> {
  const secret = await openSecret(deps.env, config);
  if (!secret.ok) {
    return { kind: "network", error: secret.reason.message };
  }
  const timestamp = Math.floor(deps.now() / 1000);
  const headers: Record<string, string> = {
    "content-type": "application/json",
    "user-agent": "Outpost-Notifications/1",
    "webhook-id": delivery.id,
    "webhook-timestamp": String(timestamp),
  };
  const signature = await signPayload(secret.value, delivery.id, timestamp, delivery.body);
  if (!signature.ok) {
    return { kind: "network", error: signature.reason.message };
  }
  headers["webhook-signature"] = signature.value;
  try {
    const res = await fetch(config.url, {
      method: "POST",
      headers,
      body: delivery.body,
      // A redirect is an answer, not an instruction: following it could send the signed body
      // somewhere the owner never configured.
      redirect: "manual",
      signal: AbortSignal.timeout(ATTEMPT_TIMEOUT_MS),
    });
    const text = await res.text().catch(() => "");
    return {
      kind: "answered",
      status: res.status,
      retryAfter: res.headers.get("retry-after"),
      body: text.slice(0, ANSWER_BODY_BYTES),
    };
  } catch (err) {
    const timedOut = err instanceof Error && err.name === "TimeoutError";
    return {
      kind: "network",
      error: timedOut
        ? `no answer within ${ATTEMPT_TIMEOUT_MS / 1000} s`
        : `the request failed: ${err instanceof Error ? err.message : String(err)}`,
    };
  }
}

/**
 * Makes one attempt of a pending delivery and records its outcome: delivered; pending with the
 * next attempt's time (5xx, 408, 429 with its `Retry-After`, network errors, while attempts and
 * time remain, unless `retry` is false); or failed, with why. Returns the delivery as recorded,
 * or undefined when another invocation claimed this attempt first.
 */
export async function attemptDelivery(
  deps: Deps,
  delivery: DeliveryRow,
  config: NotificationRow,
  { retry = true }: { retry?: boolean } = {},
): Promise<DeliveryRow | undefined> {
  const now = deps.now();
  const claimed = await claimAttempt(deps.db, delivery, now, now + ATTEMPT_CLAIM_MS);
  if (!claimed) {
    return undefined;
  }
  const verdict = judgeAttempt(await send(deps, claimed, config), deps.now());
  const at = deps.now();
  let outcome: Parameters<typeof recordAttempt>[2];
  if (verdict.kind === "delivered") {
    outcome = {
      status: "delivered",
      responseStatus: verdict.status,
      error: null,
      nextAttemptAt: null,
      completedAt: at,
    };
  } else {
    const next =
      verdict.kind === "retry" && retry
        ? nextAttemptAt(claimed.attempts, claimed.createdAt, at, verdict.retryAfterMs)
        : null;
    const gaveUp = verdict.kind === "retry" && retry && next === null;
    outcome = {
      status: next === null ? "failed" : "pending",
      responseStatus: verdict.status,
      error: gaveUp
        ? `gave up after ${claimed.attempts} attempts (at most ${MAX_ATTEMPTS}, within a day): ${verdict.error}`
        : verdict.error,
      nextAttemptAt: next,
      completedAt: next === null ? at : null,
    };
  }
  await recordAttempt(deps.db, claimed.id, outcome);
  return { ...claimed, ...outcome };
}

/**
 * The cron's part: attempts every due pending delivery (at most {@link SWEEP_LIMIT} per tick),
 * side by side. A delivery whose configuration is gone was deleted with it (cascade), so every
 * row found has one. Returns how many it attempted.
 */
export async function sweepDeliveries(deps: Deps): Promise<number> {
  const due = await dueDeliveries(deps.db, deps.now(), SWEEP_LIMIT);
  const results = await Promise.allSettled(
    due.map(async (delivery) => {
      const config = await getNotification(deps.db, delivery.orgId, delivery.notificationId);
      return config ? attemptDelivery(deps, delivery, config) : undefined;
    }),
  );
  for (const result of results) {
    if (result.status === "rejected") {
      console.error(
        JSON.stringify({
          level: "error",
          msg: "a delivery attempt failed",
          err: String(result.reason),
        }),
      );
    }
  }
  return due.length;
}
