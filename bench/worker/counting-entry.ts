/**
 * The bench's Worker entry: the real app and the real Durable Objects, with every binding
 * wrapped in a counter so the cost model is counted, not estimated. Only `npm run bench` starts
 * this entry (wrangler.toml's `main` stays `src/index.ts`), so no debug route ships.
 *
 * Counted: Worker invocations (fetch and scheduled), Durable Object calls (every method called
 * on a stub) and alarms, the objects' SQLite rows read and written (and `setAlarm`, billed as a
 * row written), D1 statements with the rows read and written its result metadata reports, and
 * R2 operations by class. Workerd runs a script's Durable Objects in the
 * Worker's isolate locally, so one module-level counter sees both.
 */
// First: @hono/zod-openapi adds .openapi() to zod schemas created after it loads. The Durable
// Objects below load the protocol package's schemas, which the app's routes document.
import "@hono/zod-openapi";
import { AgentPool as BaseAgentPool } from "../../durable/agent-pool.ts";
import { RunLog as BaseRunLog } from "../../durable/run-log.ts";
import worker from "../../src/index.ts";

type Counters = Record<string, number>;
const counters: Counters = {};

function count(name: string, by = 1): void {
  counters[name] = (counters[name] ?? 0) + by;
}

type Meta = { rows_read?: number; rows_written?: number };

/** Adds a D1 result's metadata; `raw()` and `first()` answer without it, so they add rows seen. */
function countResult(result: unknown, kind: string): void {
  count("d1.statements");
  const meta = (result as { meta?: Meta } | null)?.meta;
  if (meta) {
    count("d1.rowsRead", meta.rows_read ?? 0);
    count("d1.rowsWritten", meta.rows_written ?? 0);
    return;
  }
  count(`d1.rowsReturnedWithoutMeta.${kind}`, Array.isArray(result) ? result.length : 1);
}

function wrapStatement(stmt: D1PreparedStatement): D1PreparedStatement {
  return new Proxy(stmt, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target);
      if (typeof value !== "function") {
        return value;
      }
      if (prop === "bind") {
        return (...args: unknown[]) => wrapStatement(target.bind(...args));
      }
      if (prop === "all" || prop === "run" || prop === "raw" || prop === "first") {
        return async (...args: unknown[]) => {
          const result: unknown = await Reflect.apply(value, target, args);
          countResult(result, prop);
          return result;
        };
      }
      return value.bind(target);
    },
  });
}

/** Statements sent to `batch` must be the binding's own objects, so wrappers are unwrapped. */
const originals = new WeakMap<object, D1PreparedStatement>();

function wrapD1(db: D1Database): D1Database {
  return new Proxy(db, {
    get(target, prop) {
      if (prop === "prepare") {
        return (sql: string) => {
          const raw = target.prepare(sql);
          const wrapped = wrapStatement(raw);
          originals.set(wrapped, raw);
          return wrapped;
        };
      }
      if (prop === "batch") {
        return async (stmts: D1PreparedStatement[]) => {
          const results = await target.batch(stmts.map((s) => originals.get(s) ?? s));
          for (const r of results) {
            countResult(r, "batch");
          }
          return results;
        };
      }
      const value = Reflect.get(target, prop, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

const R2_CLASS: Record<string, string> = {
  put: "A",
  list: "A",
  createMultipartUpload: "A",
  resumeMultipartUpload: "none",
  get: "B",
  head: "B",
  delete: "free",
};

function wrapR2(bucket: R2Bucket): R2Bucket {
  return new Proxy(bucket, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target);
      if (typeof value !== "function" || typeof prop !== "string") {
        return value;
      }
      return (...args: unknown[]) => {
        count(`r2.${R2_CLASS[prop] ?? "A"}`);
        count(`r2.op.${prop}`);
        const result: unknown = Reflect.apply(value, target, args);
        if (prop === "createMultipartUpload" || prop === "resumeMultipartUpload") {
          // Each uploaded part and the completion are class A operations too.
          return Promise.resolve(result).then((upload) =>
            wrapMultipart(upload as R2MultipartUpload),
          );
        }
        return result;
      };
    },
  });
}

function wrapMultipart(upload: R2MultipartUpload): R2MultipartUpload {
  return new Proxy(upload, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target);
      if (typeof value !== "function" || typeof prop !== "string") {
        return value;
      }
      return (...args: unknown[]) => {
        count("r2.A");
        count(`r2.op.multipart.${prop}`);
        return Reflect.apply(value, target, args);
      };
    },
  });
}

/** Every method called on a stub is one Durable Object request. */
function wrapStub<T extends object>(stub: T, ns: string): T {
  return new Proxy(stub, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target);
      // `then` must stay undefined-like, or awaiting a stub would call it.
      if (typeof prop !== "string" || prop === "then" || typeof value !== "function") {
        return value;
      }
      return (...args: unknown[]) => {
        count("do.requests");
        count(`do.${ns}.${prop}`);
        return Reflect.apply(value, target, args);
      };
    },
  });
}

function wrapNamespace<T extends DurableObjectNamespace>(ns: T, name: string): T {
  return new Proxy(ns, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target);
      if (typeof value !== "function") {
        return value;
      }
      if (prop === "get" || prop === "getByName") {
        return (...args: unknown[]) => wrapStub(Reflect.apply(value, target, args) as object, name);
      }
      return value.bind(target);
    },
  });
}

/** Queue messages sent (each is billed as write, read and delete operations per 64 KB). */
function wrapQueue(queue: Queue): Queue {
  return new Proxy(queue, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target);
      if (typeof value !== "function") {
        return value;
      }
      return (...args: unknown[]) => {
        count("queue.messages", prop === "sendBatch" ? ((args[0] as unknown[])?.length ?? 0) : 1);
        return Reflect.apply(value, target, args);
      };
    },
  });
}

