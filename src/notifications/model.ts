/**
 * Notification rules, pure: which destination URLs are allowed, the signing secret and the
 * Standard Webhooks signature (https://www.standardwebhooks.com, "Verifying webhooks"), how an
 * attempt's answer is judged, and when the next attempt is due. docs/notifications.md says the
 * same in words.
 */
import { ok } from "@outpost/common";
import { type Outcome, refuse } from "../lib/reason.ts";

/** The secret's prefix, as Standard Webhooks libraries expect it. */
export const SECRET_PREFIX = "whsec_";
/** Random bytes in a secret: the specification asks for 24 to 64. */
const SECRET_BYTES = 32;
/** Attempts before a delivery is given up and recorded as failed. */
export const MAX_ATTEMPTS = 8;
/** However few attempts were made, a delivery this old is given up. */
export const GIVE_UP_AFTER_MS = 24 * 3600 * 1000;
/** First retry after a minute (the cron's tick), doubling, at most an hour apart. */
const FIRST_RETRY_MS = 60_000;
const MAX_RETRY_MS = 3600_000;
/** How long one attempt may take: a slow destination is an error, not a stall. */
export const ATTEMPT_TIMEOUT_MS = 10_000;
/** A claimed attempt that never recorded its answer (a crashed Worker) is due again after this. */
export const ATTEMPT_CLAIM_MS = 5 * 60_000;
/** The longest answer body kept in an error sentence. */
const ERROR_BODY_CHARS = 200;

const LOOPBACK_HOSTS = new Set(["127.0.0.1", "[::1]", "localhost"]);

/**
 * Whether `url` may be a destination: https, or plain http to a loopback address on a
 * deployment that allows it (development). Credentials in the URL are refused: they would be
 * shown to everyone who may read the configuration and logged by proxies.
 */
export function destinationProblem(url: string, allowLoopback: boolean): string | null {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return "must be an absolute URL";
  }
  if (parsed.username || parsed.password) {
    return "must not contain a user name or password";
  }
  if (parsed.protocol === "https:") {
    return null;
  }
  if (parsed.protocol === "http:" && allowLoopback && LOOPBACK_HOSTS.has(parsed.hostname)) {
    return null;
  }
  return allowLoopback
    ? "must be https (plain http only to a loopback address)"
    : "must be https (plain http to loopback needs NOTIFICATIONS_ALLOW_LOOPBACK, for development)";
}

function toBase64(bytes: Uint8Array): string {
  let binary = "";
  for (const b of bytes) {
    binary += String.fromCharCode(b);
  }
  return btoa(binary);
}

/** A new signing secret: `whsec_` and 32 random bytes in base64. */
export function generateSecret(): string {
  return `${SECRET_PREFIX}${toBase64(crypto.getRandomValues(new Uint8Array(SECRET_BYTES)))}`;
}

/**
 * The `webhook-signature` header value for one attempt: `v1,` and the base64 HMAC-SHA256, keyed
 * with the secret's decoded bytes, of `<webhook-id>.<webhook-timestamp>.<body>`.
 */
export async function signPayload(
  secret: string,
  id: string,
  timestampSeconds: number,
  body: string,
): Promise<Outcome<string, "invalid">> {
  let keyBytes: Uint8Array;
  try {
    keyBytes = Uint8Array.from(atob(secret.slice(SECRET_PREFIX.length)), (c) => c.charCodeAt(0));
  } catch {
    return refuse("invalid", "the signing secret is not base64");
  }
  const key = await crypto.subtle.importKey(
    "raw",
    keyBytes,
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["sign"],
  );
  const signed = await crypto.subtle.sign(
    "HMAC",
    key,
    new TextEncoder().encode(`${id}.${timestampSeconds}.${body}`),
  );
  return ok(`v1,${toBase64(new Uint8Array(signed))}`);
}

/** What one attempt came to. */
export type AttemptAnswer =
  | { kind: "answered"; status: number; retryAfter: string | null; body: string }
  | { kind: "network"; error: string };

/** The judgement of an attempt: done, try again (with why), or never again. */
export type AttemptVerdict =
  | { kind: "delivered"; status: number }
  | { kind: "retry"; status: number | null; error: string; retryAfterMs: number | null }
  | { kind: "failed"; status: number; error: string };

/**
 * 2xx is delivered. 5xx, 408, 429 and network errors are worth retrying (429 and 503 may say
 * when, in `Retry-After`); any other answer (a 4xx: wrong URL, refused) will not change, so the
 * delivery fails at once.
 */
export function judgeAttempt(answer: AttemptAnswer, now: number): AttemptVerdict {
  if (answer.kind === "network") {
    return { kind: "retry", status: null, error: answer.error, retryAfterMs: null };
  }
  const { status } = answer;
  if (status >= 200 && status < 300) {
    return { kind: "delivered", status };
  }
  const error = `the destination answered ${status}${answer.body ? `: ${answer.body.slice(0, ERROR_BODY_CHARS)}` : ""}`;
  if (status >= 500 || status === 408 || status === 429) {
    return { kind: "retry", status, error, retryAfterMs: retryAfterMs(answer.retryAfter, now) };
  }
  return { kind: "failed", status, error };
}

/** `Retry-After` (seconds or an HTTP date) in milliseconds from `now`, or null when absent or bad. */
export function retryAfterMs(header: string | null, now: number): number | null {
  if (!header) {
    return null;
  }
  if (/^\d+$/.test(header.trim())) {
    return Number(header.trim()) * 1000;
  }
  const at = Date.parse(header);
  return Number.isNaN(at) ? null : Math.max(0, at - now);
}

/**
 * When the next attempt is due after `attempts` failed ones, or null to give up: after
 * {@link MAX_ATTEMPTS} attempts, or when the next would fall past {@link GIVE_UP_AFTER_MS} from
 * the delivery's creation. Backoff doubles from a minute up to an hour; a longer `Retry-After`
 * (up to an hour) is honoured.
 */
export function nextAttemptAt(
  attempts: number,
  createdAt: number,
  now: number,
  retryAfter: number | null,
): number | null {
  if (attempts >= MAX_ATTEMPTS) {
    return null;
  }
  const backoff = Math.min(MAX_RETRY_MS, FIRST_RETRY_MS * 2 ** Math.max(0, attempts - 1));
  const wait = Math.max(backoff, Math.min(retryAfter ?? 0, MAX_RETRY_MS));
  const at = now + wait;
  return at - createdAt > GIVE_UP_AFTER_MS ? null : at;
}
