/**
 * The one error model of the HTTP edge: the closed set of codes and the envelope of
 * `@outpost/protocol`, each code with one status, written by {@link handleError}.
 */

import type { z } from "@hono/zod-openapi";
import type { Result } from "@outpost/common";
import {
  type ErrorCode,
  type ErrorEnvelope as ErrorEnvelopeBody,
  ErrorEnvelope as ProtocolErrorEnvelope,
} from "@outpost/protocol";
import type { Context } from "hono";
import { HTTPException } from "hono/http-exception";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import type { Reason, ReasonKind } from "./lib/reason.ts";

/** Maps every code to its HTTP status; exhaustive, so a new code cannot be forgotten. */
export function codeToStatus(code: ErrorCode): ContentfulStatusCode {
  switch (code) {
    case "BAD_REQUEST":
      return 400;
    case "UNAUTHORIZED":
    case "TOKEN_REVOKED":
    case "TOKEN_EXPIRED":
    case "OIDC_REJECTED":
      return 401;
    case "FORBIDDEN":
      return 403;
    case "NOT_FOUND":
      return 404;
    case "METHOD_NOT_ALLOWED":
      return 405;
    case "CONFLICT":
    case "LEASE_LOST":
      return 409;
    case "GONE":
      return 410;
    case "LENGTH_REQUIRED":
      return 411;
    case "PAYLOAD_TOO_LARGE":
      return 413;
    case "UNSUPPORTED_MEDIA_TYPE":
      return 415;
    case "RANGE_NOT_SATISFIABLE":
      return 416;
    case "LOCKED":
      return 423;
    case "RATE_LIMITED":
      return 429;
    case "INTERNAL":
      return 500;
    case "UNAVAILABLE":
      return 503;
  }
}

function statusToCode(status: number): ErrorCode {
  switch (status) {
    case 401:
      return "UNAUTHORIZED";
    case 403:
      return "FORBIDDEN";
    case 404:
      return "NOT_FOUND";
    case 405:
      return "METHOD_NOT_ALLOWED";
    case 409:
      return "CONFLICT";
    case 411:
      return "LENGTH_REQUIRED";
    case 413:
      return "PAYLOAD_TOO_LARGE";
    case 415:
      return "UNSUPPORTED_MEDIA_TYPE";
    case 429:
      return "RATE_LIMITED";
    default:
      return status >= 500 ? "INTERNAL" : "BAD_REQUEST";
  }
}

/**
 * The one table from a service's kind of refusal to the code a client sees; every route and page
 * answers a {@link Reason} through it.
 */
const REASON_CODES: Record<ReasonKind, ErrorCode> = {
  invalid: "BAD_REQUEST",
  not_found: "NOT_FOUND",
  forbidden: "FORBIDDEN",
  conflict: "CONFLICT",
  locked: "LOCKED",
  too_large: "PAYLOAD_TOO_LARGE",
  over_limit: "RATE_LIMITED",
  revoked: "TOKEN_REVOKED",
  rejected: "OIDC_REJECTED",
  lease_lost: "LEASE_LOST",
  gone: "GONE",
  out_of_range: "RANGE_NOT_SATISFIABLE",
  unavailable: "UNAVAILABLE",
};

/** The error code of a refusal. */
function reasonCode(reason: Pick<Reason, "kind">): ErrorCode {
  return REASON_CODES[reason.kind];
}

/** The HTTP status of a refusal, for pages that answer HTML. */
export function reasonStatus(reason: Pick<Reason, "kind">): ContentfulStatusCode {
  return codeToStatus(reasonCode(reason));
}

/**
 * A service's refusal as the error the edge answers: its code, sentence, issues and details,
 * plus the headers a route's protocol adds (the log length of a refused append).
 */
export function reasonError(reason: Reason, headers: Record<string, string> = {}): ApiError {
  const all: Record<string, string> = { ...headers };
  if (reason.retryAfterSeconds !== undefined) {
    all["Retry-After"] = String(reason.retryAfterSeconds);
  }
  return new ApiError(reasonCode(reason), reason.message, {
    ...(reason.issues ? { issues: reason.issues.map((issue) => ({ ...issue })) } : {}),
    ...(reason.details ? { details: { ...reason.details } } : {}),
    ...(Object.keys(all).length > 0 ? { headers: all } : {}),
  });
}

/** The value of a service outcome, or its refusal thrown as the {@link ApiError} to answer. */
export function valueOrThrow<T>(result: Result<T, Reason>): T {
  if (!result.ok) {
    throw reasonError(result.reason);
  }
  return result.value;
}

