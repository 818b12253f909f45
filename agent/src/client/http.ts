import { ReceivedErrorEnvelope } from "@outpost/protocol";
import type { z } from "zod";
import { TransientError } from "../errors.ts";
import { describeNetworkError, isNeverConnected } from "../net/errors.ts";
import { type HttpResponse, httpFetch } from "../net/fetch.ts";

/**
 * The coordinator refused a request for a reason retrying will not fix (4xx other than 429).
 * `code` is the coordinator's error code (`LEASE_LOST`, `NOT_FOUND`, …) or `HTTP_<status>` when
 * the answer had no error envelope.
 */
export class CoordinatorError extends Error {
  override name = "CoordinatorError";
  readonly status: number;
  readonly code: string;

  constructor(status: number, code: string, message: string) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

/** The coordinator answered something this client cannot read (version skew or a proxy page). */
export class ProtocolError extends Error {
  override name = "ProtocolError";
}

export type RequestInput = {
  method: string;
  /** Path and query, starting with `/`. */
  path: string;
  /** Bearer token; absent for the unauthenticated release routes. */
  token?: string;
  headers?: Record<string, string>;
  body?: string | Uint8Array;
  /** Aborting it rejects with the signal's reason (never a TransientError). */
  signal?: AbortSignal;
  /** Until the response headers arrive and while the body is read; default 60 s. */
  timeoutMs?: number;
  /** Statuses handed back to the caller instead of being thrown (e.g. 416 for log appends). */
  passStatuses?: number[];
};

/** Connection settings shared by every request of one client. */
export type HttpTarget = {
  /** Base URL without a trailing slash. */
  address: string;
  userAgent: string;
  /** Told of every request (the agent's metrics and readiness); never changes its outcome. */
  observe?: RequestObserver;
};

/**
 * Called as a request is sent; the function it returns is called once, with the status of the
 * answer's headers, `unreachable` when it never reached the server (refused, no such host),
 * `failed` when no answer came after that (a cut connection, a timeout) or `aborted` when the
 * caller gave up on it (a shutdown ending a long-poll).
 */
export type RequestObserver = (request: {
  method: string;
  path: string;
}) => (outcome: number | "unreachable" | "failed" | "aborted") => void;

/**
 * Sends one request. Resolves with a 2xx response (or one in `passStatuses`). Network errors,
 * timeouts, 429 and 5xx reject with {@link TransientError} (carrying `Retry-After`); any other
 * status rejects with {@link CoordinatorError}; an abort through `signal` rejects with its reason.
 */
export async function send(target: HttpTarget, input: RequestInput): Promise<HttpResponse> {
  const timeout = AbortSignal.timeout(input.timeoutMs ?? 60_000);
  const signal = input.signal ? AbortSignal.any([input.signal, timeout]) : timeout;
  const what = `${input.method} ${input.path.split("?")[0]}`;
  const answered = target.observe?.({ method: input.method, path: input.path });
  let res: HttpResponse;
  try {
    res = await httpFetch(`${target.address}${input.path}`, {
      method: input.method,
      headers: {
        ...(input.token === undefined ? {} : { authorization: `Bearer ${input.token}` }),
        "user-agent": target.userAgent,
        ...input.headers,
      },
      body: input.body,
      signal,
    });
  } catch (error) {
    if (input.signal?.aborted) {
      answered?.("aborted");
      throw input.signal.reason;
    }
    answered?.(isNeverConnected(error) ? "unreachable" : "failed");
    const reason = timeout.aborted ? "no answer in time" : describeNetworkError(error);
    throw new TransientError(`${what}: cannot reach ${target.address} (${reason})`, {
      cause: error,
    });
  }
  answered?.(res.status);
  if (res.ok || input.passStatuses?.includes(res.status)) {
    return res;
  }
  const text = await res.text().catch(() => "");
  const envelope = ReceivedErrorEnvelope.safeParse(safeJson(text));
  const code = envelope.success ? envelope.data.error.code : `HTTP_${res.status}`;
  const message = envelope.success
    ? envelope.data.error.message
    : text.trim().slice(0, 200) || res.statusText;
  if (res.status === 429 || res.status >= 500) {
    throw new TransientError(`${what} answered ${res.status} ${code}: ${message}`, {
      retryAfter: res.headers.get("retry-after"),
    });
  }
  throw new CoordinatorError(
    res.status,
    code,
    `${what} answered ${res.status} ${code}: ${message}`,
  );
}

/**
 * Reads a JSON answer and parses it with `schema`. A body that is not JSON or does not match
 * rejects with {@link ProtocolError} naming the first mismatching field.
 */
export async function readJson<T extends z.ZodType>(
  res: HttpResponse,
  schema: T,
  what: string,
): Promise<z.infer<T>> {
  let text: string;
  try {
    text = await res.text();
  } catch (error) {
    throw new TransientError(`${what}: the answer was cut off (${describeNetworkError(error)})`, {
      cause: error,
    });
  }
  const parsed = schema.safeParse(safeJson(text));
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue?.path.join(".") || "(body)";
    throw new ProtocolError(
      `${what}: unexpected answer from the coordinator (${where}: ${issue?.message ?? "invalid"}); are the agent and coordinator versions compatible?`,
    );
  }
  return parsed.data;
}

/** `encodeURIComponent` for one path segment (job ids contain a colon). */
export function segment(value: string): string {
  return encodeURIComponent(value);
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
