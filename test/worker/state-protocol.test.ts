/**
 * The `http` backend as the real clients drive it: each test replays the request sequence a
 * terraform or tofu command sends (protocols.md §1), against the real Worker, D1 and R2.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createOrgToken } from "../../src/tokens/service.ts";
import type { ErrorBody } from "./helpers/api.ts";
import { snapshotD1 } from "./helpers/d1-snapshot.ts";
import { deps, seedOrg, type TestOrg, tokenActor } from "./helpers/fixtures.ts";
import {
  BackendClient,
  lockInfo,
  md5Base64,
  seedWorkspace,
  stateJson,
} from "./helpers/state-fixtures.ts";

type Versions = { serial: number; lineage: string; md5: string; created_by: string }[];

async function versions(workspaceId: string): Promise<Versions> {
  const rows = await env.DB.prepare(
    "SELECT serial, lineage, md5, created_by FROM state_versions WHERE workspace_id = ? AND discarded_at IS NULL ORDER BY serial",
  )
    .bind(workspaceId)
    .all<Versions[number]>();
  return rows.results;
}

async function setup(): Promise<{ org: TestOrg; ws: string; tf: BackendClient }> {
  const org = await seedOrg();
  const ws = await seedWorkspace(org);
  return { org, ws, tf: new BackendClient(ws, org.tokens.member) };
}

describe("terraform init / plan / apply", () => {
  it("init on an empty workspace: GET answers 204", async () => {
    const { tf } = await setup();
    const res = await tf.get();
    expect(res.status).toBe(204);
    expect(await res.text()).toBe("");
  });

  it("apply: LOCK, GET, POST ?ID= every 20 s with rising serials, final POST, UNLOCK", async () => {
    const { org, ws, tf } = await setup();
    const lineage = crypto.randomUUID();
    const info = lockInfo("OperationTypeApply");
    expect((await tf.lock(info)).status).toBe(200);
    expect((await tf.get()).status).toBe(204);
    for (const serial of [1, 2, 3, 4]) {
      const state = stateJson({
        serial,
        lineage,
        resources: [{ mode: "managed", type: "null_resource", name: `r${serial}`, instances: [] }],
      });
      const res = await tf.put(state);
      expect(res.status, await res.clone().text()).toBe(200);
    }
    const final = stateJson({
      serial: 5,
      lineage,
      outputs: { url: { value: "https://x", type: "string" } },
    });
    expect((await tf.put(final)).status).toBe(200);
    expect((await tf.unlock()).status).toBe(200);

    const stored = await versions(ws);
    expect(stored.map((v) => v.serial)).toEqual([1, 2, 3, 4, 5]);
    expect(new Set(stored.map((v) => v.lineage))).toEqual(new Set([lineage]));
    // Every version names the token that wrote it (an actor, with the token's description).
    expect(new Set(stored.map((v) => JSON.parse(v.created_by).id))).toEqual(
      new Set([await tokenId(org)]),
    );

    const read = await tf.get();
    expect(read.status).toBe(200);
    const body = await read.text();
    expect(body).toBe(final);
    expect(read.headers.get("content-md5")).toBe(await md5Base64(new TextEncoder().encode(final)));
    expect(await env.DB.prepare("SELECT * FROM state_locks").all()).toMatchObject({ results: [] });
  });

  it("plan: LOCK, GET, UNLOCK and no write", async () => {
    const { ws, tf } = await setup();
    const lineage = crypto.randomUUID();
    await tf.put(stateJson({ serial: 1, lineage }));
    expect((await tf.lock(lockInfo("OperationTypePlan"))).status).toBe(200);
    expect((await tf.get()).status).toBe(200);
    expect((await tf.unlock()).status).toBe(200);
    expect((await versions(ws)).length).toBe(1);
  });

  it("a write without a lock (lock_address unset or -lock=false) sends no ID and is accepted", async () => {
    const { tf } = await setup();
    const res = await tf.put(stateJson({ serial: 1, lineage: crypto.randomUUID() }));
    expect(res.status).toBe(200);
  });

  it("update_method PUT writes like POST", async () => {
    const { ws, tf } = await setup();
    const res = await tf.put(stateJson({ serial: 1, lineage: crypto.randomUUID() }), {
      method: "PUT",
    });
    expect(res.status).toBe(200);
    expect((await versions(ws)).length).toBe(1);
  });

  it("a bearer header (OpenTofu headers) works like basic auth", async () => {
    const org = await seedOrg();
    const ws = await seedWorkspace(org);
    const tofu = new BackendClient(ws, org.tokens.member, { bearer: true });
    expect((await tofu.put(stateJson({ serial: 1, lineage: "l" }))).status).toBe(200);
    expect((await tofu.get()).status).toBe(200);
  });
});

async function tokenId(org: TestOrg): Promise<string> {
  const row = await env.DB.prepare("SELECT id FROM org_tokens WHERE org_id = ? AND role = 'member'")
    .bind(org.orgId)
    .first<{ id: string }>();
  return row?.id ?? "";
}

describe("locks", () => {
  it("two clients contend: the second gets 423 with the holder's lock info as the body", async () => {
    const { org, ws, tf } = await setup();
    const bob = new BackendClient(ws, org.tokens.admin);
    const info = lockInfo("OperationTypeApply", "alice@laptop");
    expect((await tf.lock(info)).status).toBe(200);
    const res = await bob.lock(lockInfo("OperationTypeApply", "bob@laptop"));
    expect(res.status).toBe(423);
    const body = (await res.json()) as Record<string, unknown>;
    expect(body).toMatchObject(info);
    expect(body.error).toMatchObject({ code: "LOCKED" });
    // Bob's write without the lock ID is refused while Alice holds it.
    const write = await bob.put(stateJson({ serial: 1, lineage: "l" }));
    expect(write.status).toBe(409);
    expect(await write.text()).toContain("locked by");
    // Once Alice unlocks, Bob gets it.
    expect((await tf.unlock()).status).toBe(200);
    expect((await bob.lock()).status).toBe(200);
  });

  it("concurrent LOCKs with different IDs: exactly one wins", async () => {
    const { org, ws } = await setup();
    const clients = [org.tokens.member, org.tokens.admin, org.tokens.owner].map(
      (token) => new BackendClient(ws, token),
    );
    const answers = await Promise.all(clients.map((client) => client.lock()));
    expect(answers.map((r) => r.status).sort()).toEqual([200, 423, 423]);
  });

  it("a retried LOCK with the held ID answers 200 again", async () => {
    const { tf } = await setup();
    const info = lockInfo();
    expect((await tf.lock(info)).status).toBe(200);
    expect((await tf.lock(info)).status).toBe(200);
  });

  it("the same lock ID from another token is not a retry (423)", async () => {
    const { org, ws, tf } = await setup();
    const info = lockInfo();
    await tf.lock(info);
    const other = new BackendClient(ws, org.tokens.owner);
    expect((await other.lock(info)).status).toBe(423);
  });

  it("UNLOCK with another ID answers 409 with the lock; with no lock held 200", async () => {
    const { tf, ws, org } = await setup();
    const info = lockInfo();
    await tf.lock(info);
    const other = new BackendClient(ws, org.tokens.member);
    const res = await other.send("UNLOCK", other.address, JSON.stringify(lockInfo()));
    expect(res.status).toBe(409);
    expect(await res.json()).toMatchObject({ ID: info.ID });
    expect((await tf.unlock()).status).toBe(200);
    // A retried UNLOCK after the release finds nothing and still succeeds.
    expect((await tf.send("UNLOCK", tf.address, JSON.stringify(info))).status).toBe(200);
  });

  it("POST /lock and /unlock work for proxies that drop custom methods", async () => {
    const { tf, ws } = await setup();
    const info = lockInfo();
    expect((await tf.lock(info, { method: "POST", path: `/state/v1/${ws}/lock` })).status).toBe(
      200,
    );
    expect(
      (await tf.lock(lockInfo(), { method: "LOCK", path: `/state/v1/${ws}/lock` })).status,
    ).toBe(423);
    expect((await tf.put(stateJson({ serial: 1, lineage: "l" }))).status).toBe(200);
    expect((await tf.unlock({ method: "POST", path: `/state/v1/${ws}/unlock` })).status).toBe(200);
  });

  it("a write with a lock ID that is no longer held is refused (409)", async () => {
    const { tf, org, ws } = await setup();
    await tf.lock();
    const admin = new BackendClient(ws, org.tokens.admin);
    expect((await admin.terraformForceUnlock()).status).toBe(200);
    const res = await tf.put(stateJson({ serial: 1, lineage: "l" }));
    expect(res.status).toBe(409);
    expect(await res.text()).toContain("not held");
  });
});

describe("force-unlock", () => {
  async function auditActions(ws: string): Promise<unknown[]> {
    const rows = await env.DB.prepare(
      "SELECT action, actor FROM audit_events WHERE target_id = ? ORDER BY created_at",
    )
      .bind(ws)
      .all();
    return rows.results;
  }

  it("terraform force-unlock (empty UNLOCK body) by an admin releases and is audited", async () => {
    const { tf, org, ws } = await setup();
    await tf.lock();
    const admin = new BackendClient(ws, org.tokens.admin);
    const res = await admin.terraformForceUnlock();
    expect(res.status).toBe(200);
    expect(
      await env.DB.prepare("SELECT * FROM state_locks WHERE workspace_id = ?").bind(ws).first(),
    ).toBeNull();
    expect(await auditActions(ws)).toEqual([
      { action: "state.force_unlock", actor: expect.stringMatching(/^tok_/) },
    ]);
  });

  it("terraform force-unlock by a member answers 409 with the lock and changes nothing", async () => {
    const { tf, org, ws } = await setup();
    const info = lockInfo();
    await tf.lock(info);
    const before = await snapshotD1();
    const member = new BackendClient(ws, org.tokens.member);
    const res = await member.terraformForceUnlock();
    expect(res.status).toBe(409);
    expect(await res.json()).toMatchObject({ ID: info.ID });
    expect(await snapshotD1()).toEqual(before);
  });

  it("tofu force-unlock ID (OpenTofu ≥ 1.10) by an admin releases and is audited", async () => {
    const { tf, org, ws } = await setup();
    const info = lockInfo();
    await tf.lock(info);
    const admin = new BackendClient(ws, org.tokens.admin);
    expect((await admin.tofuForceUnlock(crypto.randomUUID())).status).toBe(409);
    expect((await admin.tofuForceUnlock(info.ID)).status).toBe(200);
    expect(await auditActions(ws)).toEqual([
      { action: "state.force_unlock", actor: expect.stringMatching(/^tok_/) },
    ]);
  });

  it("tofu force-unlock of another holder's lock by a member answers 409", async () => {
    const { tf, org, ws } = await setup();
    const info = lockInfo();
    await tf.lock(info);
    const other = new BackendClient(ws, (await seedOrgToken(org)) ?? "");
    expect((await other.tofuForceUnlock(info.ID)).status).toBe(409);
  });

  it("tofu force-unlock of one's own lock (a crashed apply, same token) releases it", async () => {
    const { tf, org, ws } = await setup();
    const info = lockInfo();
    await tf.lock(info);
    const again = new BackendClient(ws, org.tokens.member);
    expect((await again.tofuForceUnlock(info.ID)).status).toBe(200);
    expect(await auditActions(ws)).toEqual([
      { action: "state.force_unlock", actor: expect.stringMatching(/^tok_/) },
    ]);
  });
});

/** A second member token of the org (another person). */
async function seedOrgToken(org: TestOrg): Promise<string | undefined> {
  const created = await createOrgToken(deps, {
    orgId: org.orgId,
    role: "member",
    description: "bob",
    actor: tokenActor(org.ownerTokenId),
  });
  return created.token;
}

