/**
 * All of the AgentPool's SQL, in one store cut along its tables: settings and the pool's own
 * marks (`pool-store-settings.ts`), jobs and their fair-share rounds (`pool-store-jobs.ts`),
 * agents (`pool-store-agents.ts`) and the outbox (`pool-store-outbox.ts`). This file holds what
 * spans them: the schema and the earliest deadline. Every method is synchronous, so a caller's
 * sequence of them runs inside one input gate and lands as one implicit transaction.
 */
import { AgentsTable } from "./pool-store-agents.ts";
import { JobFigures } from "./pool-store-figures.ts";
import { JobsTable } from "./pool-store-jobs.ts";
import { OutboxTable } from "./pool-store-outbox.ts";
import { SettingsTable } from "./pool-store-settings.ts";
import { SCHEMA_STATEMENTS, SCHEMA_VERSION, UPGRADES } from "./schema.ts";

export type { AgentLoad } from "./pool-store-agents.ts";
export type { JobEnd } from "./pool-store-jobs.ts";
export type { AgentRow, JobRow } from "./pool-views.ts";

export class PoolStore {
  readonly settings = new SettingsTable(this);
  readonly jobs = new JobsTable(this);
  readonly figures = new JobFigures(this);
  readonly agents = new AgentsTable(this);
  readonly outbox = new OutboxTable(this);

  /**
   * The object's SQLite handle. Every section reads it from here, so a test or the bench that
   * swaps it (to count statements) sees every statement of every section.
   */
  sql: SqlStorage;

  constructor(sql: SqlStorage) {
    this.sql = sql;
  }

  /** Creates the schema, or brings storage written under an older version up to this one. */
  migrate(): void {
    const hadJobs = this.sql
      .exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'jobs'")
      .toArray().length;
    for (const statement of SCHEMA_STATEMENTS) {
      this.sql.exec(statement);
    }
    const stored = this.settings.value("schema_version");
    const from = stored !== null ? Number(stored) : hadJobs ? 2 : SCHEMA_VERSION;
    for (let version = from + 1; version <= SCHEMA_VERSION; version++) {
      for (const statement of UPGRADES[version] ?? []) {
        this.sql.exec(statement);
      }
    }
    this.settings.setValue("schema_version", String(SCHEMA_VERSION));
  }

  /** Marks the pool deleted and empties it, keeping only the events still to be sent. */
  retire(): void {
    this.settings.markRetired();
    this.agents.deleteAll();
    this.jobs.deleteAll();
  }

  /** The earliest deadline of any row (agent, job, outbox event), or null when nothing is due. */
  earliestDue(): number | null {
    return this.sql
      .exec<{ due: number | null }>(
        `SELECT MIN(due) AS due FROM (
           SELECT MIN(due_at) AS due FROM agents WHERE due_at IS NOT NULL
           UNION ALL SELECT MIN(due_at) FROM jobs WHERE due_at IS NOT NULL
           UNION ALL SELECT MIN(next_attempt_at) FROM outbox)`,
      )
      .one().due;
  }
}
