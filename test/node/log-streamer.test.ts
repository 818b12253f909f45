import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { TransientError } from "../../agent/src/errors.ts";
import { type LogSendResult, LogStreamer, MAX_CHUNK_BYTES } from "../../agent/src/logs/streamer.ts";

/** An in-memory coordinator log: appends at exactly its length, otherwise answers like a 416. */
class LogStore {
  bytes = Buffer.alloc(0);
  calls: Array<{ offset: number; length: number }> = [];
  /** Store the chunk but lose the answer (the agent sees a transient error). */
  loseNextAnswer = 0;
  /** Fail the next sends before storing anything. */
  failNext = 0;

  send = async (offset: number, chunk: Uint8Array): Promise<LogSendResult> => {
    this.calls.push({ offset, length: chunk.length });
    if (this.failNext > 0) {
      this.failNext -= 1;
      throw new TransientError("503 from coordinator", { retryAfter: "0" });
    }
    if (offset !== this.bytes.length) {
      return { rangeMismatch: this.bytes.length };
    }
    this.bytes = Buffer.concat([this.bytes, chunk]);
    if (this.loseNextAnswer > 0) {
      this.loseNextAnswer -= 1;
      throw new TransientError("connection reset");
    }
    return { ok: true };
  };
}

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), "outpost-logs-"));
});
afterEach(() => {
  vi.useRealTimers();
  rmSync(dir, { recursive: true, force: true });
});

function streamer(
  store: LogStore,
  secrets: string[],
  extra: Partial<{ maxChunkBytes: number }> = {},
) {
  return new LogStreamer({
    send: store.send,
    spoolFile: path.join(dir, "log.spool"),
    secrets,
    retryBaseMs: 1,
    retryCapMs: 5,
    ...extra,
  });
}

describe("LogStreamer", () => {
  it("delivers every byte in order, in chunks of at most 1 MiB", async () => {
    const store = new LogStore();
    const log = streamer(store, []);
    const big = Buffer.alloc(MAX_CHUNK_BYTES * 2 + 123, "x");
    log.write(big.subarray(0, 700_000));
    log.write(big.subarray(700_000));
    await log.close();
    expect(store.bytes.equals(big)).toBe(true);
    expect(Math.max(...store.calls.map((c) => c.length))).toBeLessThanOrEqual(MAX_CHUNK_BYTES);
  });

  it("flushes within one second while output flows, without waiting for close", async () => {
    vi.useFakeTimers();
    const store = new LogStore();
    const log = streamer(store, []);
    log.write("Initializing the backend...\n");
    await vi.advanceTimersByTimeAsync(999);
    expect(store.bytes.length).toBe(0);
    await vi.advanceTimersByTimeAsync(1);
    expect(store.bytes.toString()).toBe("Initializing the backend...\n");
    log.write("more\n");
    await vi.advanceTimersByTimeAsync(1000);
    expect(store.bytes.toString()).toBe("Initializing the backend...\nmore\n");
    vi.useRealTimers();
    await log.close();
  });

  it("resumes exactly at the coordinator's length after a lost answer (416)", async () => {
    const store = new LogStore();
    const log = streamer(store, [], { maxChunkBytes: 10 });
    store.loseNextAnswer = 1;
    log.write("0123456789abcdefghij");
    await log.close();
    expect(store.bytes.toString()).toBe("0123456789abcdefghij");
    // Resent at 0, told the store holds 10, continued from 10: nothing duplicated.
    expect(store.calls.map((c) => c.offset)).toEqual([0, 0, 10]);
  });

  it("re-sends from an earlier offset when the coordinator holds less than was acknowledged", async () => {
    const store = new LogStore();
    const log = streamer(store, [], { maxChunkBytes: 4 });
    log.write("aaaabbbb");
    await vi.waitFor(() => expect(store.bytes.length).toBe(8), { timeout: 3000 });
    store.bytes = store.bytes.subarray(0, 2);
    log.write("cccc");
    await log.close();
    expect(store.bytes.toString()).toBe("aaaabbbbcccc");
  });

  it("retries transient failures with backoff", async () => {
    const store = new LogStore();
    store.failNext = 3;
    const log = streamer(store, []);
    log.write("hello");
    await log.close();
    expect(store.bytes.toString()).toBe("hello");
    expect(store.calls.length).toBe(4);
  });

  it("stops and reports a non-transient error (e.g. the lease was lost)", async () => {
    const log = new LogStreamer({
      send: async () => {
        throw new Error("lease lost");
      },
      spoolFile: path.join(dir, "log.spool"),
      secrets: [],
    });
    log.write("x");
    await expect(log.close()).rejects.toThrow("lease lost");
  });

  it("never lets a secret reach the coordinator, whatever the write and chunk boundaries", async () => {
    const secrets = ["hunter2-hunter2", "tok_9f8e7d"];
    for (let seed = 1; seed <= 60; seed++) {
      let s = seed;
      const rand = () => {
        s = (s * 1103515245 + 12345) % 2 ** 31;
        return s / 2 ** 31;
      };
      const text = Array.from({ length: 40 }, (_, i) =>
        i % 3 === 0 ? `password=${secrets[i % 2]}\n` : `line ${i} of output\n`,
      ).join("");
      const store = new LogStore();
      store.loseNextAnswer = seed % 3;
      const log = streamer(store, secrets, { maxChunkBytes: 1 + Math.floor(rand() * 40) });
      let at = 0;
      while (at < text.length) {
        const n = 1 + Math.floor(rand() * 25);
        log.write(text.slice(at, at + n));
        at += n;
        if (rand() < 0.2) {
          await new Promise((resolve) => setImmediate(resolve));
        }
      }
      await log.close();
      const received = store.bytes.toString();
      expect(received, `seed ${seed}`).toBe(
        text.replaceAll(secrets[0] ?? "", "***").replaceAll(secrets[1] ?? "", "***"),
      );
      expect(log.length).toBe(store.bytes.length);
    }
  });
});