describe("serials, lineage and retries", () => {
  it("a retried write (same serial, same body) is a 200 no-op", async () => {
    const { tf, ws } = await setup();
    const state = stateJson({ serial: 1, lineage: "l" });
    expect((await tf.put(state)).status).toBe(200);
    const before = await snapshotD1();
    const retry = await tf.put(state);
    expect(retry.status).toBe(200);
    expect(await retry.json()).toMatchObject({ isNoop: true });
    expect(await snapshotD1()).toEqual(before);
    expect((await versions(ws)).length).toBe(1);
  });

  it("concurrent writes of the same serial with different bodies: exactly one is stored", async () => {
    const { org, ws, tf } = await setup();
    await tf.put(stateJson({ serial: 1, lineage: "l" }));
    const other = new BackendClient(ws, org.tokens.admin);
    const [a, b] = await Promise.all([
      tf.put(stateJson({ serial: 2, lineage: "l", terraformVersion: "1.9.6" })),
      other.put(stateJson({ serial: 2, lineage: "l", terraformVersion: "1.9.7" })),
    ]);
    expect([a.status, b.status].sort()).toEqual([200, 409]);
    expect((await versions(ws)).map((v) => v.serial)).toEqual([1, 2]);
  });

  it("refuses with 409 naming the rule: stale serial, same serial other body, other lineage", async () => {
    const { tf, ws } = await setup();
    expect((await tf.put(stateJson({ serial: 5, lineage: "l" }))).status).toBe(200);
    const cases = [
      { state: stateJson({ serial: 4, lineage: "l" }), message: "stale serial" },
      {
        state: stateJson({ serial: 5, lineage: "l", terraformVersion: "1.9.6" }),
        message: "same serial",
      },
      { state: stateJson({ serial: 6, lineage: "other" }), message: "lineage mismatch" },
    ];
    for (const { state, message } of cases) {
      const before = await snapshotD1();
      const res = await tf.put(state);
      expect(res.status).toBe(409);
      expect(((await res.json()) as { error: { message: string } }).error.message).toContain(
        message,
      );
      expect(await snapshotD1()).toEqual(before);
    }
    expect((await versions(ws)).map((v) => v.serial)).toEqual([5]);
    const listed = await env.BLOBS.list({ prefix: "orgs/" });
    expect(listed.objects.filter((o) => o.key.includes(ws)).length).toBe(2); // state + outputs
  });

  it("refuses bodies that are not state files (409) and a wrong Content-MD5 (400)", async () => {
    const { tf, ws } = await setup();
    const bad = [
      "",
      "not json",
      "[]",
      '{"version":4,"serial":1}',
      '{"version":5,"serial":1,"lineage":"l"}',
      '{"version":4,"serial":-1,"lineage":"l"}',
      '{"version":4,"serial":1.5,"lineage":"l"}',
      '{"version":4,"serial":"1","lineage":"l"}',
      '{"version":4,"serial":1,"lineage":""}',
      '{"version":4,"serial":1,"lineage":"l"',
      '{"version":4,"serial":1,"lineage":"l"} trailing',
      '{"version":4,"serial":1,"lineage":"l","x":[1,}',
    ];
    for (const body of bad) {
      const before = await snapshotD1();
      const res = await tf.put(body);
      expect(res.status, body).toBe(409);
      expect(await res.text()).toContain("not a state file");
      expect(await snapshotD1()).toEqual(before);
    }
    const state = stateJson({ serial: 1, lineage: "l" });
    const wrongMd5 = await tf.send("POST", tf.address, state, {
      "content-md5": await md5Base64(new TextEncoder().encode("other")),
    });
    expect(wrongMd5.status).toBe(400);
    const malformed = await tf.send("POST", tf.address, state, { "content-md5": "abc" });
    expect(malformed.status).toBe(400);
    expect(await versions(ws)).toEqual([]);
    const listed = await env.BLOBS.list({ prefix: `orgs/` });
    expect(listed.objects.filter((o) => o.key.includes(ws))).toEqual([]);
    // Twelve refusals, each with two whole-D1 snapshots: ~2.5 s alone, past 5 s on 2 busy cores.
  }, 20_000);

  it("accepts OpenTofu's encrypted envelope by its plain serial and lineage", async () => {
    const { tf, ws } = await setup();
    const envelope = (serial: number) =>
      JSON.stringify({
        serial,
        lineage: "enc-lineage",
        meta: { "key_provider.pbkdf2.main": "eyJzYWx0Ijoi" },
        encrypted_data: "c2VjcmV0",
        encryption_version: "v0",
      });
    expect((await tf.put(envelope(1))).status).toBe(200);
    expect((await tf.put(envelope(0))).status).toBe(409);
    expect((await tf.put(envelope(2))).status).toBe(200);
    const row = await env.DB.prepare(
      "SELECT is_encrypted, outputs_status FROM state_versions WHERE workspace_id = ? AND serial = 2",
    )
      .bind(ws)
      .first();
    expect(row).toEqual({ is_encrypted: 1, outputs_status: "encrypted" });
  });

  it("accepts a format version 3 state", async () => {
    const { tf } = await setup();
    const v3 = JSON.stringify({
      version: 3,
      terraform_version: "0.11.14",
      serial: 2,
      lineage: "l",
      modules: [],
    });
    expect((await tf.put(v3)).status).toBe(200);
  });
});

