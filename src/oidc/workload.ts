/**
 * Workload identity tokens for jobs: what a job of a workspace with `workloadIdentity` on
 * receives at lease time. `sub` has Terraform Cloud's shape without the project segment
 * (`organization:<org>:workspace:<workspace>:run_phase:<plan|apply>`), so trust policies written
 * for Terraform Cloud translate; `aud` is the workspace's audience or the issuer URL; it lives the
 * workspace's `workloadIdentityTokenLifetimeSeconds` (15 minutes by default, never past the
 * phase's timeout), and the agent renews it through the job's run token while the job runs
 * (`renewWorkloadIdentity`). A fork's job never receives one.
 */
import { ok } from "@outpost/common";
import { JobSpec, type WorkloadIdentity } from "@outpost/protocol";
import { eq, sql } from "drizzle-orm";
import { decodeJwt } from "jose";
import type { LeasedJob } from "../../durable/pool-types.ts";
import type { Database } from "../db/client.ts";
import { organizations, type runs, workspaces } from "../db/schema.ts";
import type { Deps } from "../deps.ts";
import { type Outcome, refuse } from "../lib/reason.ts";
import { parseJobId } from "../runs/model.ts";
import { getRunById } from "../runs/queries.ts";
import { issuerUrl, signToken } from "./issuer.ts";

export type WorkloadRun = {
  id: string;
  orgId: string;
  workspaceId: string;
  operation: (typeof runs.$inferSelect)["operation"];
  isSpeculative: boolean;
  isFork: boolean;
  plannedPoolId: string | null;
};

/** The documented phase timeouts, for a deployment whose wrangler.toml lacks them. */
const DEFAULT_PLAN_TIMEOUT_MS = 2 * 3_600_000;
const DEFAULT_APPLY_TIMEOUT_MS = 24 * 3_600_000;

/** How long a phase may run (the reconciler errors it after that): its token must not outlive it. */
export function phaseTimeoutMs(
  env: Pick<Env, "PLAN_TIMEOUT_MS" | "APPLY_TIMEOUT_MS">,
  phase: "plan" | "apply",
): number {
  const configured = Number(phase === "plan" ? env.PLAN_TIMEOUT_MS : env.APPLY_TIMEOUT_MS);
  const fallback = phase === "plan" ? DEFAULT_PLAN_TIMEOUT_MS : DEFAULT_APPLY_TIMEOUT_MS;
  return Number.isFinite(configured) && configured > 0 ? configured : fallback;
}

/** The claims of a job's token (besides iss, iat, nbf, exp and jti, which signing adds). */
export function workloadClaims(input: {
  org: { id: string; name: string };
  workspace: { id: string; name: string };
  run: WorkloadRun;
  jobId: string;
  phase: "plan" | "apply";
  poolId: string | null;
  engine: string;
  engineVersion: string;
  audience: string;
}) {
  const { org, workspace, run } = input;
  return {
    sub: `organization:${org.name}:workspace:${workspace.name}:run_phase:${input.phase}`,
    aud: input.audience,
    outpost_organization_id: org.id,
    outpost_organization_name: org.name,
    outpost_workspace_id: workspace.id,
    outpost_workspace_name: workspace.name,
    outpost_run_id: run.id,
    outpost_run_phase: input.phase,
    outpost_run_operation: run.operation,
    outpost_job_id: input.jobId,
    outpost_pool_id: input.poolId,
    outpost_engine: input.engine,
    outpost_engine_version: input.engineVersion,
    outpost_speculative: run.isSpeculative,
    outpost_fork: run.isFork,
  };
}

/**
 * What a lease reads about the job's workspace and organization to sign its identity: one
 * statement, so it joins the lease's own D1 batch instead of adding a round trip.
 */
