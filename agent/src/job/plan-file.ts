import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";

export type PlanFileCheck = { ok: true; sha256: string } | { ok: false; reason: string };

/**
 * Whether the downloaded plan file is the one the coordinator recorded when the plan finished
 * (its SHA-256, hex). No recorded hash is a refusal too: an unverifiable plan is never applied.
 */
export async function checkPlanFile(file: string, expected: string | null): Promise<PlanFileCheck> {
  if (expected === null) {
    return {
      ok: false,
      reason:
        "no plan hash was recorded for this run when its plan finished; refusing to apply an unverifiable plan (queue a new run)",
    };
  }
  const hash = createHash("sha256");
  for await (const chunk of createReadStream(file)) {
    hash.update(chunk as Buffer);
  }
  const actual = hash.digest("hex");
  return actual === expected
    ? { ok: true, sha256: actual }
    : {
        ok: false,
        reason: `the plan file's SHA-256 is ${actual}, not ${expected} as recorded when the plan finished; refusing to apply a plan that is not the one confirmed`,
      };
}
