/** The pure parts of the state backend: the streaming JSON scanner and the rule tables. */
import { describe, expect, it } from "vitest";
import { JsonScanner } from "../../src/state/json-scan.ts";
import {
  type Caller,
  checkWriteLock,
  decideLock,
  decideUnlock,
  decideWrite,
  type HeldLock,
  readStateHeader,
  STATE_FIELDS,
} from "../../src/state/model.ts";

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Scans `text` split into chunks of `size` bytes. */
function scan(text: string, size: number, specs = STATE_FIELDS) {
  const bytes = encoder.encode(text);
  const scanner = new JsonScanner(specs);
  for (let at = 0; at < bytes.length; at += size) {
    if (!scanner.push(bytes.subarray(at, at + size))) {
      break;
    }
  }
  return scanner.finish();
}

describe("JsonScanner", () => {
  const doc = `{"version": 4, "terraform_version":"1.9.5","serial":17,"lineage":"a\\"b-ü",
    "outputs":{"x":{"value":{"nested":[1,2.5e3,-0.5,true,false,null,"s\\u00e9"]},"type":"string","sensitive":true}},
    "resources":[{"attributes":{"serial":99,"lineage":"inner"}}],"check_results":null}`;

  it("captures the same top-level members however the input is chunked", () => {
    const whole = scan(doc, doc.length * 4);
    expect(whole.ok).toBe(true);
    for (let size = 1; size <= 13; size++) {
      const parts = scan(doc, size);
      expect(parts, `chunk size ${size}`).toEqual(whole);
    }
    if (!whole.ok) {
      return;
    }
    const raw = (name: string) => decoder.decode(whole.fields.get(name)?.raw ?? new Uint8Array());
    expect(raw("serial")).toBe("17");
    expect(JSON.parse(raw("lineage"))).toBe('a"b-ü');
    expect(JSON.parse(raw("outputs"))).toEqual(JSON.parse(doc).outputs);
    const span = whole.fields.get("serial");
    const bytes = encoder.encode(doc);
    expect(decoder.decode(bytes.subarray(span?.start, span?.end))).toBe("17");
  });

  it("reads only top-level members (nested serial/lineage are ignored)", () => {
    const header = scan(doc, 5);
    expect(header.ok && readStateHeader(header.fields)).toMatchObject({
      ok: true,
      value: { serial: 17, lineage: 'a"b-ü', terraformVersion: "1.9.5", isEncrypted: false },
    });
  });

  it.each([
    ["", "empty"],
    ["   ", "empty"],
    ["[1]", "not a JSON object"],
    ['"s"', "not a JSON object"],
    ["{", "ends early"],
    ['{"a":1,}', "member name"],
    ['{"a" 1}', "':'"],
    ['{"a":01}', "invalid number"],
    ['{"a":1.}', "invalid number"],
    ['{"a":-}', "invalid number"],
    ['{"a":tru}', "invalid literal"],
    ['{"a":"\\x"}', "invalid escape"],
    ['{"a":"\\u12g4"}', "\\u escape"],
    ['{"a":"line\nbreak"}', "control character"],
    ['{"a":[1,2}', "',' or the end"],
    ['{"a":1} {}', "after the JSON value"],
    ['{"a":[1]]}', "',' or the end"],
    [`{"a":${"[".repeat(600)}${"]".repeat(600)}}`, "nesting too deep"],
  ])("refuses %j (%s)", (text, reason) => {
    for (const size of [1, 3, 1000]) {
      const outcome = scan(text, size);
      expect(outcome.ok).toBe(false);
      expect(outcome.ok ? "" : outcome.reason).toContain(reason);
    }
  });

  it("drops a capture that exceeds its limit but still validates the rest", () => {
    const big = `{"outputs":{"x":"${"y".repeat(100)}"},"serial":1}`;
    const outcome = scan(big, 7, { outputs: { maxBytes: 50 }, serial: { maxBytes: 8 } });
    expect(outcome.ok).toBe(true);
    if (outcome.ok) {
      expect(outcome.fields.get("outputs")).toMatchObject({ kind: "object", raw: null });
      expect(decoder.decode(outcome.fields.get("serial")?.raw ?? new Uint8Array())).toBe("1");
    }
  });
});

