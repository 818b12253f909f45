/**
 * The one error answer of every Outpost HTTP route: a closed set of codes and one JSON envelope
 * `{ "error": { "code", "message", "requestId" } }`. The coordinator writes it, the agent and the
 * CLI read it. Imports `zod` only.
 */
import { z } from "zod";

export const ERROR_CODES = [
  "BAD_REQUEST",
  "UNAUTHORIZED",
  "TOKEN_REVOKED",
  /** An agent token from an OIDC exchange past its expiry: exchange again, do not exit. */
  "TOKEN_EXPIRED",
  /** An OIDC exchange refused; `details.reason` names the check that failed. */
  "OIDC_REJECTED",
  "FORBIDDEN",
  "NOT_FOUND",
  "METHOD_NOT_ALLOWED",
  "CONFLICT",
  "LEASE_LOST",
  "GONE",
  "LENGTH_REQUIRED",
  "PAYLOAD_TOO_LARGE",
  "UNSUPPORTED_MEDIA_TYPE",
  "RANGE_NOT_SATISFIABLE",
  "LOCKED",
  "RATE_LIMITED",
  "INTERNAL",
  "UNAVAILABLE",
] as const;

export const ErrorCode = z.enum(ERROR_CODES);
export type ErrorCode = z.infer<typeof ErrorCode>;

export const ErrorEnvelope = z.object({
  error: z.object({
    code: ErrorCode,
    message: z.string(),
    requestId: z.string(),
    /** Field-level detail for validation failures. */
    issues: z.array(z.object({ path: z.string(), message: z.string() })).optional(),
    /** Extra machine-readable detail, e.g. the workspaces that hold a pool. */
    details: z.record(z.string(), z.unknown()).optional(),
  }),
});
export type ErrorEnvelope = z.infer<typeof ErrorEnvelope>;

/**
 * The envelope as a client reads it: any code (a newer coordinator may answer one this client
 * does not know yet) and no request id required (a proxy in between may answer in this shape).
 */
export const ReceivedErrorEnvelope = z.object({
  error: ErrorEnvelope.shape.error.extend({ code: z.string(), requestId: z.string().optional() }),
});
