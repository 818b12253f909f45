/**
 * The `operation` label of a coordinator request: a fixed name per route of the agent API, so
 * ids in paths never become label values (each would be a new time series).
 */
export type Operation = (typeof OPERATIONS)[number];

export const OPERATIONS = [
  "register",
  "jobs_next",
  "start",
  "heartbeat",
  "logs",
  "finish",
  "goodbye",
  "configuration",
  "artifact_upload",
  "artifact_download",
  "state_read",
  "state_write",
  "oidc_exchange",
  "release",
  "other",
] as const;

const ROUTES: ReadonlyArray<readonly [method: string, path: RegExp, operation: Operation]> = [
  ["POST", /^\/agent\/v1\/register$/, "register"],
  ["POST", /^\/agent\/v1\/jobs\/next$/, "jobs_next"],
  ["POST", /^\/agent\/v1\/jobs\/[^/]+\/leases\/[^/]+\/start$/, "start"],
  ["POST", /^\/agent\/v1\/heartbeat$/, "heartbeat"],
  ["PUT", /^\/agent\/v1\/jobs\/[^/]+\/leases\/[^/]+\/logs$/, "logs"],
  ["POST", /^\/agent\/v1\/jobs\/[^/]+\/leases\/[^/]+\/finish$/, "finish"],
  ["POST", /^\/agent\/v1\/goodbye$/, "goodbye"],
  ["GET", /^\/agent\/v1\/jobs\/[^/]+\/configuration$/, "configuration"],
  ["PUT", /^\/agent\/v1\/jobs\/[^/]+\/artifacts\/[^/]+$/, "artifact_upload"],
  ["GET", /^\/agent\/v1\/jobs\/[^/]+\/artifacts\/[^/]+$/, "artifact_download"],
  ["GET", /^\/state\/v1\//, "state_read"],
  ["POST", /^\/state\/v1\//, "state_write"],
  ["POST", /^\/agent\/v1\/oidc\/exchange$/, "oidc_exchange"],
  ["GET", /^\/agent\/v1\/release(s\/.*)?$/, "release"],
];

/** The operation of `method path` (the query is ignored); `other` for anything unlisted. */
export function operationOf(method: string, path: string): Operation {
  const bare = path.split("?")[0] ?? "";
  const upper = method.toUpperCase();
  for (const [m, pattern, operation] of ROUTES) {
    if (m === upper && pattern.test(bare)) {
      return operation;
    }
  }
  return "other";
}

/** The `wait` a long-poll asked the coordinator to hold it, in milliseconds (0 without one). */
export function pollWaitMs(path: string): number {
  const wait = Number(new URLSearchParams(path.split("?")[1] ?? "").get("wait"));
  return Number.isFinite(wait) && wait > 0 ? wait * 1000 : 0;
}
