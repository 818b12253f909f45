/**
 * The pool's registry changes: registering agents, goodbyes, revoked tokens and retiring the
 * whole pool. Synchronous, like `pool-ops.ts`, so each is one transaction.
 */
import { newId } from "../src/db/ids.ts";
import { loseAgent, type OpsContext, systemEnd } from "./pool-ops.ts";
import { type AgentRow, endJob, getAgent, insertAgent, type JobRow } from "./pool-store.ts";
import type { RegisterInput } from "./pool-types.ts";

/** Registers an agent, online from now, under the token that authenticated it. */
export function registerAgent(ctx: OpsContext, input: RegisterInput): string {
  const agentId = newId("agent");
  insertAgent(
    ctx.sql,
    {
      id: agentId,
      token_id: input.tokenId,
      name: input.name,
      version: input.version,
      os: input.os,
      arch: input.arch,
      capacity: input.capacity,
      accepts: input.acceptedPhases.join(","),
      isolation: input.isolation ?? null,
      state: "online",
      state_reason: null,
      registered_at: ctx.now,
      last_contact_at: ctx.now,
      poll_held_until: null,
      state_changed_at: ctx.now,
      due_at: null,
    },
    ctx.settings,
  );
  return agentId;
}

/** A graceful exit: unstarted leases requeue, jobs still running fail. Repeats are no-ops. */
export function sayGoodbye(ctx: OpsContext, agent: AgentRow, reason: string | null): void {
  if (agent.state === "online" || agent.state === "unknown") {
    const jobReason = `agent ${agent.id} exited while running this job`;
    loseAgent(ctx, agent, "exited", reason ?? "said goodbye", jobReason);
  }
}

/** The agents registered with a revoked token exit; returns their ids. */
export function revokeTokenAgents(ctx: OpsContext, tokenId: string): string[] {
  const ids = ctx.sql
    .exec<{ id: string }>(
      "SELECT id FROM agents WHERE token_id = ? AND state IN ('online', 'unknown')",
      tokenId,
    )
    .toArray()
    .map((row) => row.id);
  for (const id of ids) {
    const agent = getAgent(ctx.sql, id);
    if (agent) {
      const jobReason = `the token of agent ${id} was revoked while it ran this job`;
      loseAgent(ctx, agent, "exited", "its agent token was revoked", jobReason);
    }
  }
  return ids;
}

/** The pool is deleted: every unfinished job errors and every agent is exited. */
export function retirePool(ctx: OpsContext): void {
  const open = ctx.sql.exec<JobRow>("SELECT * FROM jobs WHERE state <> 'ended'").toArray();
  for (const job of open) {
    endJob(ctx.sql, job, systemEnd("errored", "the agent pool was deleted"), ctx.now);
  }
  ctx.sql.exec("UPDATE agents SET state = 'exited', state_reason = 'the agent pool was deleted'");
  ctx.sql.exec("INSERT OR REPLACE INTO settings (key, value) VALUES ('retired', '1')");
}

/** Empties a retired pool's storage, keeping the undelivered events and the retired mark. */
export function clearRetiredPool(sql: SqlStorage): void {
  for (const table of ["agents", "jobs", "class_rounds", "workspace_rounds"]) {
    sql.exec(`DELETE FROM ${table}`);
  }
}

export function isRetired(sql: SqlStorage): boolean {
  return sql.exec("SELECT 1 FROM settings WHERE key = 'retired'").toArray().length > 0;
}