const wrapped = new WeakMap<Env, Env>();

function wrapEnv(env: Env): Env {
  const known = wrapped.get(env);
  if (known) {
    return known;
  }
  const next: Env = {
    ...env,
    DB: wrapD1(env.DB),
    BLOBS: wrapR2(env.BLOBS),
    AGENT_POOL: wrapNamespace(env.AGENT_POOL, "AgentPool"),
    RUN_LOG: wrapNamespace(env.RUN_LOG, "RunLog"),
    JOB_EVENTS: wrapQueue(env.JOB_EVENTS),
  };
  wrapped.set(env, next);
  return next;
}

/**
 * DO SQLite reports rows read and written on the cursor once it has been consumed, which the
 * objects do right after `exec`; so a cursor is added at the next `exec` or counter read.
 */
const openCursors: SqlStorageCursor<Record<string, SqlStorageValue>>[] = [];

function settleCursors(): void {
  for (const cursor of openCursors.splice(0)) {
    count("do.sqlRowsRead", cursor.rowsRead);
    count("do.sqlRowsWritten", cursor.rowsWritten);
  }
}

function wrapSql(sql: SqlStorage): SqlStorage {
  return new Proxy(sql, {
    get(target, prop) {
      if (prop === "exec") {
        return (...args: Parameters<SqlStorage["exec"]>) => {
          settleCursors();
          count("do.sqlStatements");
          const cursor = target.exec(...args);
          openCursors.push(cursor);
          return cursor;
        };
      }
      const value = Reflect.get(target, prop, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

/** The object's storage with SQL counted; each `setAlarm` is billed as one row written. */
function wrapCtx(ctx: DurableObjectState): DurableObjectState {
  const sql = wrapSql(ctx.storage.sql);
  const storage = new Proxy(ctx.storage, {
    get(target, prop) {
      if (prop === "sql") {
        return sql;
      }
      const value = Reflect.get(target, prop, target);
      if (prop === "setAlarm" && typeof value === "function") {
        return (...args: unknown[]) => {
          count("do.sqlRowsWritten");
          count("do.setAlarm");
          return Reflect.apply(value, target, args);
        };
      }
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  return new Proxy(ctx, {
    get(target, prop) {
      if (prop === "storage") {
        return storage;
      }
      const value = Reflect.get(target, prop, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

/**
 * The runtime wants the real state object in the constructor, so the counting one replaces the
 * `ctx` and SQL handles the objects read afterwards (the schema statements run uncounted): the
 * RunLog's `sql` field, the AgentPool's store's.
 */
function instrument(object: object, ctx: DurableObjectState): void {
  const counted = wrapCtx(ctx);
  Object.defineProperty(object, "ctx", { value: counted });
  const holder = (object as { store?: object }).store ?? object;
  Object.defineProperty(holder, "sql", { value: counted.storage.sql });
}

export class AgentPool extends BaseAgentPool {
  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, wrapEnv(env));
    instrument(this, ctx);
  }

  override async alarm(): Promise<void> {
    count("do.requests");
    count("do.AgentPool.alarm");
    await super.alarm();
  }
}

export class RunLog extends BaseRunLog {
  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, wrapEnv(env));
    instrument(this, ctx);
  }
}

/** Answers the bench's counter reads; the paths are only routed in this entry. */
const COUNTERS_PATH = "/__bench/counters";
const TRIGGERS_PATH = "/__bench/triggers";

/** One counter row per table, and a trigger per table and operation that bumps it. */
async function installTriggers(db: D1Database, tables: string[]): Promise<void> {
  const statements = [
    db.prepare(
      "CREATE TABLE IF NOT EXISTS bench_writes (tbl TEXT PRIMARY KEY, n INTEGER NOT NULL)",
    ),
  ];
  for (const table of tables.filter((t) => /^\w+$/.test(t))) {
    statements.push(db.prepare("INSERT OR IGNORE INTO bench_writes VALUES (?, 0)").bind(table));
    for (const op of ["INSERT", "UPDATE", "DELETE"]) {
      statements.push(
        db.prepare(
          `CREATE TRIGGER IF NOT EXISTS bench_${table}_${op.toLowerCase()} AFTER ${op} ON \`${table}\` BEGIN UPDATE bench_writes SET n = n + 1 WHERE tbl = '${table}'; END`,
        ),
      );
    }
  }
  await db.batch(statements);
}

export default {
  async fetch(request, env, ctx) {
    const url = new URL(request.url);
    if (url.pathname === TRIGGERS_PATH) {
      await installTriggers(env.DB, (await request.json()) as string[]);
      return Response.json({ installed: true });
    }
    if (url.pathname === COUNTERS_PATH) {
      // D1 row writes as SQLite itself counts them, through triggers the bench installed.
      const rows = await env.DB.prepare("SELECT tbl, n FROM bench_writes").all<{
        tbl: string;
        n: number;
      }>();
      const triggers = Object.fromEntries(rows.results.map((r) => [r.tbl, r.n]));
      settleCursors();
      return Response.json({ counters, triggers });
    }
    count("worker.requests");
    return worker.fetch(request, wrapEnv(env), ctx);
  },
  async scheduled(controller, env, ctx) {
    count("worker.requests");
    count("worker.scheduled");
    await worker.scheduled(controller, wrapEnv(env), ctx);
  },
  async queue(batch, env, ctx) {
    count("worker.queueBatches");
    await worker.queue(batch, wrapEnv(env), ctx);
  },
} satisfies ExportedHandler<Env>;
