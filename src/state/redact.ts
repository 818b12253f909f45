/**
 * State downloads for callers below the reveal level: the same body with every sensitive output's
 * value replaced by null, as `GET …/outputs` shows them. Without this a reader downloaded what
 * `outputs?reveal=true` refuses them.
 */
import { ok } from "@outpost/common";
import { refuse } from "../lib/reason.ts";
import type { StateResult } from "./access.ts";
import type { StateBody } from "./service.ts";

/** Bodies up to this are redacted in memory; larger ones are downloaded by admins only. */
export const MAX_REDACTED_STATE_BYTES = 16 * 1024 * 1024;

/**
 * `doc` with the value of every output marked `sensitive: true` set to null, and whether any was.
 * A body that is not a state document (an encrypted state) is left as it is.
 */
export function redactSensitiveOutputs(doc: unknown): { doc: unknown; changed: boolean } {
  if (typeof doc !== "object" || doc === null || !("outputs" in doc)) {
    return { doc, changed: false };
  }
  const outputs = (doc as { outputs: unknown }).outputs;
  if (typeof outputs !== "object" || outputs === null) {
    return { doc, changed: false };
  }
  let changed = false;
  const redacted: Record<string, unknown> = {};
  for (const [name, output] of Object.entries(outputs)) {
    const isSensitive =
      typeof output === "object" && output !== null && "sensitive" in output && output.sensitive;
    redacted[name] = isSensitive ? { ...output, value: null } : output;
    changed ||= Boolean(isSensitive);
  }
  return { doc: { ...doc, outputs: redacted }, changed };
}

async function md5Hex(bytes: Uint8Array): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest("MD5", bytes));
  return [...digest].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/**
 * `state` with its sensitive outputs' values removed (its size and MD5 those of the new body), or
 * `forbidden` for a body too large to redact. A body without sensitive outputs is unchanged.
 */
export async function redactedState(state: StateBody): Promise<StateResult<StateBody>> {
  if (state.sizeBytes > MAX_REDACTED_STATE_BYTES) {
    await state.body.cancel();
    return refuse(
      "forbidden",
      `this state version is over ${MAX_REDACTED_STATE_BYTES / 1024 / 1024} MiB, too large to download with its sensitive outputs removed; downloading it whole needs the admin or owner role, or write access to the workspace`,
    );
  }
  const text = await new Response(state.body).text();
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = null;
  }
  const { doc, changed } = redactSensitiveOutputs(parsed);
  const bytes = new TextEncoder().encode(changed ? `${JSON.stringify(doc, null, 2)}\n` : text);
  return ok({
    ...state,
    body: new Response(bytes).body ?? new ReadableStream(),
    sizeBytes: bytes.byteLength,
    md5Hex: changed ? await md5Hex(bytes) : state.md5Hex,
  });
}
