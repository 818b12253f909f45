/**
 * Outputs as the API shows them, pure: the `outputs` member of a state file, with sensitive
 * values hidden from callers below admin.
 */
import { z } from "@hono/zod-openapi";
import { type Principal, roleAtLeast } from "../tokens/model.ts";

/** Sensitive output values are shown to admins and owners only (see docs/state-backend.md). */
export function maySeeSensitiveOutputs(principal: Principal): boolean {
  return principal.kind === "org" && roleAtLeast(principal.role, "admin");
}

const StoredOutputs = z.record(
  z.string(),
  z.object({ value: z.unknown(), type: z.unknown().optional(), sensitive: z.boolean().optional() }),
);

export type PresentedOutput = { value: unknown; type: unknown; sensitive: boolean };

/** Outputs as stored in a state file, with sensitive values replaced by null unless allowed. */
export function presentOutputs(
  json: string,
  showSensitive: boolean,
): Record<string, PresentedOutput> | null {
  let raw: unknown;
  try {
    raw = JSON.parse(json);
  } catch {
    return null;
  }
  const parsed = StoredOutputs.safeParse(raw);
  if (!parsed.success) {
    return null;
  }
  const out: Record<string, PresentedOutput> = {};
  for (const [name, output] of Object.entries(parsed.data)) {
    const sensitive = output.sensitive === true;
    out[name] = {
      value: sensitive && !showSensitive ? null : output.value,
      type: output.type ?? null,
      sensitive,
    };
  }
  return out;
}
