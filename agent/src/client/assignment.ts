import { JobSpec, type ReceivedJob } from "@outpost/protocol";
import type { RunnerJob } from "../job/types.ts";
import { segment } from "./http.ts";
import { configurationPath } from "./job-port.ts";

export type MappedJob = { ok: true; value: RunnerJob } | { ok: false; reason: string };

/**
 * Turns a job as the coordinator hands it out into what the runner executes. Refuses (with a
 * reason the run will show) a job without a per-run token, with a spec this agent cannot read,
 * or without a usable configuration source; nothing is guessed.
 */
export function toRunnerJob(job: ReceivedJob, address: string): MappedJob {
  const spec = JobSpec.safeParse(job.spec);
  if (!spec.success) {
    const issue = spec.error.issues[0];
    return {
      ok: false,
      reason: `the agent cannot read this job's spec (${issue?.path.join(".") || "spec"}: ${issue?.message ?? "invalid"}); upgrade the agent`,
    };
  }
  if (job.runToken === undefined) {
    return { ok: false, reason: "the coordinator sent the job without a per-run token" };
  }
  // The workspace expects an identity; running without it would fail later, less clearly.
  if (job.workloadIdentity !== undefined && "error" in job.workloadIdentity) {
    return { ok: false, reason: job.workloadIdentity.error };
  }
  const s = spec.data;
  const configuration = s.configuration;
  let source: RunnerJob["source"];
  if (configuration === null) {
    return { ok: false, reason: "the run has no configuration version" };
  }
  if (configuration.source === "upload") {
    if (configuration.sha256 === null) {
      return { ok: false, reason: `configuration ${configuration.id} has no sha256` };
    }
    source = {
      kind: "configuration",
      url: `${address}${configurationPath(job.jobId)}`,
      sha256: configuration.sha256,
    };
  } else {
    if (configuration.repoUrl === null || configuration.commitSha === null) {
      return {
        ok: false,
        reason: `configuration ${configuration.id} names no repository and commit to clone`,
      };
    }
    source = { kind: "vcs", repoUrl: configuration.repoUrl, commitSha: configuration.commitSha };
  }
  return {
    ok: true,
    value: {
      jobId: job.jobId,
      runId: job.runId,
      workspaceId: job.workspaceId,
      workspaceName: s.workspaceName,
      phase: job.phase,
      operation: s.operation,
      isSpeculative: s.isSpeculative,
      isFork: s.isFork,
      planSha256: s.planSha256,
      planOptions: { targetAddrs: s.targetAddrs, replaceAddrs: s.replaceAddrs, refresh: s.refresh },
      engine: s.engine,
      engineVersion: s.engineVersion,
      stackName: s.stackName,
      workingDirectory: s.workingDirectory,
      variables: job.variables ?? [],
      withheldVariables: job.withheldVariables ?? [],
      source,
      runToken: job.runToken,
      stateAddress: `${address}/state/v1/${segment(job.workspaceId)}`,
      workloadIdentityToken: job.workloadIdentity?.token ?? null,
    },
  };
}
