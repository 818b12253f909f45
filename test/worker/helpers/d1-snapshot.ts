/** A comparable picture of every D1 table, to prove a refused request changed nothing. */
import { env } from "cloudflare:workers";

// Written after a successful authentication by design (a token's last use, a session's last
// request: at most once a minute), so not a change. `sent_at` is the run events outbox's
// bookkeeping: an earlier request's background flush may mark its events sent at any moment.
const VOLATILE_COLUMNS = new Set(["last_used_at", "last_seen_at", "sent_at"]);

/** Every row of every application table, ordered, minus volatile columns. */
export async function snapshotD1(): Promise<Record<string, unknown[]>> {
  const tables = await env.DB.prepare(
    "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_cf_%' AND name <> 'd1_migrations' ORDER BY name",
  ).all<{ name: string }>();
  // One batch, one round trip, however many tables there are.
  const names = tables.results.map((t) => t.name);
  const results = await env.DB.batch<Record<string, unknown>>(
    names.map((name) => env.DB.prepare(`SELECT * FROM "${name}" ORDER BY rowid`)),
  );
  const out: Record<string, unknown[]> = {};
  names.forEach((name, i) => {
    out[name] = (results[i]?.results ?? []).map((row) =>
      Object.fromEntries(Object.entries(row).filter(([column]) => !VOLATILE_COLUMNS.has(column))),
    );
  });
  return out;
}
