/**
 * R2 keys of run artefacts, built here and nowhere else. They live under the workspace's prefix,
 * so deleting a workspace removes its runs' logs and plans with everything else.
 */
import { workspaceBlobPrefix } from "../workspaces/model.ts";

export type RunRef = { orgId: string; workspaceId: string; runId: string };

function runPrefix(run: RunRef): string {
  return `${workspaceBlobPrefix(run.orgId, run.workspaceId)}runs/${run.runId}/`;
}

/** The whole log of one job, written when the job ends. */
export function logKey(run: RunRef, phase: "plan" | "apply"): string {
  return `${runPrefix(run)}${phase}/log.txt`;
}

/** An artefact the plan job uploads (plan file, lock file, JSON plan). */
export function artifactKey(run: RunRef, name: string): string {
  return `${runPrefix(run)}artifacts/${name}`;
}

/** The log object of a workspace's jobs (one `RunLog` per workspace; methods name the job). */
export function runLog(env: Env, workspaceId: string) {
  return env.RUN_LOG.getByName(workspaceId);
}
/** The artefact the apply job runs: its SHA-256 is recorded on the run when the plan ends. */
export const PLAN_FILE_ARTIFACT = "plan.tfplan";
/** Custom metadata key of an artefact's SHA-256 (hex), set when it is stored. */
export const SHA256_METADATA = "sha256";
