/**
 * The pool's settings table, one key each: its liveness settings, the deleted mark, the job
 * sequence and the schema version.
 */
import type { PoolStore } from "./pool-store.ts";
import { DEFAULT_POOL_SETTINGS, mergeSettings, type PoolSettings } from "./queue.ts";

export class SettingsTable {
  private retired: boolean | undefined;

  constructor(private readonly store: PoolStore) {}

  /** The pool's settings as last configured, or the defaults. */
  read(): PoolSettings {
    const value = this.value("pool");
    return value ? mergeSettings(JSON.parse(value)) : { ...DEFAULT_POOL_SETTINGS };
  }

  /** Stores the settings and moves every deadline that depends on them. */
  write(settings: PoolSettings): void {
    this.setValue("pool", JSON.stringify(settings));
    this.store.agents.reschedule(settings);
    this.store.jobs.reschedule(settings);
  }

  /** Whether the pool was deleted; read once, then kept (only `retire` changes it). */
  isRetired(): boolean {
    this.retired ??= this.value("retired") !== null;
    return this.retired;
  }

  /** Marks the pool deleted; from now on it refuses new jobs and agents. */
  markRetired(): void {
    this.retired = true;
    this.setValue("retired", "1");
  }

  /** The next number of the queue's FIFO tie-break, one statement. */
  nextSeq(): number {
    return Number(
      this.store.sql
        .exec<{ value: string | number }>(
          "INSERT INTO settings (key, value) VALUES ('seq', '1') ON CONFLICT (key) DO UPDATE SET value = CAST(value AS INTEGER) + 1 RETURNING value",
        )
        .one().value,
    );
  }

  /** The stored value of `key`, or null. */
  value(key: string): string | null {
    return (
      this.store.sql
        .exec<{ value: string }>("SELECT value FROM settings WHERE key = ?", key)
        .toArray()[0]?.value ?? null
    );
  }

  /** Stores `value` under `key`, replacing what was there. */
  setValue(key: string, value: string): void {
    this.store.sql.exec(
      "INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
      key,
      value,
    );
  }
}
