/** Request body limits, enforced while the body streams in, before anything parses it. */
import type { MiddlewareHandler } from "hono";
import { bodyLimit } from "hono/body-limit";
import type { AppEnv } from "../env.ts";
import { ApiError } from "../errors.ts";

/** Default limit for JSON API bodies. */
export const JSON_BODY_LIMIT_BYTES = 256 * 1024;

/** Refuses bodies over `maxBytes` with 413 PAYLOAD_TOO_LARGE. */
export function limitBody(maxBytes: number): MiddlewareHandler<AppEnv> {
  return bodyLimit({
    maxSize: maxBytes,
    onError: () => {
      throw new ApiError("PAYLOAD_TOO_LARGE", `request body is larger than ${maxBytes} bytes`);
    },
  });
}

/**
 * The API-wide limit for JSON (or untyped) bodies. Routes that take other media types — tarballs,
 * state files, log chunks — set their own, larger limit.
 */
export function limitJsonBodies(): MiddlewareHandler<AppEnv> {
  const limit = limitBody(JSON_BODY_LIMIT_BYTES);
  return async function limitJson(c, next) {
    const type = c.req.header("content-type");
    if (type === undefined || /json/i.test(type)) {
      return limit(c, next);
    }
    await next();
  };
}
