/**
 * Sessions, pure: their settings and when one is live. A session is a server-side record behind
 * an opaque cookie; it ends at the first of its absolute lifetime, its idle timeout, a sign-out,
 * or its owner's end (a disabled user, a revoked org token).
 */

export const SESSION_COOKIE = "outpost_session";

/** The settings of a deployment, from `SESSION_IDLE_TIMEOUT_SECONDS` and `SESSION_MAX_AGE_SECONDS`. */
export type SessionSettings = { idleTimeoutMs: number; maxAgeMs: number };

export const DEFAULT_IDLE_TIMEOUT_SECONDS = 4 * 3600;
export const DEFAULT_MAX_AGE_SECONDS = 12 * 3600;
/** `last_seen_at` is written at most this often per session. */
export const LAST_SEEN_RESOLUTION_MS = 60_000;

function seconds(text: string | undefined, fallback: number): number {
  const value = Number(text);
  return text !== undefined && /^\d+$/.test(text) && value > 0 ? value : fallback;
}

/** The deployment's session settings; a missing or malformed value takes its default. */
export function sessionSettings(
  env: Partial<Pick<Env, "SESSION_IDLE_TIMEOUT_SECONDS" | "SESSION_MAX_AGE_SECONDS">>,
): SessionSettings {
  return {
    idleTimeoutMs: seconds(env.SESSION_IDLE_TIMEOUT_SECONDS, DEFAULT_IDLE_TIMEOUT_SECONDS) * 1000,
    maxAgeMs: seconds(env.SESSION_MAX_AGE_SECONDS, DEFAULT_MAX_AGE_SECONDS) * 1000,
  };
}

/** Whether a session not signed out is still live at `now`: before its expiry and not idle. */
export function isSessionLive(
  session: { createdAt: number; lastSeenAt: number | null; expiresAt: number },
  now: number,
  settings: SessionSettings,
): boolean {
  const lastSeen = session.lastSeenAt ?? session.createdAt;
  return now < session.expiresAt && now < lastSeen + settings.idleTimeoutMs;
}

/** Whether this request should record the session as seen (at most once a minute). */
export function shouldTouch(lastSeenAt: number | null, createdAt: number, now: number): boolean {
  return (lastSeenAt ?? createdAt) < now - LAST_SEEN_RESOLUTION_MS;
}
