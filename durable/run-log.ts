/**
 * RunLog: one Durable Object per job, holding its log while the job runs so that log traffic never
 * touches the pool's object. Chunks live in SQLite until the job ends; then the whole log becomes
 * one R2 object and the chunks are dropped.
 */
import { DurableObject } from "cloudflare:workers";
import { decideAppend, type LogState } from "./log-math.ts";

/** Default cap per phase (100 MiB); `LOG_MAX_BYTES` overrides it. */
export const DEFAULT_LOG_MAX_BYTES = 100 * 1024 * 1024;
/** The most one read returns. */
export const MAX_READ_BYTES = 1024 * 1024;

export type AppendResult =
  | { ok: true; received: number }
  | { ok: false; reason: "lease_lost" }
  | { ok: false; reason: "range_mismatch"; received: number };

export type ReadResult = {
  data: Uint8Array;
  /** Where the next read should start. */
  nextOffset: number;
  /** True once the job has ended and `nextOffset` is the end of the log. */
  isComplete: boolean;
};

type Meta = LogState & {
  jobId: string;
  leaseId: string | null;
  isFinal: boolean;
  /** The R2 object holding the whole log once the job ended. */
  objectKey: string | null;
};

export class RunLog extends DurableObject<Env> {
  private readonly sql: SqlStorage;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.sql = ctx.storage.sql;
    void ctx.blockConcurrencyWhile(async () => {
      this.sql.exec(`CREATE TABLE IF NOT EXISTS meta (
        id INTEGER PRIMARY KEY CHECK (id = 1), job_id TEXT NOT NULL, lease_id TEXT,
        received INTEGER NOT NULL DEFAULT 0, stored INTEGER NOT NULL DEFAULT 0,
        is_truncated INTEGER NOT NULL DEFAULT 0, is_final INTEGER NOT NULL DEFAULT 0,
        object_key TEXT)`);
      this.sql.exec(`CREATE TABLE IF NOT EXISTS chunks (
        pos INTEGER PRIMARY KEY, agent_offset INTEGER, data BLOB NOT NULL)`);
      this.sql.exec("CREATE INDEX IF NOT EXISTS chunks_agent_offset ON chunks (agent_offset)");
    });
  }

  private meta(): Meta | null {
    const row = this.sql.exec("SELECT * FROM meta WHERE id = 1").toArray()[0];
    if (!row) {
      return null;
    }
    return {
      jobId: String(row.job_id),
      leaseId: row.lease_id === null ? null : String(row.lease_id),
      received: Number(row.received),
      stored: Number(row.stored),
      isTruncated: row.is_truncated === 1,
      isFinal: row.is_final === 1,
      objectKey: row.object_key === null ? null : String(row.object_key),
    };
  }

  private get capBytes(): number {
    const configured = Number(this.env.LOG_MAX_BYTES);
    return Number.isFinite(configured) && configured > 0 ? configured : DEFAULT_LOG_MAX_BYTES;
  }

  /**
   * Makes `leaseId` the only lease that may append (called when the job is leased). Idempotent;
   * a log that has ended stays ended.
   */
  async open(jobId: string, leaseId: string): Promise<void> {
    this.sql.exec(
      `INSERT INTO meta (id, job_id, lease_id) VALUES (1, ?, ?)
       ON CONFLICT (id) DO UPDATE SET lease_id = excluded.lease_id WHERE is_final = 0`,
      jobId,
      leaseId,
    );
  }

  /**
   * Appends `data` at the agent's byte `offset`. A gap or overlap answers `range_mismatch` with
   * the length held, so the agent resumes exactly; an exact retry is acknowledged again.
   */
  async append(leaseId: string, offset: number, data: Uint8Array): Promise<AppendResult> {
    const meta = this.meta();
    if (!meta || meta.isFinal || meta.leaseId !== leaseId) {
      return { ok: false, reason: "lease_lost" };
    }
    const previous = this.sql
      .exec("SELECT data FROM chunks WHERE agent_offset = ?", offset)
      .toArray()[0];
    const isExactRetry =
      previous !== undefined && equalBytes(new Uint8Array(previous.data as ArrayBuffer), data);
    const decision = decideAppend(meta, offset, data.byteLength, this.capBytes, isExactRetry);
    if (decision.kind === "range_mismatch") {
      return { ok: false, reason: "range_mismatch", received: decision.received };
    }
    if (decision.kind === "duplicate") {
      return { ok: true, received: meta.received };
    }
    let stored = meta.stored;
    if (decision.keep > 0) {
      this.sql.exec(
        "INSERT INTO chunks (pos, agent_offset, data) VALUES (?, ?, ?)",
        stored,
        offset,
        data.subarray(0, decision.keep),
      );
      stored += decision.keep;
    }
    if (decision.marker) {
      const marker = new TextEncoder().encode(decision.marker);
      this.sql.exec(
        "INSERT INTO chunks (pos, agent_offset, data) VALUES (?, NULL, ?)",
        stored,
        marker,
      );
      stored += marker.byteLength;
    }
    const received = meta.received + data.byteLength;
    this.sql.exec(
      "UPDATE meta SET received = ?, stored = ?, is_truncated = ? WHERE id = 1",
      received,
      stored,
      decision.marker || meta.isTruncated ? 1 : 0,
    );
    return { ok: true, received };
  }

  /**
   * Bytes from `offset` (at most 1 MiB), live while the job runs and from R2 after it ended.
   * Either way the object holds one window of at most `maxBytes` (plus the chunks it overlaps),
   * never the rest of the log: readers follow `nextOffset`.
   */
  async read(offset: number, maxBytes = MAX_READ_BYTES): Promise<ReadResult> {
    const meta = this.meta();
    const limit = Math.min(Math.max(1, maxBytes), MAX_READ_BYTES);
    if (!meta) {
      return { data: new Uint8Array(), nextOffset: 0, isComplete: false };
    }
    const start = Math.min(Math.max(0, offset), meta.stored);
    if (meta.isFinal) {
      const length = Math.min(limit, meta.stored - start);
      if (!meta.objectKey || length <= 0) {
        return { data: new Uint8Array(), nextOffset: start, isComplete: true };
      }
      const object = await this.env.BLOBS.get(meta.objectKey, {
        range: { offset: start, length },
      });
      const data = object ? new Uint8Array(await object.arrayBuffer()) : new Uint8Array();
      const nextOffset = start + data.byteLength;
      return { data, nextOffset, isComplete: nextOffset >= meta.stored };
    }
    return this.readLive(start, Math.min(limit, meta.stored - start));
  }

  /**
   * Up to `length` bytes from `start` while the job runs. Chunks hold contiguous positions, so
   * only the chunk holding `start` and those starting before `start + length` are read, each
   * cut down in SQL to the bytes the answer needs: one window in memory, however long the log.
   */
  private readLive(start: number, length: number): ReadResult {
    const end = start + Math.max(0, length);
    const first = this.sql
      .exec<{ pos: number }>(
        "SELECT pos FROM chunks WHERE pos <= ? ORDER BY pos DESC LIMIT 1",
        start,
      )
      .toArray()[0];
    if (!first || end <= start) {
      return { data: new Uint8Array(), nextOffset: start, isComplete: false };
    }
    const rows = this.sql
      .exec<{ piece: ArrayBuffer }>(
        `SELECT substr(data, max(?1 - pos, 0) + 1, min(pos + length(data), ?2) - max(pos, ?1))
           AS piece
         FROM chunks WHERE pos >= ?3 AND pos < ?2 ORDER BY pos`,
        start,
        end,
        first.pos,
      )
      .toArray();
    const parts = rows.map((row) => new Uint8Array(row.piece));
    const size = parts.reduce((n, part) => n + part.byteLength, 0);
    return { data: concat(parts, size), nextOffset: start + size, isComplete: false };
  }

  /**
   * Ends the log: writes it as one R2 object at `objectKey`, drops the chunks, and refuses
   * further appends. Idempotent; safe to call for a job that never logged.
   */
  async finish(jobId: string, objectKey: string): Promise<{ stored: number }> {
    const meta = this.meta() ?? { stored: 0, isFinal: false };
    if (meta.isFinal) {
      return { stored: meta.stored };
    }
    const { readable, writable } = new FixedLengthStream(meta.stored);
    const write = (async () => {
      const writer = writable.getWriter();
      let pos = 0;
      // Page through the chunks so the whole log is never in memory at once.
      for (;;) {
        const rows = this.sql
          .exec("SELECT pos, data FROM chunks WHERE pos >= ? ORDER BY pos LIMIT 16", pos)
          .toArray();
        if (rows.length === 0) {
          break;
        }
        for (const row of rows) {
          const bytes = new Uint8Array(row.data as ArrayBuffer);
          await writer.write(bytes);
          pos = Number(row.pos) + bytes.byteLength;
        }
      }
      await writer.close();
    })();
    await Promise.all([this.env.BLOBS.put(objectKey, readable), write]);
    this.sql.exec(
      `INSERT INTO meta (id, job_id, is_final, object_key) VALUES (1, ?, 1, ?)
       ON CONFLICT (id) DO UPDATE SET is_final = 1, lease_id = NULL, object_key = excluded.object_key`,
      jobId,
      objectKey,
    );
    this.sql.exec("DELETE FROM chunks");
    return { stored: meta.stored };
  }
}

function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.byteLength !== b.byteLength) {
    return false;
  }
  for (let i = 0; i < a.byteLength; i++) {
    if (a[i] !== b[i]) {
      return false;
    }
  }
  return true;
}

function concat(parts: Uint8Array[], size: number): Uint8Array {
  const out = new Uint8Array(size);
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.byteLength;
  }
  return out;
}
