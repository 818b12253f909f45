/**
 * `/webhooks/github/{hookId}` and `/webhooks/gitlab/{hookId}`: the public endpoints the VCS
 * calls. Order matters: size limit (413) → hook lookup (404) → signature or token over the raw
 * body (401) → payload (400) → dedupe by delivery id and by the body's SHA-256 (200 duplicate) →
 * a push whose commit already ran everywhere it triggers (202 with the reason) → 202, with the
 * runs created in `waitUntil` so a slow path never times the VCS out (GitHub and GitLab give up
 * after 10 s and do not retry by themselves). This file verifies, parses and answers; what a
 * delivery does from the dedupe on is `receiveDelivery`'s (`service.ts`).
 */
import { createRoute, z } from "@hono/zod-openapi";
import { verify } from "@octokit/webhooks-methods";
import type { Context } from "hono";
import type { AppEnv } from "../env.ts";
import { ApiError, valueOrThrow } from "../errors.ts";
import { sha256Hex, timingSafeEqualString } from "../lib/crypto.ts";
import { limitBody } from "../middleware/body-limit.ts";
import { errorResponses, idParam, jsonResponse, newRouter } from "../router.ts";
import { parseGitHub, parseGitLab } from "./events.ts";
import { acceptedSecrets, findHookById, type HookRow, type Provider } from "./hooks.ts";
import { receiveDelivery } from "./service.ts";

/** Webhook bodies above this are refused with 413 before they are read. */
export const WEBHOOK_BODY_LIMIT_BYTES = 5 * 1024 * 1024;
const MAX_DELIVERY_ID = 200;

const HookParams = z.strictObject({ hookId: idParam("hook", "hookId") });

const Accepted = z
  .object({
    accepted: z.boolean().optional(),
    duplicate: z.boolean().optional(),
    deliveryId: z.string().optional(),
    ignored: z.string().optional().openapi({ description: "Why the event triggers nothing" }),
  })
  .openapi("WebhookAnswer");

async function loadHook(c: Context<AppEnv>, provider: Provider, hookId: string) {
  const hook = await findHookById(c.var.db, hookId);
  if (!hook || hook.provider !== provider) {
    throw new ApiError("NOT_FOUND", `no ${provider} hook ${hookId}`);
  }
  return hook;
}

/** `X-Hub-Signature-256` against every accepted secret; a malformed header is just invalid. */
async function verifyGitHub(c: Context<AppEnv>, hook: HookRow, body: string): Promise<void> {
  const signature = c.req.header("x-hub-signature-256");
  if (!signature) {
    throw new ApiError("UNAUTHORIZED", "missing X-Hub-Signature-256 header");
  }
  for (const secret of valueOrThrow(await acceptedSecrets(c.var.deps, hook))) {
    try {
      if (await verify(secret, body, signature)) {
        return;
      }
    } catch {
      // verify() throws on a signature that is not `sha256=<64 hex>`: treat it as a mismatch.
    }
  }
  throw new ApiError("UNAUTHORIZED", "X-Hub-Signature-256 does not match the hook's secret");
}

/** `X-Gitlab-Token` is the secret in clear; compare digests so not even its length leaks. */
async function verifyGitLab(c: Context<AppEnv>, hook: HookRow): Promise<void> {
  const token = c.req.header("x-gitlab-token");
  if (!token) {
    throw new ApiError("UNAUTHORIZED", "missing X-Gitlab-Token header");
  }
  const presented = await sha256Hex(token);
  let matches = false;
  for (const secret of valueOrThrow(await acceptedSecrets(c.var.deps, hook))) {
    matches = timingSafeEqualString(presented, await sha256Hex(secret)) || matches;
  }
  if (!matches) {
    throw new ApiError("UNAUTHORIZED", "X-Gitlab-Token does not match the hook's secret");
  }
}

/** The JSON payload: the body itself, or GitHub's `payload=` field of a form-encoded body. */
function parsePayload(c: Context<AppEnv>, body: string): unknown {
  const type = c.req.header("content-type") ?? "";
  const json = /application\/x-www-form-urlencoded/i.test(type)
    ? new URLSearchParams(body).get("payload")
    : body;
  if (json === null) {
    throw new ApiError("BAD_REQUEST", "form-encoded delivery without a payload field");
  }
  try {
    return JSON.parse(json);
  } catch {
    throw new ApiError("BAD_REQUEST", "the payload is not valid JSON");
  }
}