describe("DELETE", () => {
  it("an admin deletes the state: GET answers 204, history stays, a new lineage may start", async () => {
    const { tf, org, ws } = await setup();
    await tf.put(stateJson({ serial: 3, lineage: "old" }));
    const admin = new BackendClient(ws, org.tokens.admin);
    const res = await admin.send("DELETE", admin.address);
    expect(res.status).toBe(200);
    expect((await tf.get()).status).toBe(204);
    expect((await tf.put(stateJson({ serial: 1, lineage: "new" }))).status).toBe(200);
    const all = await env.DB.prepare(
      "SELECT serial, lineage, discarded_at IS NOT NULL AS discarded FROM state_versions WHERE workspace_id = ? ORDER BY created_at",
    )
      .bind(ws)
      .all();
    expect(all.results).toEqual([
      { serial: 3, lineage: "old", discarded: 1 },
      { serial: 1, lineage: "new", discarded: 0 },
    ]);
    const audit = await env.DB.prepare("SELECT action FROM audit_events WHERE target_id = ?")
      .bind(ws)
      .all();
    expect(audit.results).toEqual([{ action: "state.delete" }]);
  });

  it("refuses DELETE while someone else holds the lock (409)", async () => {
    const { tf, org, ws } = await setup();
    await tf.put(stateJson({ serial: 1, lineage: "l" }));
    await tf.lock();
    const admin = new BackendClient(ws, org.tokens.admin);
    expect((await admin.send("DELETE", admin.address)).status).toBe(409);
  });
});