describe("readStateHeader", () => {
  it.each([
    ['{"version":4,"serial":0,"lineage":"l"}', { serial: 0, lineage: "l" }],
    ['{"version":3,"serial":2,"lineage":"l"}', { serial: 2 }],
    [
      '{"serial":3,"lineage":"l","meta":{},"encrypted_data":"e","encryption_version":"v0"}',
      { serial: 3, isEncrypted: true, outputs: { status: "encrypted" } },
    ],
  ])("accepts %s", (text, expected) => {
    const scanned = scan(text, 4);
    expect(scanned.ok && readStateHeader(scanned.fields)).toMatchObject({
      ok: true,
      value: expected,
    });
  });

  it.each([
    ['{"serial":1,"lineage":"l"}', "version"],
    ['{"version":"4","serial":1,"lineage":"l"}', "version"],
    ['{"version":4.0,"serial":1,"lineage":"l"}', "4.0"],
    ['{"version":4,"lineage":"l"}', "serial"],
    ['{"version":4,"serial":1e2,"lineage":"l"}', "serial"],
    ['{"version":4,"serial":99999999999999999999,"lineage":"l"}', "too large"],
    ['{"version":4,"serial":1,"lineage":7}', "lineage"],
    ['{"serial":1,"lineage":"l","encrypted_data":5,"encryption_version":"v0"}', "version"],
  ])("refuses %s (%s)", (text, reason) => {
    const scanned = scan(text, 4);
    const header = scanned.ok ? readStateHeader(scanned.fields) : null;
    expect(header?.ok).toBe(false);
    expect(header && !header.ok ? header.reason : "").toContain(reason);
  });
});

describe("decideWrite", () => {
  const current = { serial: 5, lineage: "L", md5: "m5" };
  it.each([
    ["no state yet", null, { serial: 0, lineage: "X", md5: "a" }, "accept"],
    ["a higher serial", current, { serial: 6, lineage: "L", md5: "a" }, "accept"],
    ["a retried write", current, { serial: 5, lineage: "L", md5: "m5" }, "noop"],
    ["same serial, other body", current, { serial: 5, lineage: "L", md5: "zz" }, "refuse"],
    ["a lower serial", current, { serial: 4, lineage: "L", md5: "a" }, "refuse"],
    ["another lineage", current, { serial: 9, lineage: "M", md5: "a" }, "refuse"],
  ] as const)("%s → %s", (_name, now, incoming, kind) => {
    expect(decideWrite(now, incoming).kind).toBe(kind);
  });
});

describe("lock rules", () => {
  const alice: Caller = { principalId: "tok_alice", runId: null, jobId: null, isAdmin: false };
  const bob: Caller = { principalId: "tok_bob", runId: null, jobId: null, isAdmin: false };
  const admin: Caller = { principalId: "tok_admin", runId: null, jobId: null, isAdmin: true };
  const run: Caller = {
    principalId: "run_r",
    runId: "run_r",
    jobId: "run_r:plan",
    isAdmin: false,
  };
  const held: HeldLock = { lockId: "L1", info: '{"ID":"L1"}', runId: null, createdBy: "tok_alice" };
  const runLock: HeldLock = {
    lockId: "R1",
    info: '{"ID":"R1"}',
    runId: "run_r",
    createdBy: "run_r",
  };

  it.each([
    ["free, no ID", null, null, alice, true],
    ["free, stale ID", null, "L1", alice, false],
    ["held, holder's ID", held, "L1", alice, true],
    ["held, holder's ID from another token", held, "L1", bob, false],
    ["held, other ID", held, "L2", alice, false],
    ["held, no ID", held, null, alice, false],
    ["held by the run, the run without ID", runLock, null, run, true],
    ["held by the run, a user without ID", runLock, null, admin, false],
  ] as const)("write: %s → %s", (_name, lock, id, caller, allowed) => {
    expect(checkWriteLock(lock, id, caller).ok).toBe(allowed);
  });

  it.each([
    ["free", null, "L1", alice, "acquire"],
    ["retry by the holder", held, "L1", alice, "already_held"],
    ["same ID, other token", held, "L1", bob, "conflict"],
    ["other ID", held, "L2", alice, "conflict"],
  ] as const)("LOCK: %s → %s", (_name, lock, id, caller, decision) => {
    expect(decideLock(lock, id, caller)).toBe(decision);
  });

  const info = (id: string, text = '{"ID":"L1"}') => ({ kind: "info" as const, id, text });
  it.each([
    ["nothing held", null, info("L1"), alice, "none_held", false],
    ["holder, own body", held, info("L1"), alice, "release", false],
    [
      "holder, ID only (tofu force-unlock)",
      held,
      info("L1", '{"ID":"L1","Who":""}'),
      alice,
      "release",
      true,
    ],
    ["other member, right ID", held, info("L1"), bob, "conflict", false],
    ["admin, right ID", held, info("L1"), admin, "release", true],
    ["anyone, wrong ID", held, info("L9"), admin, "conflict", false],
    ["empty body, member", held, { kind: "empty" as const }, alice, "conflict", false],
    ["empty body, admin", held, { kind: "empty" as const }, admin, "release", true],
  ] as const)("UNLOCK: %s → %s", (_name, lock, request, caller, kind, forced) => {
    const decision = decideUnlock(lock, request, caller);
    expect(decision.kind).toBe(kind);
    expect(decision.kind === "release" && decision.isForced).toBe(forced);
  });
});