function requiredHeader(c: Context<AppEnv>, name: string): string {
  const value = c.req.header(name)?.trim();
  if (!value) {
    throw new ApiError("BAD_REQUEST", `missing ${name} header`);
  }
  if (value.length > MAX_DELIVERY_ID) {
    throw new ApiError("BAD_REQUEST", `${name} is longer than ${MAX_DELIVERY_ID} characters`);
  }
  return value;
}

/** Verified delivery → the service's receipt → the answer; the deferred work goes to `waitUntil`. */
async function handle(
  c: Context<AppEnv>,
  hook: HookRow,
  received: { eventName: string; deliveryId: string; body: string },
  parsed: ReturnType<typeof parseGitHub>,
) {
  if (!parsed.ok) {
    throw new ApiError("BAD_REQUEST", parsed.message);
  }
  const { deliveryId } = received;
  const receipt = await receiveDelivery(c.var.deps, hook, received, parsed.value);
  switch (receipt.kind) {
    case "ping":
      return c.json({ accepted: true, deliveryId }, 200);
    case "ignored":
      return c.json({ ignored: receipt.reason, deliveryId }, 202);
    case "duplicate": {
      const replay = receipt.replayOf
        ? { ignored: `the same body was already delivered as ${receipt.replayOf}` }
        : {};
      return c.json({ duplicate: true, deliveryId, ...replay }, 200);
    }
    case "accepted":
      c.executionCtx.waitUntil(receipt.process());
      return c.json({ accepted: true, deliveryId }, 202);
  }
}

const route = (provider: Provider, summary: string) =>
  createRoute({
    method: "post",
    operationId: `receive${provider === "github" ? "GitHub" : "GitLab"}Webhook`,
    path: `/${provider}/{hookId}`,
    tags: ["vcs"],
    summary,
    description:
      "The raw body is verified before it is parsed, so it is not described here; see docs/vcs.md.",
    middleware: [limitBody(WEBHOOK_BODY_LIMIT_BYTES)] as const,
    request: { params: HookParams },
    responses: {
      200: jsonResponse(Accepted, "A ping, or a delivery already received (nothing new happens)"),
      202: jsonResponse(Accepted, "Accepted (runs are queued right after), or ignored with why"),
      ...errorResponses(400, 401, 404, 413),
    },
  });

export const webhookRoutes = newRouter()
  .openapi(route("github", "GitHub webhook (push, pull_request, ping)"), async (c) => {
    const hook = await loadHook(c, "github", c.req.valid("param").hookId);
    const body = await c.req.text();
    await verifyGitHub(c, hook, body);
    const eventName = requiredHeader(c, "x-github-event");
    const deliveryId = requiredHeader(c, "x-github-delivery");
    const parsed = parseGitHub(eventName, parsePayload(c, body));
    return handle(c, hook, { eventName, deliveryId, body }, parsed);
  })
  .openapi(route("gitlab", "GitLab webhook (Push Hook, Merge Request Hook)"), async (c) => {
    const hook = await loadHook(c, "gitlab", c.req.valid("param").hookId);
    await verifyGitLab(c, hook);
    const body = await c.req.text();
    const eventName = requiredHeader(c, "x-gitlab-event");
    // Idempotency-Key is stable across GitLab's retries (17.4+); the event UUID before that.
    const deliveryId =
      c.req.header("idempotency-key")?.trim() ||
      c.req.header("x-gitlab-event-uuid")?.trim() ||
      `sha256:${await sha256Hex(body)}`;
    if (deliveryId.length > MAX_DELIVERY_ID) {
      throw new ApiError("BAD_REQUEST", `delivery id is longer than ${MAX_DELIVERY_ID} characters`);
    }
    const parsed = parseGitLab(eventName, parsePayload(c, body));
    return handle(c, hook, { eventName, deliveryId, body }, parsed);
  });