/** The envelope as the OpenAPI document names it (`#/components/schemas/Error`). */
export const ErrorEnvelope = ProtocolErrorEnvelope.meta({ id: "Error" });
export type ErrorEnvelope = ErrorEnvelopeBody;
export type { ErrorCode };

export type ValidationIssue = { path: string; message: string };

/** The only error type thrown at the HTTP edge. */
export class ApiError extends Error {
  readonly code: ErrorCode;
  readonly issues: ValidationIssue[] | undefined;
  readonly details: Record<string, unknown> | undefined;
  readonly headers: Record<string, string> | undefined;

  constructor(
    code: ErrorCode,
    message: string,
    extra: {
      issues?: ValidationIssue[];
      details?: Record<string, unknown>;
      headers?: Record<string, string>;
    } = {},
  ) {
    super(message);
    this.name = "ApiError";
    this.code = code;
    this.issues = extra.issues;
    this.details = extra.details;
    this.headers = extra.headers;
  }

  get status(): ContentfulStatusCode {
    return codeToStatus(this.code);
  }
}

const A_OR_AN: Record<string, string> = {
  string: "a string",
  number: "a number",
  int: "a whole number",
  boolean: "true or false",
  object: "an object",
  array: "a list",
};

/** zod's own wording ("Invalid input: expected string, received undefined") as a person says it. */
function sayIssue(issue: z.core.$ZodIssue): string {
  switch (issue.code) {
    case "invalid_type":
      if (/received undefined$/.test(issue.message)) {
        return "is required";
      }
      return `must be ${A_OR_AN[issue.expected] ?? issue.expected}`;
    case "unrecognized_keys":
      return `has ${issue.keys.length === 1 ? "a field" : "fields"} this request does not take: ${issue.keys.join(", ")}`;
    case "invalid_value":
      return `must be one of ${issue.values.map((v) => JSON.stringify(v)).join(", ")}`;
    case "too_small":
      return issue.origin === "string"
        ? `must be at least ${issue.minimum} character${issue.minimum === 1 ? "" : "s"} long`
        : issue.message;
    case "too_big":
      return issue.origin === "string"
        ? `must be at most ${issue.maximum} characters long`
        : issue.message;
    default:
      return issue.message;
  }
}

/** Turns zod issues into `{ path, message }` pairs a client can show next to a field. */
export function zodIssues(error: z.ZodError, prefix: string): ValidationIssue[] {
  return error.issues.map((issue) => ({
    path: [prefix, ...issue.path.map(String)].join("."),
    message: sayIssue(issue),
  }));
}

/**
 * One sentence for a list of issues: `engineVersion is required; poolId must be a pool_ id`.
 * Body fields are named as they are written; query and path parameters say so.
 */
export function describeIssues(issues: readonly ValidationIssue[]): string {
  const where: Record<string, string> = {
    json: "the body",
    query: "the query",
    param: "the path",
    header: "the headers",
  };
  return issues
    .map(({ path, message }) => {
      const [target = "", ...field] = path.split(".");
      const name = field.join(".");
      if (name === "") {
        return `${where[target] ?? target} ${message}`;
      }
      return target === "json"
        ? `${name} ${message}`
        : `${name} (in ${where[target] ?? target}) ${message}`;
    })
    .join("; ");
}

/** Builds the envelope response for an error; used by onError, notFound and hooks. */
export function errorResponse(c: Context, err: ApiError): Response {
  const requestId = c.get("requestId") ?? "unknown";
  const body: ErrorEnvelopeBody = {
    error: {
      code: err.code,
      message: err.message,
      requestId,
      ...(err.issues ? { issues: err.issues } : {}),
      ...(err.details ? { details: err.details } : {}),
    },
  };
  for (const [name, value] of Object.entries(err.headers ?? {})) {
    c.header(name, value);
  }
  return c.json(body, err.status);
}

/**
 * The app's onError: our own errors as they are, Hono's HTTPExceptions (malformed JSON, body
 * limits, media type) mapped by status, and anything else logged with the request id and
 * answered 500 INTERNAL without its message.
 */
export function handleError(err: Error, c: Context): Response {
  if (err instanceof ApiError) {
    return errorResponse(c, err);
  }
  if (err instanceof HTTPException) {
    const code = statusToCode(err.status);
    if (code !== "INTERNAL") {
      return errorResponse(c, new ApiError(code, err.message || "request refused"));
    }
  }
  console.error(
    JSON.stringify({
      level: "error",
      msg: "unhandled error",
      requestId: c.get("requestId"),
      method: c.req.method,
      path: c.req.path,
      error: err.name,
      stack: err.stack,
    }),
  );
  return errorResponse(c, new ApiError("INTERNAL", "internal error"));
}
