/** Requests through the real Worker entry point (`exports.default.fetch`) inside workerd. */
import { exports } from "cloudflare:workers";

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
  return exports.default.fetch(
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
