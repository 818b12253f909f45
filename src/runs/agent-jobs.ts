/**
 * The agent's calls about its jobs, as the run service makes them: each asks the pool first and
 * then applies what the pool answered to D1 (`events.ts`), so the pool never calls back into
 * the Worker. A lost application is repeated by the agent's retry or by the reconciler.
 */

import { fail, ok } from "@outpost/common";
import type { ExitInstruction, JobAssignment } from "@outpost/protocol";
import type { AgentRef, FinishReport } from "../../durable/pool-types.ts";
import { poolRefusal } from "../agents/service.ts";
import type { Deps } from "../deps.ts";
import type { Outcome } from "../lib/reason.ts";
import { poolStub } from "../pools/service.ts";
import { handleJobEnded, handleJobStarted, prepareLease } from "./events.ts";
import { recordEngineVersionQuery } from "./job-records.ts";
import { errorRunOutsideScope } from "./pool-scope.ts";

/** What a poll for work answers: a job, nothing within the wait, or an instruction to exit. */
export type NextJob =
  | { kind: "job"; job: JobAssignment }
  | { kind: "none" }
  | { kind: "exit"; exit: ExitInstruction };

/**
 * An agent asks for work: the pool leases a job (now, or when one arrives while the poll is
 * held), and the lease becomes what the agent receives: the job and its spec as queued, a fresh
 * per-run token and the workspace's variables. A lease whose run has ended meanwhile is handed
 * out without token and variables; the agent refuses it and the job ends. A lease the pool's
 * scope no longer allows never reaches the agent: the run errors saying so, its job ends in the
 * pool, and the agent hears that there is nothing for it (it polls again). An agent the pool
 * does not know is refused `not_found`.
 */
export async function nextJob(
  deps: Deps,
  poolId: string,
  ref: AgentRef,
  waitMs: number,
): Promise<Outcome<NextJob>> {
  const polled = await poolStub(deps.env, poolId).pollJob(ref, waitMs);
  if (!polled.ok) {
    return fail(poolRefusal(polled.reason, { agentId: ref.agentId }));
  }
  if (polled.value.kind !== "job") {
    return ok(polled.value);
  }
  const leased = polled.value.job;
  const prepared = await prepareLease(deps, leased, poolId);
  if (prepared.kind === "refused") {
    await errorRunOutsideScope(deps, prepared.run, prepared.reason);
    return ok({ kind: "none" });
  }
  const job: JobAssignment = {
    ...(prepared.kind === "ready" ? prepared.extras : {}),
    jobId: leased.jobId,
    leaseId: leased.leaseId,
    runId: leased.runId,
    workspaceId: leased.workspaceId,
    phase: leased.phase,
    startBy: new Date(leased.startBy).toISOString(),
    spec: leased.spec,
  };
  return ok({ kind: "job", job });
}

/**
 * The agent acknowledged its lease: the pool starts the job, then the run moves on in D1. A
 * lease the agent no longer holds is `lease_lost`.
 */
export async function startJob(
  deps: Deps,
  poolId: string,
  ref: AgentRef,
  target: { jobId: string; leaseId: string },
) {
  const result = await poolStub(deps.env, poolId).startJob(ref, target.jobId, target.leaseId);
  if (!result.ok) {
    return fail(poolRefusal(result.reason, { agentId: ref.agentId, ...target }));
  }
  await handleJobStarted(deps, {
    runId: result.value.runId,
    orgId: result.value.orgId,
    jobId: target.jobId,
    leaseId: target.leaseId,
    phase: result.value.phase,
    poolId,
    agent: result.value.agent,
  });
  return ok(result.value);
}

/**
 * The agent reports how its job ended: the pool ends it (without waiting on anything else) and
 * answers the ending, which is applied to D1 here before the agent hears back, with the exact
 * engine version the agent ran. A repeated finish gets the same ending and applies it again,
 * which changes nothing the second time.
 */
export async function finishJob(
  deps: Deps,
  poolId: string,
  ref: AgentRef,
  target: { jobId: string; leaseId: string },
  report: FinishReport,
  engineVersion: string | null = null,
) {
  const result = await poolStub(deps.env, poolId).finishJob(
    ref,
    target.jobId,
    target.leaseId,
    report,
  );
  if (!result.ok) {
    return fail(poolRefusal(result.reason, { agentId: ref.agentId, ...target }));
  }
  if (engineVersion !== null) {
    await recordEngineVersionQuery(deps.db, target.jobId, engineVersion);
  }
  await handleJobEnded(deps, result.value.ending);
  return ok(result.value);
}
