/**
 * Requests through the real Worker entry point (`exports.default.fetch`) inside workerd, or,
 * while a test moves time (`useTestClock` in clock.ts), through the same Worker built on the
 * test's clock.
 */
import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env, exports } from "cloudflare:workers";
import { systemClock } from "../../../src/lib/clock.ts";
import { newWorker } from "../../../src/worker.ts";

type Worker = ReturnType<typeof newWorker>;

let clocked: Worker | null = null;
const onRealClock = newWorker(systemClock);

/** Sends the helpers' requests to `worker` (built on a test's clock); null: the real one again. */
export function routeRequests(worker: Worker | null): void {
  clocked = worker;
}

/**
 * Calls `worker` with an execution context and waits for the work it deferred (`waitUntil`). A
 * body gets its Content-Length, as it does on the wire through the entry point.
 */
async function fetchAndWait(worker: Worker, request: Request): Promise<Response> {
  const ctx = createExecutionContext();
  let sent = request;
  if (request.body !== null && !request.headers.has("content-length")) {
    const bytes = new Uint8Array(await request.arrayBuffer());
    const headers = new Headers(request.headers);
    headers.set("content-length", String(bytes.byteLength));
    sent = new Request(request.url, { method: request.method, headers, body: bytes });
  }
  const res = await worker.fetch(sent, env, ctx);
  await waitOnExecutionContext(ctx);
  return res;
}

/** The one way helpers send a request to the Worker under test. */
export function workerFetch(request: Request): Promise<Response> {
  return clocked ? fetchAndWait(clocked, request) : exports.default.fetch(request);
}

/**
 * A request whose deferred work must be done when it returns (a webhook queues its runs in
 * `waitUntil`), through the Worker on the test's clock or the real one.
 */
export function workerFetchAndWait(request: Request): Promise<Response> {
  return fetchAndWait(clocked ?? onRealClock, request);
}

export type RequestOptions = {
  method?: string;
  token?: string | null;
  /** Serialized as JSON unless it is a string, Uint8Array or ReadableStream. */
  body?: unknown;
  headers?: Record<string, string>;
};

export const BASE = "http://outpost.test";

/** Sends a request to the Worker and returns the response. */
export function request(path: string, options: RequestOptions = {}): Promise<Response> {
  const headers = new Headers(options.headers);
  if (options.token) {
    headers.set("authorization", `Bearer ${options.token}`);
  }
  let body: BodyInit | undefined;
  if (options.body instanceof Uint8Array || options.body instanceof ReadableStream) {
    body = options.body;
  } else if (typeof options.body === "string") {
    body = options.body;
  } else if (options.body !== undefined) {
    body = JSON.stringify(options.body);
    if (!headers.has("content-type")) {
      headers.set("content-type", "application/json");
    }
  }
  return workerFetch(
    new Request(`${BASE}${path}`, { method: options.method ?? "GET", headers, body }),
  );
}

/** Sends a request and parses a JSON answer (null for an empty body). */
export async function requestJson<T = Record<string, unknown>>(
  path: string,
  options: RequestOptions = {},
): Promise<{ status: number; body: T; headers: Headers }> {
  const res = await request(path, options);
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : null) as T, headers: res.headers };
}

export type ErrorBody = {
  error: {
    code: string;
    message: string;
    requestId: string;
    issues?: { path: string; message: string }[];
  };
};
