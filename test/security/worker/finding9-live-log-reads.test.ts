/**
 * Finding 9: while a phase ran, a log read loaded every chunk after the requested offset into the
 * `RunLog` object's memory (up to the 100 MB log limit), so a few readers of a big live log could
 * exhaust it. Now a live read holds one window: a reader follows `Outpost-Log-Next-Offset`. This
 * test writes a 50 MB log through the agent route while a reader follows it through the user
 * route, and meters, inside the object, every byte SQLite hands it while answering each read.
 */
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { RunLog } from "../../../durable/run-log.ts";
import { request, requestJson } from "../../worker/helpers/api.ts";
import { seedOrg } from "../../worker/helpers/fixtures.ts";
import { jobUrl, runnableWithAgent, startedPlan } from "./helpers.ts";

/** Bytes of BLOB values SQLite returned to the object since the last reset. */
const meter = { loaded: 0 };

/**
 * Wraps the object's SQL handle so every row it reads is counted: the measure does not depend
 * on how the object reads, so it holds for any implementation of the live read.
 */
function metered(sql: SqlStorage): SqlStorage {
  return new Proxy(sql, {
    get(target, property) {
      if (property !== "exec") {
        const value: unknown = Reflect.get(target, property);
        return typeof value === "function" ? value.bind(target) : value;
      }
      return (query: string, ...bindings: SqlStorageValue[]) => {
        const rows = target.exec(query, ...bindings).toArray();
        for (const row of rows) {
          for (const value of Object.values(row)) {
            meter.loaded += value instanceof ArrayBuffer ? value.byteLength : 0;
          }
        }
        return { toArray: () => rows, [Symbol.iterator]: () => rows[Symbol.iterator]() };
      };
    },
  });
}

const MIB = 1024 * 1024;
const TOTAL = 50 * MIB;
/** The agent's largest chunk. */
const CHUNK = MIB;

const chunks = new Map<number, Uint8Array>();

/** A deterministic MiB of log text whose bytes say which chunk they are in. */
function chunkAt(index: number): Uint8Array {
  let chunk = chunks.get(index);
  if (!chunk) {
    const line = `chunk ${String(index).padStart(4, "0")} ${"x".repeat(50)}\n`;
    chunk = new TextEncoder().encode(line.repeat(Math.ceil(CHUNK / line.length)).slice(0, CHUNK));
    chunks.set(index, chunk);
  }
  return chunk;
}

describe("finding 9: a live log read holds a bounded window", () => {
  it("reads a 50 MB log while it grows, holding at most one 1 MiB window per answer", {
    timeout: 300_000,
  }, async () => {
    const org = await seedOrg();
    const target = await runnableWithAgent(org);
    const { run, job } = await startedPlan(org, target);
    // One RunLog object per workspace holds the logs of its jobs.
    await runInDurableObject(env.RUN_LOG.getByName(job.workspaceId), (instance: RunLog) => {
      const object = instance as unknown as { sql: SqlStorage };
      object.sql = metered(object.sql);
    });
    let written = 0;
    let readOffset = 0;
    let maxLoaded = 0;
    let reads = 0;
    const digest = { written: 0, read: 0 };
    const check = (bytes: Uint8Array, at: number) => {
      // Every 4096th byte is compared with what was written at that offset.
      for (let i = 0; i < bytes.length; i += 4096) {
        const want = chunkAt(Math.floor((at + i) / CHUNK))[(at + i) % CHUNK];
        if (bytes[i] !== want) {
          throw new Error(`byte ${at + i} differs`);
        }
      }
      digest.read += bytes.length;
    };
    const readOnce = async (limit?: number) => {
      meter.loaded = 0;
      const query = `phase=plan&offset=${readOffset}${limit ? `&limit=${limit}` : ""}`;
      const res = await request(`/api/v1/runs/${run.id}/logs?${query}`, {
        token: org.tokens.reader,
      });
      expect(res.status).toBe(200);
      const bytes = new Uint8Array(await res.arrayBuffer());
      const next = Number(res.headers.get("outpost-log-next-offset"));
      expect(next).toBe(readOffset + bytes.length);
      check(bytes, readOffset);
      readOffset = next;
      reads += 1;
      maxLoaded = Math.max(maxLoaded, meter.loaded);
      return bytes.length;
    };
    while (written < TOTAL) {
      const chunk = chunkAt(written / CHUNK);
      const put = await requestJson(jobUrl(job, `/leases/${job.leaseId}/logs?offset=${written}`), {
        method: "PUT",
        token: job.runToken ?? "",
        body: chunk,
        headers: { "content-type": "application/octet-stream" },
      });
      expect(put.status, JSON.stringify(put.body)).toBe(200);
      written += chunk.length;
      digest.written += chunk.length;
      // The reader trails the writer: a read from an old offset sees many chunks after it.
      if (written % (5 * CHUNK) === 0) {
        await readOnce(300_000);
        await readOnce();
      }
    }
    while (readOffset < written) {
      expect(await readOnce()).toBeGreaterThan(0);
    }
    expect(digest.read).toBe(TOTAL);
    expect(reads).toBeGreaterThan(50);
    // One answer holds one window of at most 1 MiB, never the tens of MiB after its offset.
    expect(maxLoaded).toBeGreaterThan(0);
    expect(maxLoaded).toBeLessThanOrEqual(MIB);
  });
});
