/**
 * Outputs as the API shows them, pure: the `outputs` member of a state file, with sensitive
 * values hidden unless revealed, and the difference between two versions' outputs.
 */
import { z } from "@hono/zod-openapi";

const StoredOutputs = z.record(
  z.string(),
  z.object({ value: z.unknown(), type: z.unknown().optional(), sensitive: z.boolean().optional() }),
);
export type StoredOutput = z.infer<typeof StoredOutputs>[string];

export type PresentedOutput = { value: unknown; type: unknown; sensitive: boolean };

/** The outputs object of a stored outputs blob, or null when it is not one. */
export function storedOutputs(json: string): Record<string, StoredOutput> | null {
  let raw: unknown;
  try {
    raw = JSON.parse(json);
  } catch {
    return null;
  }
  const parsed = StoredOutputs.safeParse(raw);
  return parsed.success ? parsed.data : null;
}

/** Outputs with sensitive values replaced by null unless `reveal`. */
export function presentOutputs(
  stored: Record<string, StoredOutput>,
  reveal: boolean,
): Record<string, PresentedOutput> {
  const out: Record<string, PresentedOutput> = {};
  for (const [name, output] of Object.entries(stored)) {
    const sensitive = output.sensitive === true;
    out[name] = {
      value: sensitive && !reveal ? null : output.value,
      type: output.type ?? null,
      sensitive,
    };
  }
  return out;
}

export type OutputChange = {
  name: string;
  change: "added" | "removed" | "changed" | "unchanged";
  sensitive: boolean;
  /** Null when sensitive (never shown in a diff) or absent on that side. */
  before: unknown;
  after: unknown;
};

/** Canonical JSON (sorted keys), so equal values compare equal whatever their key order. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) {
    return `[${value.map(canonical).join(",")}]`;
  }
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) =>
      a < b ? -1 : a > b ? 1 : 0,
    );
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}

/** Every output of either side, by name, with what happened to it; sensitive values hidden. */
export function diffOutputs(
  before: Record<string, StoredOutput>,
  after: Record<string, StoredOutput>,
): OutputChange[] {
  const names = [...new Set([...Object.keys(before), ...Object.keys(after)])].sort();
  return names.map((name) => {
    const a = before[name];
    const b = after[name];
    const sensitive = a?.sensitive === true || b?.sensitive === true;
    const change =
      a === undefined
        ? "added"
        : b === undefined
          ? "removed"
          : canonical(a.value) === canonical(b.value)
            ? "unchanged"
            : "changed";
    return {
      name,
      change,
      sensitive,
      before: sensitive || a === undefined ? null : a.value,
      after: sensitive || b === undefined ? null : b.value,
    };
  });
}
