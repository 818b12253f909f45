/**
 * RunLog: one Durable Object per workspace, holding the logs of its jobs while they run so that
 * log traffic never touches the pool's object. Every method names the job; each job's chunks live
 * in SQLite until it ends, then its whole log becomes one R2 object and the chunks are dropped.
 * One object per workspace rather than per job: a new object (a new SQLite database) for every
 * job was the largest fixed cost of a run's cycle.
 */
import { DurableObject } from "cloudflare:workers";
import { concatBytes, decideAppend, equalBytes, type LogMeta, toLogMeta } from "./log-math.ts";

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

export class RunLog extends DurableObject<Env> {
  private readonly sql: SqlStorage;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.sql = ctx.storage.sql;
    void ctx.blockConcurrencyWhile(async () => {
      this.sql.exec(`CREATE TABLE IF NOT EXISTS logs (
        job_id TEXT PRIMARY KEY, lease_id TEXT,
        received INTEGER NOT NULL DEFAULT 0, stored INTEGER NOT NULL DEFAULT 0,
        is_truncated INTEGER NOT NULL DEFAULT 0, is_final INTEGER NOT NULL DEFAULT 0,
        object_key TEXT)`);
      this.sql.exec(`CREATE TABLE IF NOT EXISTS chunks (
        job_id TEXT NOT NULL, pos INTEGER NOT NULL, agent_offset INTEGER, data BLOB NOT NULL,
        PRIMARY KEY (job_id, pos)) WITHOUT ROWID`);
      this.sql.exec(
        "CREATE INDEX IF NOT EXISTS chunks_agent_offset ON chunks (job_id, agent_offset)",
      );
    });
  }

  private meta(jobId: string): LogMeta | null {
    const row = this.sql.exec("SELECT * FROM logs WHERE job_id = ?", jobId).toArray()[0];
    return row ? toLogMeta(row) : null;
  }

  private get capBytes(): number {
    const configured = Number(this.env.LOG_MAX_BYTES);
    return Number.isFinite(configured) && configured > 0 ? configured : DEFAULT_LOG_MAX_BYTES;
  }

  /**
   * Makes `leaseId` the only lease that may append to the job's log (called when the job is
   * leased). Idempotent; a log that has ended stays ended.
   */
  async open(jobId: string, leaseId: string): Promise<void> {
    this.sql.exec(
      `INSERT INTO logs (job_id, lease_id) VALUES (?, ?)
       ON CONFLICT (job_id) DO UPDATE SET lease_id = excluded.lease_id WHERE is_final = 0`,
      jobId,
      leaseId,
    );
  }

  /**
   * Appends `data` at the agent's byte `offset`. A gap or overlap answers `range_mismatch` with
   * the length held, so the agent resumes exactly; an exact retry is acknowledged again.
   */
  async append(
    jobId: string,
    leaseId: string,
    offset: number,
    data: Uint8Array,
  ): Promise<AppendResult> {
    const meta = this.meta(jobId);
    if (!meta || meta.isFinal || meta.leaseId !== leaseId) {
      return { ok: false, reason: "lease_lost" };
    }
    const previous = this.sql
      .exec("SELECT data FROM chunks WHERE job_id = ? AND agent_offset = ?", jobId, offset)
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
        "INSERT INTO chunks (job_id, pos, agent_offset, data) VALUES (?, ?, ?, ?)",
        jobId,
        stored,
        offset,
        data.subarray(0, decision.keep),
      );
      stored += decision.keep;
    }
    if (decision.marker) {
      const marker = new TextEncoder().encode(decision.marker);
      this.sql.exec(
        "INSERT INTO chunks (job_id, pos, agent_offset, data) VALUES (?, ?, NULL, ?)",
        jobId,
        stored,
        marker,
      );
      stored += marker.byteLength;
    }
    const received = meta.received + data.byteLength;
    this.sql.exec(
      "UPDATE logs SET received = ?, stored = ?, is_truncated = ? WHERE job_id = ?",
      received,
      stored,
      decision.marker || meta.isTruncated ? 1 : 0,
      jobId,
    );
    return { ok: true, received };
  }

  /**
   * The job's bytes from `offset` (at most 1 MiB), live while it runs and from R2 after it ended.
   * Either way the object holds one window of at most `maxBytes` (plus the chunks it overlaps),
   * never the rest of the log: readers follow `nextOffset`.
   */
  async read(jobId: string, offset: number, maxBytes = MAX_READ_BYTES): Promise<ReadResult> {
    const meta = this.meta(jobId);
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
    return this.readLive(jobId, start, Math.min(limit, meta.stored - start));
  }

  /**
   * Up to `length` bytes of the job's log from `start` while it runs. Chunks hold contiguous
   * positions, so only the chunk holding `start` and those starting before `start + length` are
   * read, each cut down in SQL to the bytes the answer needs: one window in memory, however long
   * the log.
   */
  private readLive(jobId: string, start: number, length: number): ReadResult {
    const end = start + Math.max(0, length);
    const first = this.sql
      .exec<{ pos: number }>(
        "SELECT pos FROM chunks WHERE job_id = ? AND pos <= ? ORDER BY pos DESC LIMIT 1",
        jobId,
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
         FROM chunks WHERE job_id = ?4 AND pos >= ?3 AND pos < ?2 ORDER BY pos`,
        start,
        end,
        first.pos,
        jobId,
      )
      .toArray();
    const parts = rows.map((row) => new Uint8Array(row.piece));
    const size = parts.reduce((n, part) => n + part.byteLength, 0);
    return { data: concatBytes(parts, size), nextOffset: start + size, isComplete: false };
  }

  /**
   * Ends the job's log: appends `closingLine` when given (the coordinator's last word for a job
   * whose agent could not say one), writes the log as one R2 object at `objectKey`, drops its
   * chunks, and refuses further appends. Idempotent: a log that has ended stays as it was; safe
   * to call for a job that never logged (no object then, unless a closing line is written).
   */
  async finish(
    jobId: string,
    objectKey: string,
    closingLine: string | null = null,
  ): Promise<{ stored: number }> {
    let meta = this.meta(jobId) ?? { stored: 0, isFinal: false };
    if (meta.isFinal) {
      return { stored: meta.stored };
    }
    if (closingLine !== null) {
      meta = this.appendClosing(jobId, meta.stored, closingLine);
    }
    if (meta.stored === 0) {
      // Nothing was logged (a job canceled before it started, a silent one): no object to store,
      // and a read of the final log answers complete with no bytes.
      this.markFinal(jobId, null);
      return { stored: 0 };
    }
    const { readable, writable } = new FixedLengthStream(meta.stored);
    const write = (async () => {
      const writer = writable.getWriter();
      let pos = 0;
      // Page through the chunks so the whole log is never in memory at once.
      for (;;) {
        const rows = this.sql
          .exec(
            "SELECT pos, data FROM chunks WHERE job_id = ? AND pos >= ? ORDER BY pos LIMIT 16",
            jobId,
            pos,
          )
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
    this.markFinal(jobId, objectKey);
    this.sql.exec("DELETE FROM chunks WHERE job_id = ?", jobId);
    return { stored: meta.stored };
  }

  /** Adds the coordinator's closing line after whatever the agent wrote (on a line of its own). */
  private appendClosing(
    jobId: string,
    stored: number,
    line: string,
  ): { stored: number; isFinal: false } {
    const last =
      stored === 0
        ? null
        : this.sql
            .exec<{ tail: ArrayBuffer }>(
              "SELECT substr(data, -1) AS tail FROM chunks WHERE job_id = ? ORDER BY pos DESC LIMIT 1",
              jobId,
            )
            .toArray()[0];
    const endsLine = last === null || last === undefined || new Uint8Array(last.tail)[0] === 10;
    const bytes = new TextEncoder().encode(`${endsLine ? "" : "\n"}${line}\n`);
    this.sql.exec("INSERT OR IGNORE INTO logs (job_id) VALUES (?)", jobId);
    this.sql.exec(
      "INSERT INTO chunks (job_id, pos, agent_offset, data) VALUES (?, ?, NULL, ?)",
      jobId,
      stored,
      bytes,
    );
    this.sql.exec("UPDATE logs SET stored = ? WHERE job_id = ?", stored + bytes.byteLength, jobId);
    return { stored: stored + bytes.byteLength, isFinal: false };
  }

  private markFinal(jobId: string, objectKey: string | null): void {
    this.sql.exec(
      `INSERT INTO logs (job_id, is_final, object_key) VALUES (?, 1, ?)
       ON CONFLICT (job_id) DO UPDATE SET is_final = 1, lease_id = NULL, object_key = excluded.object_key`,
      jobId,
      objectKey,
    );
  }
}
