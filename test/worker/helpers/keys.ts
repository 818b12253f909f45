/**
 * Deployments under a changing ENCRYPTION_KEY: the Worker run with an overridden env, and the
 * operator's re-encryption step through its route.
 */
import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { newApp } from "../../../src/app.ts";
import { systemClock } from "../../../src/lib/clock.ts";
import type { Reencryption } from "../../../src/orgs/reencrypt.ts";
import type { ErrorBody } from "./api.ts";

/** The key ring the tests' deployment runs with: one key, `k1`. */
export const OLD_KEY = env.ENCRYPTION_KEY;
/** A second key, `k2`, to rotate to. */
export const NEW_KEY = `k2:${btoa(String.fromCharCode(...new Uint8Array(32).fill(42)))}`;
/** The ring during a rotation: `k2` encrypts, both decrypt. */
export const ROTATED = `${NEW_KEY},${OLD_KEY}`;

/** A request to the Worker of a deployment whose ENCRYPTION_KEY is `encryptionKey`. */
export async function requestWithKey<T = ErrorBody>(
  encryptionKey: string,
  path: string,
  init: { method?: string; headers?: Record<string, string>; body?: string },
): Promise<{ status: number; body: T }> {
  const ctx = createExecutionContext();
  const res = await newApp(systemClock).request(
    path,
    { method: init.method ?? "GET", headers: init.headers, body: init.body },
    { ...env, ENCRYPTION_KEY: encryptionKey },
    ctx,
  );
  await waitOnExecutionContext(ctx);
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : null) as T };
}

/** `POST /api/v1/organization/reencrypt` with `token`, on a deployment with `encryptionKey`. */
export function reencryptWith(
  encryptionKey: string,
  token: string,
  body: unknown = {},
): Promise<{ status: number; body: Reencryption & ErrorBody }> {
  return requestWithKey(encryptionKey, "/api/v1/organization/reencrypt", {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
}
