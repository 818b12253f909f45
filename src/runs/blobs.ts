/** R2 keys of run artefacts, built here and nowhere else. */

/** The whole log of one job, written when the job ends. */
export function logKey(runId: string, phase: "plan" | "apply"): string {
  return `runs/${runId}/${phase}/log.txt`;
}

/** An artefact the plan job uploads (plan file, lock file, JSON plan). */
export function artifactKey(runId: string, name: string): string {
  return `runs/${runId}/artifacts/${name}`;
}