export function workloadSubjectQuery(db: Database, workspaceId: string) {
  return db
    .select({
      isEnabled: workspaces.workloadIdentity,
      audience: workspaces.workloadIdentityAudience,
      lifetimeSeconds: workspaces.workloadIdentityTokenLifetimeSeconds,
      // Aliased: in a D1 batch rows come back keyed by column name, and both tables have `name`.
      workspaceName: sql<string>`${workspaces.name}`.as("workspace_name"),
      poolId: workspaces.poolId,
      engine: workspaces.engine,
      engineVersion: workspaces.engineVersion,
      orgName: sql<string>`${organizations.name}`.as("organization_name"),
    })
    .from(workspaces)
    .innerJoin(organizations, eq(organizations.id, workspaces.orgId))
    .where(eq(workspaces.id, workspaceId))
    .limit(1);
}

export type WorkloadSubject = Awaited<ReturnType<typeof workloadSubjectQuery>>[number];

/**
 * The workload identity of a leased job: undefined when its workspace has none enabled (or is
 * gone) or the job is a fork's; `{ error }` when the deployment cannot sign (no `PUBLIC_URL` or
 * keys), so the agent fails the job rather than run it without the identity it expects.
 */
export async function workloadIdentityFor(
  deps: Pick<Deps, "env" | "now">,
  subject: WorkloadSubject | undefined,
  run: WorkloadRun,
  leased: Pick<LeasedJob, "jobId" | "phase"> & { spec?: unknown },
): Promise<WorkloadIdentity | undefined> {
  if (run.isFork || !subject?.isEnabled) {
    return undefined;
  }
  const { env } = deps;
  const spec = JobSpec.safeParse(leased.spec);
  const now = deps.now();
  const claims = workloadClaims({
    org: { id: run.orgId, name: subject.orgName },
    workspace: { id: run.workspaceId, name: subject.workspaceName },
    run,
    jobId: leased.jobId,
    phase: leased.phase,
    poolId: run.plannedPoolId ?? subject.poolId,
    engine: spec.success ? spec.data.engine : subject.engine,
    engineVersion: spec.success ? spec.data.engineVersion : subject.engineVersion,
    audience: subject.audience ?? issuerUrl(env) ?? "",
  });
  // Short-lived: the agent renews it while the job runs, so a copy taken by workspace code is
  // worthless soon after the job ends. Never longer than the phase may run.
  const lifetimeMs = Math.min(subject.lifetimeSeconds * 1000, phaseTimeoutMs(env, leased.phase));
  const signed = await signToken(env, claims, now + lifetimeMs, now);
  return signed.ok
    ? { token: signed.value }
    : { error: `the coordinator cannot issue workload identity tokens: ${signed.reason}` };
}

/**
 * A fresh workload identity token for the job of run token `principal`, with the claims it got at
 * lease time: `conflict` when the job has none (its workspace's is off, or a fork's job),
 * `unavailable` when the deployment cannot sign tokens. The run
 * token is only accepted while the job's lease is live, so nothing renews a token after its job.
 */
export async function renewWorkloadIdentity(
  deps: Pick<Deps, "db" | "env" | "now">,
  principal: { runId: string; jobId: string; workspaceId: string },
): Promise<
  Outcome<{ token: string; expiresAt: string }, "unavailable" | "conflict" | "not_found">
> {
  const job = parseJobId(principal.jobId);
  const run = await getRunById(deps.db, principal.runId);
  if (!job || !run) {
    return refuse("not_found", `job ${principal.jobId} not found`);
  }
  const [subject] = await workloadSubjectQuery(deps.db, run.workspaceId);
  const identity = await workloadIdentityFor(deps, subject, run, {
    jobId: principal.jobId,
    phase: job.phase,
  });
  if (identity === undefined) {
    return refuse(
      "conflict",
      `job ${principal.jobId} has no workload identity: its workspace has none, or it plans a fork's change`,
    );
  }
  if ("error" in identity) {
    return refuse("unavailable", identity.error);
  }
  const exp = decodeJwt(identity.token).exp ?? 0;
  return ok({ token: identity.token, expiresAt: new Date(exp * 1000).toISOString() });
}
