/**
 * Who may read an organization's operational data: `GET /metrics` and a pool's autoscaling
 * signal (`GET /api/v1/pools/{poolId}/autoscaling`). The rule lives here only, so it changes in
 * one place when authorization becomes one decision over (principal, action, resource).
 */
import type { MiddlewareHandler } from "hono";
import type { AppEnv } from "../env.ts";
import { requireRole } from "../middleware/auth.ts";

/**
 * An org token of the reader role or above: read-only, so it is the token to hand a scraper or
 * an autoscaler (a Prometheus `credentials_file`, a KEDA `TriggerAuthentication`). Refuses as
 * every org route does: 401 without a valid token, and the answer covers the token's
 * organization only.
 */
export function requireOperationsReader(): MiddlewareHandler<AppEnv> {
  return requireRole("reader");
}
