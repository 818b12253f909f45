/** The public shape of a run. */
import { presentRunJob, type RunJobRow } from "./job-records.ts";
import { isTerminal } from "./model.ts";
import type { RunRow } from "./queries.ts";

const iso = (ms: number | null | undefined) =>
  ms === null || ms === undefined ? null : new Date(ms).toISOString();

/** A run with why it waits and its started jobs (which agent ran each phase). */
export function presentRun(
  row: RunRow,
  waitingReason: string | null = null,
  jobs: readonly RunJobRow[] = [],
) {
  const status = row.status;
  const timestamps = Object.fromEntries(
    Object.entries(row.statusTimestamps ?? {}).map(([key, ms]) => [key, iso(ms)]),
  );
  return {
    id: row.id,
    workspaceId: row.workspaceId,
    status,
    statusReason: row.statusReason,
    waitingReason,
    operation: row.operation,
    isSpeculative: row.isSpeculative,
    isAutoApply: row.isAutoApply,
    allowEmptyApply: row.allowEmptyApply,
    message: row.message,
    configurationVersionId: row.configurationVersionId,
    planSummary: row.planSummary ?? null,
    planSha256: row.planSha256,
    source: row.source,
    triggeringRunId: row.triggeringRunId,
    vcs: {
      commitSha: row.commitSha,
      branch: row.branch,
      pullRequestNumber: row.pullRequestNumber,
      author: row.author,
      commitMessage: row.commitMessage,
      isFork: row.isFork,
    },
    jobs: jobs.map(presentRunJob),
    cancelRequestedAt: iso(row.cancelRequestedAt),
    statusTimestamps: timestamps,
    isTerminal: isTerminal(status),
    createdBy: row.createdBy,
    confirmedBy: row.confirmedBy,
    discardedBy: row.discardedBy,
    canceledBy: row.canceledBy,
    createdAt: iso(row.createdAt),
    updatedAt: iso(row.updatedAt),
  };
}
