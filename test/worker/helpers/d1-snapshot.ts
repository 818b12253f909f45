/** A comparable picture of every D1 table, to prove a refused request changed nothing. */
import { env } from "cloudflare:workers";

// Written after a successful authentication by design (at most once a minute), so not a change.
const VOLATILE_COLUMNS = new Set(["last_used_at"]);

/** Every row of every application table, ordered, minus volatile columns. */
export async function snapshotD1(): Promise<Record<string, unknown[]>> {
  const tables = await env.DB.prepare(
    "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_cf_%' AND name <> 'd1_migrations' ORDER BY name",
  ).all<{ name: string }>();
  const out: Record<string, unknown[]> = {};
  for (const { name } of tables.results) {
    const rows = await env.DB.prepare(`SELECT * FROM "${name}" ORDER BY rowid`).all<
      Record<string, unknown>
    >();
    out[name] = rows.results.map((row) =>
      Object.fromEntries(Object.entries(row).filter(([column]) => !VOLATILE_COLUMNS.has(column))),
    );
  }
  return out;
}
