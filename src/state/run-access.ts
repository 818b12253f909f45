/**
 * What a job's run token may do to state, pure. Every job may read and lock its own workspace's
 * state; only the apply job of a confirmed, non-speculative run that is not a fork's writes it.
 * Another workspace's state is reachable only as its outputs, and only when that workspace
 * shares them with the job's workspace (never with a fork's job). No I/O here.
 */
import { fail, ok, type Result } from "@outpost/common";
import type { RemoteStateSharing } from "../workspaces/model.ts";

/** The facts of the job a run token belongs to. */
export type RunScope = {
  workspaceId: string;
  phase: "plan" | "apply";
  status: string;
  isSpeculative: boolean;
  isFork: boolean;
};

/** A workspace as a producer of remote state. */
export type SharingWorkspace = {
  id: string;
  remoteStateSharing: RemoteStateSharing;
  remoteStateConsumerIds: string[] | null;
};

/**
 * Whether the job may write (POST/PUT) its workspace's state: the apply phase of a run that is
 * applying (so it was confirmed), not speculative and not a fork's. The refusal says why.
 */
export function mayWriteState(scope: RunScope): Result<true, string> {
  if (scope.isFork) {
    return fail("a job of a pull request from a fork never writes state");
  }
  if (scope.isSpeculative) {
    return fail("a speculative plan never writes state");
  }
  if (scope.phase !== "apply") {
    return fail("a plan job reads and locks state but never writes it; the apply job does");
  }
  if (scope.status !== "applying") {
    return fail(`the run is ${scope.status}; only an applying run writes state`);
  }
  return ok(true);
}

/** Whether `producer` shares its outputs with a job of `consumer` (forks never get them). */
export function sharesOutputsWith(
  producer: SharingWorkspace,
  consumer: { workspaceId: string; isFork: boolean },
): boolean {
  if (producer.id === consumer.workspaceId) {
    return true;
  }
  if (consumer.isFork) {
    return false;
  }
  switch (producer.remoteStateSharing) {
    case "none":
      return false;
    case "organization":
      return true;
    case "workspaces":
      return (producer.remoteStateConsumerIds ?? []).includes(consumer.workspaceId);
  }
}

/**
 * The state document a consumer reads for `terraform_remote_state`: the producer's lineage,
 * serial and outputs exactly as stored (sensitive ones included and marked, which the data
 * source needs), and no resources.
 */
export function outputsOnlyState(input: {
  serial: number;
  lineage: string;
  terraformVersion: string | null;
  outputsJson: string;
}): string {
  const head = JSON.stringify({
    version: 4,
    terraform_version: input.terraformVersion ?? "1.0.0",
    serial: input.serial,
    lineage: input.lineage,
  });
  // The stored outputs are the producer's own JSON object, spliced in as they are.
  return `${head.slice(0, -1)},"outputs":${input.outputsJson},"resources":[],"check_results":null}`;
}
