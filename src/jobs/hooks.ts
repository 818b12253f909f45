/**
 * Where the pool scheduler meets the rest of the coordinator. The agent routes call
 * {@link onJobLeased} before handing a job to an agent and {@link onJobStarted} once it is
 * acknowledged; the AgentPool Durable Object calls {@link onJobEnded} (at least once) whenever a
 * job ends. Each hands the event to the run lifecycle (`src/runs/events.ts`).
 */

import type { JobAssignment } from "@outpost/protocol";
import type { JobEndedEvent, LeasedJob } from "../../durable/pool-types.ts";
import { createDb } from "../db/client.ts";
import { base32 } from "../db/ids.ts";
import { auditEvents } from "../db/schema.ts";
import { handleJobEnded, handleJobStarted, prepareLease } from "../runs/events.ts";

/** The agent acknowledged a lease: the run is planning or applying now. */
export async function onJobStarted(
  env: Env,
  job: { runId: string; jobId: string; leaseId: string; phase: "plan" | "apply" },
): Promise<void> {
  await handleJobStarted({ env, db: createDb(env.DB) }, job);
}

/**
 * Turns a lease into what the agent receives: the job and its spec as the run service queued it,
 * plus a fresh per-run token and the workspace variables (sensitive ones decrypted only here).
 */
export async function onJobLeased(env: Env, leased: LeasedJob): Promise<JobAssignment> {
  const extras = await prepareLease({ env, db: createDb(env.DB) }, leased);
  return {
    ...(extras ?? {}),
    jobId: leased.jobId,
    leaseId: leased.leaseId,
    runId: leased.runId,
    workspaceId: leased.workspaceId,
    phase: leased.phase,
    startBy: new Date(leased.startBy).toISOString(),
    spec: leased.spec,
  };
}

/**
 * Records that a job ended (`job.finished`, `job.errored` or `job.canceled`, by its agent or by
 * "system"). Idempotent: a redelivered event maps to the same audit id and is written once.
 * Throwing makes the pool retry the delivery later.
 */
export async function onJobEnded(env: Env, event: JobEndedEvent): Promise<void> {
  const db = createDb(env.DB);
  await handleJobEnded({ env, db }, event);
  await db
    .insert(auditEvents)
    .values({
      id: await eventId(`${event.jobId}:${event.action}:${event.endedAt}`),
      orgId: event.orgId,
      actor: event.actor,
      action: event.action,
      targetType: "job",
      targetId: event.jobId,
      data: {
        runId: event.runId,
        workspaceId: event.workspaceId,
        phase: event.phase,
        outcome: event.outcome,
        agentId: event.agentId,
        reason: event.reason,
        exitCode: event.exitCode,
        planSummary: event.planSummary,
        forced: event.forced,
      },
      createdAt: event.endedAt,
    })
    .onConflictDoNothing({ target: auditEvents.id })
    .run();
}

/** A deterministic event id, so the same ending recorded twice is one row. */
async function eventId(key: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(key));
  return `evt_${base32(new Uint8Array(digest).slice(0, 16))}`;
}
