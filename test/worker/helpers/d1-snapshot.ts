/** A comparable picture of every D1 table, to prove a refused request changed nothing. */
import { env } from "cloudflare:workers";

// Written after a successful authentication by design (at most once a minute), so not a change.
const VOLATILE_COLUMNS = new Set(["last_used_at"]);

/**
 * Every row of every application table, ordered, minus volatile columns. Read in one batch (one
 * round trip for all tables, not one per table): route tests take it around every refused request.
 */
export async function snapshotD1(): Promise<Record<string, unknown[]>> {
  const tables = await env.DB.prepare(
    "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_cf_%' AND name <> 'd1_migrations' ORDER BY name",
  ).all<{ name: string }>();
  const names = tables.results.map((t) => t.name);
  const rows = await env.DB.batch<Record<string, unknown>>(
    names.map((name) => env.DB.prepare(`SELECT * FROM "${name}" ORDER BY rowid`)),
  );
  const out: Record<string, unknown[]> = {};
  for (const [i, name] of names.entries()) {
    const read = rows[i];
    if (read === undefined) {
      throw new Error(`the batch read nothing for table ${name}`);
    }
    out[name] = read.results.map((row) =>
      Object.fromEntries(Object.entries(row).filter(([column]) => !VOLATILE_COLUMNS.has(column))),
    );
  }
  return out;
}
