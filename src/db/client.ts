import { drizzle } from "drizzle-orm/d1";
import * as schema from "./schema.ts";

/** Drizzle over the D1 binding, with the schema's snake_case column casing. */
export function createDb(d1: D1Database) {
  return drizzle(d1, { schema, casing: "snake_case" });
}

export type Database = ReturnType<typeof createDb>;
