import { evictDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { newId } from "@outpost/common";
import { describe, expect, it } from "vitest";
import { decideAppend, truncationMarker } from "../../durable/log-math.ts";
import { logKey } from "../../src/runs/blobs.ts";

const CAP = Number(env.LOG_MAX_BYTES);
const encode = (s: string) => new TextEncoder().encode(s);
const decode = (b: Uint8Array) => new TextDecoder().decode(b);
/** Every job below belongs to one workspace, so they share its RunLog object. */
const WORKSPACE = "ws_test";
const newJob = () => {
  const runId = newId("run");
  const ref = { orgId: "org_test", workspaceId: WORKSPACE, runId };
  return { runId, jobId: `${runId}:plan`, key: logKey(ref, "plan") };
};

describe("decideAppend", () => {
  const fresh = { received: 0, stored: 0, isTruncated: false };
  it.each([
    {
      name: "next chunk",
      state: fresh,
      offset: 0,
      len: 10,
      retry: false,
      want: { kind: "append", keep: 10, marker: null },
    },
    {
      name: "gap",
      state: { ...fresh, received: 10 },
      offset: 20,
      len: 5,
      retry: false,
      want: { kind: "range_mismatch", received: 10 },
    },
    {
      name: "overlap",
      state: { ...fresh, received: 10 },
      offset: 5,
      len: 10,
      retry: false,
      want: { kind: "range_mismatch", received: 10 },
    },
    {
      name: "exact retry",
      state: { ...fresh, received: 10 },
      offset: 0,
      len: 10,
      retry: true,
      want: { kind: "duplicate" },
    },
    {
      name: "inexact retry",
      state: { ...fresh, received: 10 },
      offset: 0,
      len: 10,
      retry: false,
      want: { kind: "range_mismatch", received: 10 },
    },
    {
      name: "crosses the cap",
      state: { ...fresh, received: 90 },
      offset: 90,
      len: 20,
      retry: false,
      want: { kind: "append", keep: 10, marker: truncationMarker(100) },
    },
    {
      name: "after truncation",
      state: { received: 110, stored: 150, isTruncated: true },
      offset: 110,
      len: 5,
      retry: false,
      want: { kind: "append", keep: 0, marker: null },
    },
  ] as const)("$name", ({ state, offset, len, retry, want }) => {
    expect(decideAppend(state, offset, len, 100, retry)).toEqual(want);
  });
});

describe("RunLog", () => {
  it("appends in order, answers gaps and overlaps with the length held, and accepts exact retries", async () => {
    const { jobId } = newJob();
    const log = env.RUN_LOG.getByName(WORKSPACE);
    await log.open(jobId, "lease-1");
    expect(await log.append(jobId, "lease-1", 0, encode("hello "))).toEqual({
      ok: true,
      received: 6,
    });
    expect(await log.append(jobId, "lease-1", 6, encode("world\n"))).toEqual({
      ok: true,
      received: 12,
    });
    expect(await log.append(jobId, "lease-1", 6, encode("world\n"))).toEqual({
      ok: true,
      received: 12,
    });
    expect(await log.append(jobId, "lease-1", 6, encode("WORLD\n"))).toEqual({
      ok: false,
      reason: "range_mismatch",
      received: 12,
    });
    expect(await log.append(jobId, "lease-1", 20, encode("x"))).toEqual({
      ok: false,
      reason: "range_mismatch",
      received: 12,
    });
    expect(await log.append(jobId, "other-lease", 12, encode("x"))).toEqual({
      ok: false,
      reason: "lease_lost",
    });
    const read = await log.read(jobId, 0);
    expect(decode(read.data)).toBe("hello world\n");
    expect(read).toMatchObject({ nextOffset: 12, isComplete: false });
    expect(decode((await log.read(jobId, 6)).data)).toBe("world\n");
  });

  it("keeps the logs of a workspace's jobs apart: leases, offsets, reads and ends", async () => {
    const a = newJob();
    const b = newJob();
    const log = env.RUN_LOG.getByName(WORKSPACE);
    await log.open(a.jobId, "lease-a");
    await log.open(b.jobId, "lease-b");
    expect(await log.append(a.jobId, "lease-a", 0, encode("plan a\n"))).toEqual({
      ok: true,
      received: 7,
    });
    expect(await log.append(b.jobId, "lease-a", 0, encode("x"))).toEqual({
      ok: false,
      reason: "lease_lost",
    });
    expect(await log.append(b.jobId, "lease-b", 0, encode("b\n"))).toEqual({
      ok: true,
      received: 2,
    });
    await log.finish(a.jobId, a.key);
    expect(decode((await log.read(a.jobId, 0)).data)).toBe("plan a\n");
    expect(await log.read(b.jobId, 0)).toMatchObject({ isComplete: false, nextOffset: 2 });
    expect(decode((await log.read(b.jobId, 0)).data)).toBe("b\n");
    expect(await log.append(b.jobId, "lease-b", 2, encode("more\n"))).toEqual({
      ok: true,
      received: 7,
    });
  });

  it("keeps its chunks when the object is evicted", async () => {
    const { jobId } = newJob();
    const log = env.RUN_LOG.getByName(WORKSPACE);
    await log.open(jobId, "l");
    await log.append(jobId, "l", 0, encode("before eviction\n"));
    await evictDurableObject(log);
    const again = env.RUN_LOG.getByName(WORKSPACE);
    expect(decode((await again.read(jobId, 0)).data)).toBe("before eviction\n");
    expect(await again.append(jobId, "l", 16, encode("after\n"))).toEqual({
      ok: true,
      received: 22,
    });
  });

  it("writes the whole log to R2 once when the job ends, then serves reads from there", async () => {
    const { jobId, key } = newJob();
    const log = env.RUN_LOG.getByName(WORKSPACE);
    await log.open(jobId, "l");
    const chunk = new Uint8Array(1024 * 1024).fill(97);
    await log.append(jobId, "l", 0, chunk);
    await log.append(jobId, "l", chunk.byteLength, encode("tail\n"));
    await log.finish(jobId, key);
    await log.finish(jobId, key);
    const object = await env.BLOBS.get(key);
    expect(object?.size).toBe(chunk.byteLength + 5);
    const tail = await log.read(jobId, chunk.byteLength);
    expect(decode(tail.data)).toBe("tail\n");
    expect(tail).toMatchObject({ isComplete: true, nextOffset: chunk.byteLength + 5 });
    expect(await log.append(jobId, "l", chunk.byteLength + 5, encode("late"))).toEqual({
      ok: false,
      reason: "lease_lost",
    });
  });

  it("caps a phase's log with one truncation marker and keeps offsets aligned", async () => {
    const { jobId, key } = newJob();
    const log = env.RUN_LOG.getByName(WORKSPACE);
    await log.open(jobId, "l");
    const chunk = new Uint8Array(1024 * 1024).fill(98);
    let offset = 0;
    for (let i = 0; i < 3; i++) {
      const res = await log.append(jobId, "l", offset, chunk);
      expect(res).toEqual({ ok: true, received: offset + chunk.byteLength });
      offset += chunk.byteLength;
    }
    // A retry of dropped bytes is acknowledged, not refused.
    expect(await log.append(jobId, "l", offset - chunk.byteLength, chunk)).toEqual({
      ok: true,
      received: offset,
    });
    await log.finish(jobId, key);
    const object = await env.BLOBS.get(key);
    const text = await object?.text();
    expect(text?.length).toBe(CAP + truncationMarker(CAP).length);
    expect(text?.endsWith(truncationMarker(CAP))).toBe(true);
  });

  it("ends a log with the coordinator's closing line, on a line of its own, once", async () => {
    const { jobId, key } = newJob();
    const log = env.RUN_LOG.getByName(WORKSPACE);
    await log.open(jobId, "l");
    await log.append(jobId, "l", 0, encode("Terraform is applying...\nnull_resource.a: Crea"));
    await log.finish(jobId, key, "Outpost: the apply ended without its agent's report: lost");
    await log.finish(jobId, key, "Outpost: a second closing line is never written");
    expect(await (await env.BLOBS.get(key))?.text()).toBe(
      "Terraform is applying...\nnull_resource.a: Crea\nOutpost: the apply ended without its agent's report: lost\n",
    );
    const never = newJob();
    await log.finish(
      never.jobId,
      never.key,
      "Outpost: the plan was canceled before an agent started it.",
    );
    expect(decode((await log.read(never.jobId, 0)).data)).toBe(
      "Outpost: the plan was canceled before an agent started it.\n",
    );
  });

  it("finishes a job that never logged without storing an object; its log reads complete", async () => {
    const { jobId, key } = newJob();
    const log = env.RUN_LOG.getByName(WORKSPACE);
    expect(await log.finish(jobId, key)).toEqual({ stored: 0 });
    expect(await env.BLOBS.get(key)).toBeNull();
    const read = await log.read(jobId, 0);
    expect(read).toMatchObject({ nextOffset: 0, isComplete: true });
    expect(read.data.byteLength).toBe(0);
    expect(await log.append(jobId, "lease_late", 0, new Uint8Array([1]))).toEqual({
      ok: false,
      reason: "lease_lost",
    });
  });
});
