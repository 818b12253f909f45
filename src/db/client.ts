import { drizzle } from "drizzle-orm/d1";
import * as schema from "./schema.ts";

function open(d1: D1Database) {
  return drizzle(d1, { schema, casing: "snake_case" });
}

export type Database = ReturnType<typeof open>;

/** One per binding: building drizzle's view of the schema costs more than most queries. */
const opened = new WeakMap<D1Database, Database>();

/** Drizzle over the D1 binding, with the schema's snake_case column casing. */
export function createDb(d1: D1Database): Database {
  let db = opened.get(d1);
  if (!db) {
    db = open(d1);
    opened.set(d1, db);
  }
  return db;
}

const statements = new WeakMap<Database, Map<string, unknown>>();

/**
 * A query built once per database handle and run many times with placeholders
 * (`sql.placeholder`): for the statements every request runs, whose building costs more CPU
 * than D1 takes to answer them. `key` names the statement; `build` must always build the same one.
 */
export function prepared<T>(db: Database, key: string, build: (db: Database) => T): T {
  let cache = statements.get(db);
  if (!cache) {
    cache = new Map();
    statements.set(db, cache);
  }
  let statement = cache.get(key) as T | undefined;
  if (statement === undefined) {
    statement = build(db);
    cache.set(key, statement);
  }
  return statement;
}
