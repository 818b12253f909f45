import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";
import type { CoordinatorPort, JobArtifact } from "./types.ts";

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

/**
 * Downloads the plan artefact `name` to `file` and checks it against `expected`: the plan that
 * was confirmed is the plan that is applied. Answers its SHA-256; throws with why otherwise.
 */
export async function downloadVerifiedPlan(input: {
  port: CoordinatorPort;
  name: JobArtifact;
  file: string;
  expected: string | null;
  retry<T>(fn: () => Promise<T>): Promise<T>;
}): Promise<string> {
  const { port, name, file } = input;
  if (!(await input.retry(() => port.downloadArtifact(name, file)))) {
    throw new Error("the coordinator has no plan file for this run");
  }
  const check = await checkPlanFile(file, input.expected);
  if (!check.ok) {
    throw new Error(check.reason);
  }
  return check.sha256;
}
