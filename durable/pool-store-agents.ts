/** The pool's agent registry: each agent's row, its liveness state and its next deadline. */
import type { PoolStore } from "./pool-store.ts";
import type { RegisterInput } from "./pool-types.ts";
import type { AgentRow } from "./pool-views.ts";
import { type AgentState, agentDueAt, type PoolSettings } from "./queue.ts";

/** One listed agent's load: what "why does my job wait" weighs. */
export type AgentLoad = {
  state: AgentState;
  capacity: number;
  accepts: string;
  last_contact_at: number;
  held: number;
};

export class AgentsTable {
  constructor(private readonly store: PoolStore) {}

  private get sql(): SqlStorage {
    return this.store.sql;
  }

  /** An agent by id, whatever its state; null once dropped after the retention window. */
  get(agentId: string): AgentRow | null {
    return (
      this.sql.exec<AgentRow>("SELECT * FROM agents WHERE id = ?", agentId).toArray()[0] ?? null
    );
  }

  /** Stores a newly registered agent, online from `now`, with its first liveness deadline. */
  insert(id: string, input: RegisterInput, now: number, settings: PoolSettings): void {
    const row: AgentRow = {
      id,
      token_id: input.tokenId,
      name: input.name,
      version: input.version,
      os: input.os,
      arch: input.arch,
      capacity: input.capacity,
      accepts: input.acceptedPhases.join(","),
      isolation: input.isolation ?? null,
      engines: input.engines === undefined ? null : JSON.stringify(input.engines),
      state: "online",
      state_reason: null,
      registered_at: now,
      last_contact_at: now,
      poll_held_until: null,
      state_changed_at: now,
      due_at: null,
    };
    this.sql.exec(
      `INSERT INTO agents (id, token_id, name, version, os, arch, capacity, accepts, isolation,
         engines, state, registered_at, last_contact_at, state_changed_at, due_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      row.id,
      row.token_id,
      row.name,
      row.version,
      row.os,
      row.arch,
      row.capacity,
      row.accepts,
      row.isolation,
      row.engines,
      row.state,
      row.registered_at,
      row.last_contact_at,
      row.state_changed_at,
      dueOf(row, settings),
    );
  }

  /** Records contact: an unknown agent is online again. Offline agents are left as they are. */
  touch(
    agent: AgentRow,
    now: number,
    pollHeldUntil: number | null,
    settings: PoolSettings,
  ): AgentRow {
    if (agent.state !== "online" && agent.state !== "unknown") {
      return agent;
    }
    const touched = {
      ...agent,
      state: "online" as const,
      state_reason: null,
      last_contact_at: Math.max(agent.last_contact_at, now),
      poll_held_until: pollHeldUntil,
      state_changed_at: agent.state === "online" ? agent.state_changed_at : now,
    };
    const next: AgentRow = { ...touched, due_at: dueOf(touched, settings) };
    // One statement, row and deadline together: this runs on every poll.
    this.sql.exec(
      "UPDATE agents SET state = 'online', state_reason = NULL, last_contact_at = ?, poll_held_until = ?, state_changed_at = ?, due_at = ? WHERE id = ?",
      next.last_contact_at,
      next.poll_held_until,
      next.state_changed_at,
      next.due_at,
      agent.id,
    );
    return next;
  }

  /** Moves an agent to `state` as of `at`; a held poll no longer counts as contact. */
  setState(
    agent: AgentRow,
    state: AgentState,
    reason: string | null,
    at: number,
    settings: PoolSettings,
  ): AgentRow {
    const next: AgentRow = {
      ...agent,
      state,
      state_reason: reason,
      state_changed_at: at,
      poll_held_until: null,
    };
    next.due_at = dueOf(next, settings);
    this.sql.exec(
      "UPDATE agents SET state = ?, state_reason = ?, state_changed_at = ?, poll_held_until = NULL, due_at = ? WHERE id = ?",
      state,
      reason,
      at,
      next.due_at,
      agent.id,
    );
    return next;
  }

  /** Forgets an agent (offline past the retention window). */
  drop(agentId: string): void {
    this.sql.exec("DELETE FROM agents WHERE id = ?", agentId);
  }

  /** Agents whose deadline has passed, earliest first. */
  due(now: number): AgentRow[] {
    return this.sql
      .exec<AgentRow>("SELECT * FROM agents WHERE due_at <= ? ORDER BY due_at", now)
      .toArray();
  }

  /** Every agent still in the registry, in registration order. */
  all(): AgentRow[] {
    return this.sql.exec<AgentRow>("SELECT * FROM agents ORDER BY registered_at, id").toArray();
  }

  /** The online or unknown agents registered with a token. */
  liveOfToken(tokenId: string): AgentRow[] {
    return this.sql
      .exec<AgentRow>(
        "SELECT * FROM agents WHERE token_id = ? AND state IN ('online', 'unknown') ORDER BY registered_at, id",
        tokenId,
      )
      .toArray();
  }

  /**
   * The agents that are offline (errored, exited) and not yet dropped, by id. Read through a
   * partial index, so it costs as many rows as there are such agents, not as many as are
   * registered or polling.
   */
  offline(): Map<string, AgentRow> {
    const rows = this.sql
      .exec<AgentRow>("SELECT * FROM agents WHERE state IN ('errored', 'exited')")
      .toArray();
    return new Map(rows.map((row) => [row.id, row]));
  }

  /**
   * Every agent still listed (online or unknown, or offline within `retentionMs` of its last
   * contact) with the jobs it holds: one statement, however many agents there are.
   */
  loads(now: number, retentionMs: number): AgentLoad[] {
    return this.sql
      .exec<AgentLoad>(
        `SELECT a.state, a.capacity, a.accepts, a.last_contact_at,
           (SELECT COUNT(*) FROM jobs j WHERE j.agent_id = a.id AND j.state IN ('leased', 'started')) AS held
         FROM agents a WHERE a.state IN ('online', 'unknown') OR a.last_contact_at + ? > ?`,
        retentionMs,
        now,
      )
      .toArray();
  }

  /** Each token's latest contact by any agent still registered with it. */
  lastContactByToken(): Record<string, number> {
    const rows = this.sql
      .exec<{ token_id: string; at: number }>(
        "SELECT token_id, MAX(last_contact_at) AS at FROM agents GROUP BY token_id",
      )
      .toArray();
    return Object.fromEntries(rows.map((row) => [row.token_id, row.at]));
  }

  /** Moves every agent's deadline to what `settings` say. */
  reschedule(settings: PoolSettings): void {
    for (const agent of this.all()) {
      this.sql.exec("UPDATE agents SET due_at = ? WHERE id = ?", dueOf(agent, settings), agent.id);
    }
  }

  /** Forgets every agent (the pool was deleted). */
  deleteAll(): void {
    this.sql.exec("DELETE FROM agents");
  }
}

function dueOf(agent: AgentRow, settings: PoolSettings): number {
  return agentDueAt(
    {
      state: agent.state,
      lastContactAt: agent.last_contact_at,
      pollHeldUntil: agent.poll_held_until,
      stateChangedAt: agent.state_changed_at,
    },
    settings,
  );
}
