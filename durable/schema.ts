/**
 * The AgentPool Durable Object's SQLite schema, applied in its constructor. Times are integer ms
 * since the epoch. `due_at` columns hold the next deadline of a row so the one alarm is the
 * minimum over three indexes.
 */

/** Bump with any change below; a later version upgrades rows written under an earlier one. */
export const SCHEMA_VERSION = 3;

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
    due_at INTEGER
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
  // Job-ended events not yet delivered to onJobEnded; retried by the alarm until they land.
  `CREATE TABLE IF NOT EXISTS outbox (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    event TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    next_attempt_at INTEGER NOT NULL
  )`,
  `CREATE INDEX IF NOT EXISTS outbox_due_idx ON outbox (next_attempt_at)`,
];

/** Changes to tables an earlier version created, applied once to objects older than `version`. */
const UPGRADES: readonly { version: number; statement: string }[] = [
  // Version 3: agents report how they confine jobs (null for rows written before).
  { version: 3, statement: "ALTER TABLE agents ADD COLUMN isolation TEXT" },
];

/** The schema version an existing object was written with; null for a new, empty object. */
function storedVersion(sql: SqlStorage): number | null {
  const hasSettings = sql
    .exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'settings'")
    .toArray();
  if (hasSettings.length === 0) {
    return null;
  }
  const row = sql
    .exec<{ value: string }>("SELECT value FROM settings WHERE key = 'schema_version'")
    .toArray()[0];
  return row === undefined ? null : Number(row.value);
}

/**
 * Every column holding a point in time, per table. Tests shift them all back by the same amount
 * to make time pass without sleeping.
 */
export const TIME_COLUMNS: Readonly<Record<string, readonly string[]>> = {
  agents: ["registered_at", "last_contact_at", "poll_held_until", "state_changed_at", "due_at"],
  jobs: [
    "enqueued_at",
    "leased_at",
    "started_at",
    "reported_at",
    "cancel_requested_at",
    "ended_at",
    "due_at",
  ],
  outbox: ["next_attempt_at"],
};

/**
 * Creates the schema if missing and records its version (DO SQLite refuses `PRAGMA user_version`,
 * so the version lives in `settings`). Synchronous, so the constructor applies it in one gate.
 */
export function applySchema(sql: SqlStorage): void {
  const stored = storedVersion(sql);
  for (const statement of SCHEMA_STATEMENTS) {
    sql.exec(statement);
  }
  for (const upgrade of UPGRADES) {
    if (stored !== null && stored < upgrade.version) {
      sql.exec(upgrade.statement);
    }
  }
  sql.exec(
    "INSERT INTO settings (key, value) VALUES ('schema_version', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
    String(SCHEMA_VERSION),
  );
}
