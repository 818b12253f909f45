import { runUrl, statusReasonOf } from "../follow.ts";
import type { Run } from "../models.ts";
import { table } from "../output.ts";

/** `+2 to add, ~1 to change, -0 to destroy`, as Terraform's plan summary line reads. */
export function describePlan(plan: NonNullable<Run["planSummary"]>): string {
  if (!plan.hasChanges) {
    return "no changes";
  }
  const parts = [
    `${plan.adds} to add`,
    `${plan.changes} to change`,
    `${plan.destroys} to destroy`,
    ...((plan.imports ?? 0) > 0 ? [`${plan.imports} to import`] : []),
  ];
  return parts.join(", ");
}

function agentOf(job: Run["jobs"][number]): string {
  const name = job.agent.name ? `${job.agent.name} (${job.agent.id})` : job.agent.id;
  const engine = job.engineVersion ? `, engine ${job.engineVersion}` : "";
  return `${name} v${job.agent.version}, pool ${job.poolId}, isolation ${job.agent.isolation}${engine}`;
}

/** `runs show` as aligned `Label: value` lines, ending with the dashboard URL. */
export function describeRun(run: Run, address: string): string {
  const kind = `${run.operation}${run.isSpeculative ? " (speculative)" : ""}${run.isAutoApply ? ", auto-apply" : ""}`;
  const rows: [string, string | null][] = [
    ["Run:", run.id],
    ["Workspace:", run.workspaceId],
    ["Status:", run.status.replaceAll("_", " ")],
    ["Reason:", statusReasonOf(run)],
    ["Waiting:", run.waitingReason],
    ["Operation:", kind],
    ["Message:", run.message || null],
    ["Plan:", run.planSummary ? describePlan(run.planSummary) : null],
    [
      "Commit:",
      run.vcs.commitSha ? `${run.vcs.commitSha.slice(0, 12)} on ${run.vcs.branch ?? "?"}` : null,
    ],
    ...run.jobs.map((job): [string, string] => [
      `${job.phase === "plan" ? "Plan" : "Apply"} agent:`,
      agentOf(job),
    ]),
    ["Queued by:", run.createdBy?.name ?? null],
    ["Confirmed by:", run.confirmedBy?.name ?? null],
    ["Discarded by:", run.discardedBy?.name ?? null],
    ["Canceled by:", run.canceledBy?.name ?? null],
    ["Created:", run.createdAt],
    ["URL:", runUrl(address, run.id)],
  ];
  return table(rows.filter((row): row is [string, string] => row[1] !== null));
}
