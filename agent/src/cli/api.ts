import createClient from "openapi-fetch";
import { type HttpTarget, ProtocolError, send } from "../client/http.ts";
import { plainHttpRefusal } from "../net/address.ts";
import type { HttpResponse } from "../net/fetch.ts";
import { AGENT_VERSION } from "../version.ts";
import type { paths } from "./api-types.ts";
import type { Credentials } from "./config-store.ts";
import { UsageError } from "./errors.ts";

/** The Run user-agent prefix the coordinator records as `source: cli`. */
export const CLI_USER_AGENT = `outpost-cli/${AGENT_VERSION} (${process.platform}; ${process.arch})`;

/**
 * The user API (`/api/v1/*`) with an org token: an openapi-fetch client typed by the
 * coordinator's OpenAPI document (`api-types.ts`, generated). Requests go through the agent's
 * HTTP layer (proxies, CAs, User-Agent), so failures are TransientError (network, 429, 5xx),
 * CoordinatorError (refusals) or ProtocolError (an answer that is not JSON).
 */
export class UserApi {
  readonly address: string;
  readonly client: ReturnType<typeof createClient<paths>>;
  private readonly target: HttpTarget;
  private readonly token: string | undefined;

  /**
   * With credentials; with an address alone, for the calls that take no token (a login).
   * Refuses (UsageError) plain http to a host that is not loopback unless `insecureHttp`.
   */
  constructor(
    credentials: Credentials | { address: string; token?: undefined; insecureHttp?: boolean },
  ) {
    const refusal = plainHttpRefusal(
      credentials.address,
      credentials.insecureHttp === true,
      "outpost login --insecure-http (or OUTPOST_INSECURE_HTTP=1)",
    );
    if (refusal !== null) {
      throw new UsageError(refusal);
    }
    this.address = credentials.address;
    this.target = { address: credentials.address, userAgent: CLI_USER_AGENT };
    this.token = credentials.token;
    this.client = createClient<paths>({
      baseUrl: credentials.address,
      fetch: (request) => this.transport(request),
    });
  }

  /** A request whose raw answer the caller reads (uploads, log bytes). */
  async raw(
    method: string,
    path: string,
    options: { body?: Uint8Array; headers?: Record<string, string>; timeoutMs?: number } = {},
  ): Promise<HttpResponse> {
    return send(this.target, {
      method,
      path,
      ...(this.token === undefined ? {} : { token: this.token }),
      ...options,
    });
  }

  private async transport(request: Request): Promise<Response> {
    const url = new URL(request.url);
    const body = request.body === null ? undefined : new Uint8Array(await request.arrayBuffer());
    const headers: Record<string, string> = {};
    request.headers.forEach((value, name) => {
      headers[name] = value;
    });
    const res = await this.raw(request.method, `${url.pathname}${url.search}`, {
      headers,
      ...(body === undefined ? {} : { body }),
    });
    // undici's Response is the one Node's fetch is built on; openapi-fetch reads it as such.
    return res as unknown as Response;
  }
}

/**
 * The parsed answer of a successful call. The transport throws for every failure, so an
 * answer without data is one the client could not read.
 */
export async function must<T>(call: Promise<{ data?: T; response: Response }>): Promise<T> {
  let answer: { data?: T; response: Response };
  try {
    answer = await call;
  } catch (error) {
    if (error instanceof SyntaxError) {
      throw new ProtocolError(`the coordinator's answer is not JSON (${error.message})`);
    }
    throw error;
  }
  if (answer.data === undefined) {
    throw new ProtocolError(`${new URL(answer.response.url).pathname} answered without a body`);
  }
  return answer.data;
}

/** A call whose answer carries nothing to read (204). */
export async function done(call: Promise<{ response: Response }>): Promise<void> {
  await call;
}

/** A path segment, percent-encoded (for raw requests; the client encodes its own). */
export function seg(value: string): string {
  return encodeURIComponent(value);
}
