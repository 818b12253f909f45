import type { z } from "zod";
import { type HttpTarget, readJson, send } from "../client/http.ts";
import type { HttpResponse } from "../net/fetch.ts";
import { AGENT_VERSION } from "../version.ts";
import type { Credentials } from "./config-store.ts";

/** The Run user-agent prefix the coordinator records as `source: cli`. */
export const CLI_USER_AGENT = `outpost-cli/${AGENT_VERSION} (${process.platform}; ${process.arch})`;

/**
 * The user API (`/api/v1/*`) with an org token. Answers are parsed with the CLI's schemas;
 * failures are TransientError (network, 429, 5xx), CoordinatorError (refusals) or ProtocolError.
 */
export class UserApi {
  readonly address: string;
  private readonly target: HttpTarget;
  private readonly token: string;

  constructor(credentials: Credentials) {
    this.address = credentials.address;
    this.target = { address: credentials.address, userAgent: CLI_USER_AGENT };
    this.token = credentials.token;
  }

  /** A JSON request whose answer must match `schema`. */
  async call<T extends z.ZodType>(
    method: string,
    path: string,
    schema: T,
    body?: unknown,
  ): Promise<z.infer<T>> {
    const res = await send(this.target, {
      method,
      path,
      token: this.token,
      ...(body === undefined
        ? {}
        : { headers: { "content-type": "application/json" }, body: JSON.stringify(body) }),
    });
    return readJson(res, schema, `${method} ${path.split("?")[0]}`);
  }

  /** A request without a JSON answer to read (204), e.g. deletes. */
  async callNoContent(method: string, path: string): Promise<void> {
    const res = await send(this.target, { method, path, token: this.token });
    await res.body?.cancel();
  }

  /** A request whose raw answer the caller reads (uploads, log bytes). */
  async raw(
    method: string,
    path: string,
    options: { body?: Uint8Array; headers?: Record<string, string>; timeoutMs?: number } = {},
  ): Promise<HttpResponse> {
    return send(this.target, { method, path, token: this.token, ...options });
  }
}

/** A path segment, percent-encoded. */
export function seg(value: string): string {
  return encodeURIComponent(value);
}
