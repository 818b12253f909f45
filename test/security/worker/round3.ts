/**
 * Shared pieces of the round-three trust-boundary tests: a deployment with other settings (its
 * `PUBLIC_URL` on the loopback issuer host, its loopback flag off, lower limits) built on a clock
 * the test moves, the answer an unauthenticated exchange refusal must have, and the pool's
 * audit log where the refusal's real reason goes.
 */
import { afterEach, beforeEach, expect } from "vitest";
import { newWorker } from "../../../src/worker.ts";
import { type ErrorBody, requestJson, routeRequests } from "../../worker/helpers/api.ts";
import type { TestOrg } from "../../worker/helpers/fixtures.ts";
import type { ExchangeAnswer } from "../../worker/helpers/oidc.ts";

export type Deployment = {
  now(): number;
  /** Moves the deployment's time forward by `ms`. */
  advance(ms: number): void;
};

/**
 * For the tests of the calling describe block: every helper request goes to a Worker built on
 * a clock the test moves and given the bindings of this deployment with `overrides` applied.
 */
export function deploymentWith(overrides: Partial<Env>): Deployment {
  let offsetMs = 0;
  const now = () => Date.now() + offsetMs;
  const real = newWorker(now);
  const worker: typeof real = {
    ...real,
    fetch: (request, env, ctx) => real.fetch(request, { ...env, ...overrides }, ctx),
  };
  beforeEach(() => {
    offsetMs = 0;
    routeRequests(worker);
  });
  afterEach(() => routeRequests(null));
  return {
    now,
    advance(ms) {
      offsetMs += ms;
    },
  };
}

export type AuditEvent = {
  id: string;
  action: string;
  targetType: string;
  targetId: string;
  data: Record<string, unknown> | null;
};

/** The org's audit log as `token` (the owner's unless given) may read it, newest first. */
export async function auditLog(
  org: TestOrg,
  query: Record<string, string> = {},
  token = org.ownerToken,
): Promise<AuditEvent[]> {
  const search = new URLSearchParams({ limit: "100", ...query });
  const res = await requestJson<{ auditEvents: AuditEvent[] }>(`/api/v1/audit-events?${search}`, {
    token,
  });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.auditEvents;
}

/**
 * An exchange refusal as an unauthenticated caller sees it: 401 `OIDC_REJECTED`, a request id,
 * no details, and nothing in the sentence about why (no audience, trust, pattern, issuer or
 * check). Returns the request id.
 */
export function expectRejected(res: { status: number; body: ExchangeAnswer | ErrorBody }): string {
  const text = JSON.stringify(res.body);
  expect(res.status, text).toBe(401);
  const error = (res.body as ErrorBody).error;
  expect(error.code).toBe("OIDC_REJECTED");
  expect(Object.keys(error).sort(), text).toEqual(["code", "message", "requestId"]);
  expect(error.message, text).toBe(
    `OIDC token rejected; the pool's owners can see why in its audit log (request ${error.requestId})`,
  );
  return error.requestId;
}

/** The reason the pool's audit log gives for the refused exchange of request `requestId`. */
export async function refusalInAudit(
  org: TestOrg,
  poolId: string,
  requestId: string,
): Promise<{ reason: string; message: string }> {
  const events = await auditLog(org, { action: "agent_token.oidc_refused", targetId: poolId });
  const event = events.find((e) => e.data?.requestId === requestId);
  expect(event, JSON.stringify(events)).toBeDefined();
  return {
    reason: String(event?.data?.reason ?? ""),
    message: String(event?.data?.message ?? ""),
  };
}