describe("bad input", () => {
  it("answers 400 for a malformed workspace id, LOCK without or with invalid lock info", async () => {
    const { tf } = await setup();
    const badId = new BackendClient("no%20pe", (await setup()).org.tokens.member);
    expect((await badId.get()).status).toBe(400);
    const unknown = await new BackendClient("nope", (await setup()).org.tokens.member).get();
    expect(unknown.status).toBe(404);
    expect(((await unknown.json()) as ErrorBody).error.message).toBe(
      "no workspace named nope in this organization",
    );
    expect((await tf.send("LOCK", tf.address, "")).status).toBe(400);
    expect((await tf.send("LOCK", tf.address, "{nope")).status).toBe(400);
    expect((await tf.send("LOCK", tf.address, JSON.stringify({ ID: "" }))).status).toBe(400);
    expect((await tf.send("LOCK", tf.address, JSON.stringify({ ID: 3 }))).status).toBe(400);
    const wrongMd5 = { "content-md5": await md5Base64(new TextEncoder().encode("other")) };
    expect((await tf.send("LOCK", tf.address, JSON.stringify(lockInfo()), wrongMd5)).status).toBe(
      400,
    );
    expect((await tf.send("UNLOCK", tf.address, "", wrongMd5)).status).toBe(400);
    expect(
      (await tf.send("LOCK", tf.address, JSON.stringify({ ID: "x".repeat(70_000) }))).status,
    ).toBe(413);
  });

  it("answers 405 with Allow for other methods and 404 for unknown workspaces", async () => {
    const { tf, org } = await setup();
    const res = await tf.send("PATCH", tf.address, "{}");
    expect(res.status).toBe(405);
    expect(res.headers.get("allow")).toContain("LOCK");
    const missing = new BackendClient(`ws_${"a".repeat(26)}`, org.tokens.member);
    expect((await missing.get()).status).toBe(404);
  });

  it("refuses a Content-Length above the limit before reading the body (413)", async () => {
    const { tf } = await setup();
    const res = await tf.send("POST", tf.address, undefined, {
      "content-length": String(200 * 1024 * 1024),
    });
    expect([413]).toContain(res.status);
  });
});
