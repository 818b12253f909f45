/**
 * The AgentPool Durable Object's SQLite schema, as statements the store (`pool-store.ts`) applies
 * in the object's constructor. Times are integer ms since the epoch. `due_at` columns hold the
 * next deadline of a row so the one alarm is the minimum over three indexes.
 */

/** Bump with any change below, and add the statements that bring older storage up to it. */
export const SCHEMA_VERSION = 5;

export const SCHEMA_STATEMENTS: readonly string[] = [
  `CREATE TABLE IF NOT EXISTS settings (key TEXT PRIMARY KEY, value TEXT NOT NULL)`,
  `CREATE TABLE IF NOT EXISTS agents (
    id TEXT PRIMARY KEY,
    token_id TEXT NOT NULL,
    name TEXT,
    version TEXT NOT NULL,
    os TEXT NOT NULL,
    arch TEXT NOT NULL,
    capacity INTEGER NOT NULL,
    accepts TEXT NOT NULL,
    isolation TEXT,
    engines TEXT,
    state TEXT NOT NULL,
    state_reason TEXT,
    registered_at INTEGER NOT NULL,
    last_contact_at INTEGER NOT NULL,
    poll_held_until INTEGER,
    state_changed_at INTEGER NOT NULL,
    due_at INTEGER
  )`,
  `CREATE INDEX IF NOT EXISTS agents_due_idx ON agents (due_at) WHERE due_at IS NOT NULL`,
  `CREATE INDEX IF NOT EXISTS agents_token_idx ON agents (token_id)`,
  // Offline agents still retained: what every change checks held polls against.
  `CREATE INDEX IF NOT EXISTS agents_offline_idx ON agents (id) WHERE state IN ('errored', 'exited')`,
  `CREATE TABLE IF NOT EXISTS jobs (
    job_id TEXT PRIMARY KEY,
    run_id TEXT NOT NULL,
    workspace_id TEXT NOT NULL,
    org_id TEXT NOT NULL,
    phase TEXT NOT NULL,
    priority_class INTEGER NOT NULL,
    spec TEXT NOT NULL,
    round INTEGER NOT NULL,
    seq INTEGER NOT NULL,
    state TEXT NOT NULL,
    agent_id TEXT,
    lease_id TEXT,
    enqueued_at INTEGER NOT NULL,
    leased_at INTEGER,
    started_at INTEGER,
    reported_at INTEGER,
    cancel_requested_at INTEGER,
    forced INTEGER NOT NULL DEFAULT 0,
    ended_at INTEGER,
    ended_by TEXT,
    outcome TEXT,
    exit_code INTEGER,
    reason TEXT,
    plan_summary TEXT,
    due_at INTEGER,
    timeout_ms INTEGER NOT NULL,
    agent_lost INTEGER NOT NULL DEFAULT 0
  )`,
  // The queue order: class, fair-share round, arrival. Only queued rows are in it.
  `CREATE INDEX IF NOT EXISTS jobs_queue_idx ON jobs (priority_class, round, seq) WHERE state = 'queued'`,
  `CREATE INDEX IF NOT EXISTS jobs_agent_idx ON jobs (agent_id) WHERE state IN ('leased', 'started')`,
  `CREATE INDEX IF NOT EXISTS jobs_due_idx ON jobs (due_at) WHERE due_at IS NOT NULL`,
  `CREATE TABLE IF NOT EXISTS class_rounds (priority_class INTEGER PRIMARY KEY, current_round INTEGER NOT NULL)`,
  `CREATE TABLE IF NOT EXISTS workspace_rounds (
    priority_class INTEGER NOT NULL,
    workspace_id TEXT NOT NULL,
    next_round INTEGER NOT NULL,
    PRIMARY KEY (priority_class, workspace_id)
  ) WITHOUT ROWID`,
  // Job-ended events the pool created on its own, not yet handed to the JOB_EVENTS queue.
  `CREATE TABLE IF NOT EXISTS outbox (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    event TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    next_attempt_at INTEGER NOT NULL
  )`,
  `CREATE INDEX IF NOT EXISTS outbox_due_idx ON outbox (next_attempt_at)`,
];

/**
 * Statements that upgrade storage written under an older schema version, by the version they
 * lead to. Version 3 gave every job its own phase timeout; older jobs get the timeouts that were
 * fixed then (plan 2 h, apply 24 h). Version 4 records how each agent confines its jobs (null
 * for agents registered before) and marks jobs the pool ended because their agent was lost.
 * Version 5 keeps the engine versions each agent reported at registration (JSON; null before).
 */
export const UPGRADES: Readonly<Record<number, readonly string[]>> = {
  3: [
    "ALTER TABLE jobs ADD COLUMN timeout_ms INTEGER NOT NULL DEFAULT 7200000",
    "UPDATE jobs SET timeout_ms = 86400000 WHERE phase = 'apply'",
  ],
  4: [
    "ALTER TABLE agents ADD COLUMN isolation TEXT",
    "ALTER TABLE jobs ADD COLUMN agent_lost INTEGER NOT NULL DEFAULT 0",
  ],
  5: ["ALTER TABLE agents ADD COLUMN engines TEXT"],
};
