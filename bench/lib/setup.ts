/**
 * The coordinator the bench measures: the real Worker and Durable Objects on loopback with fresh
 * state, started through the counting entry, which installs D1 triggers that count every row
 * SQLite inserts, updates or deletes in each table before the bench sends anything else.
 */
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { buildAssets } from "../../scripts/build.ts";
import { type LocalCoordinator, startCoordinator } from "../../scripts/local-coordinator.ts";

const root = resolve(import.meta.dirname, "../..");

export type Counters = Record<string, number>;

export type BenchCoordinator = {
  coordinator: LocalCoordinator;
  /** Server-side counts since start: bindings (`counters`) and D1 row writes per table. */
  counters(): Promise<Counters>;
  close(): Promise<void>;
};

/**
 * `CREATE TABLE` names from the generated migrations, without drizzle's `__new_*` tables: a
 * migration that rebuilds a table creates one and renames it, so it never exists afterwards.
 */
async function tables(): Promise<string[]> {
  const dir = join(root, "migrations");
  const names = new Set<string>();
  for (const file of (await readdir(dir)).filter((f) => f.endsWith(".sql"))) {
    const sql = await readFile(join(dir, file), "utf8");
    for (const m of sql.matchAll(/CREATE TABLE `(\w+)`/g)) {
      if (m[1] && !m[1].startsWith("__new_")) {
        names.add(m[1]);
      }
    }
  }
  return [...names];
}

/**
 * Builds the static assets (the bench measures the code as it is, and a fresh clone has none),
 * then starts the counting coordinator on a free loopback port with a fresh state directory.
 */
export async function startBenchCoordinator(
  vars: Record<string, string> = {},
): Promise<BenchCoordinator> {
  await buildAssets();
  const persistDir = await mkdtemp(join(tmpdir(), "outpost-bench-"));
  const coordinator = await startCoordinator({
    persistDir,
    vars,
    entrypoint: join(root, "bench/worker/counting-entry.ts"),
  });
  // Before any request of the bench, so every row write is counted.
  const installed = await fetch(`${coordinator.url}/__bench/triggers`, {
    method: "POST",
    body: JSON.stringify(await tables()),
  });
  if (installed.status !== 200) {
    throw new Error(`installing the D1 write triggers: ${await installed.text()}`);
  }
  return {
    coordinator,
    async counters() {
      const res = await fetch(`${coordinator.url}/__bench/counters`);
      const body = (await res.json()) as { counters: Counters; triggers: Counters };
      const out: Counters = { ...body.counters };
      let written = 0;
      for (const [table, n] of Object.entries(body.triggers)) {
        out[`d1.rowsWrittenByTable.${table}`] = n;
        written += n;
      }
      out["d1.rowsWrittenTriggers"] = written;
      // raw() and first() carry no metadata: what they returned is a lower bound of what they read.
      out["d1.rowsReadLowerBound"] =
        (out["d1.rowsRead"] ?? 0) +
        Object.entries(out)
          .filter(([key]) => key.startsWith("d1.rowsReturnedWithoutMeta."))
          .reduce((sum, [, n]) => sum + n, 0);
      return out;
    },
    async close() {
      await coordinator.dispose();
      await rm(persistDir, { recursive: true, force: true });
    },
  };
}

/** `after - before` for every key, zeros dropped. */
export function delta(before: Counters, after: Counters): Counters {
  const out: Counters = {};
  for (const [key, value] of Object.entries(after)) {
    const d = value - (before[key] ?? 0);
    if (d !== 0) {
      out[key] = d;
    }
  }
  return out;
}
