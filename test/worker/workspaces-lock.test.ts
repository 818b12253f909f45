import { env } from "cloudflare:workers";
import { eq } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { workspaces } from "../../src/db/schema.ts";
import { type ErrorBody, requestJson } from "./helpers/api.ts";
import { describeAuth } from "./helpers/auth-matrix.ts";
import { snapshotD1 } from "./helpers/d1-snapshot.ts";
import { db, seedOrg, type TestOrg } from "./helpers/fixtures.ts";
import { createWorkspace, tokenIdOf, type WorkspaceBody } from "./helpers/workspaces.ts";

type LockError = ErrorBody & { error: { details?: Record<string, unknown> } };

const lock = (ws: string, token: string, body: unknown = { reason: "maintenance" }) =>
  requestJson<WorkspaceBody & LockError>(`/api/v1/workspaces/${ws}/lock`, {
    method: "POST",
    token,
    body,
  });
const unlock = (ws: string, token: string, query = "") =>
  requestJson<WorkspaceBody & LockError>(`/api/v1/workspaces/${ws}/unlock${query}`, {
    method: "POST",
    token,
  });

async function actionsOf(targetId: string) {
  const rows = await env.DB.prepare(
    "SELECT action, actor FROM audit_events WHERE target_id = ? ORDER BY created_at, rowid",
  )
    .bind(targetId)
    .all<{ action: string; actor: string }>();
  return rows.results;
}

async function extraMember(org: TestOrg): Promise<string> {
  const res = await requestJson<{ token: string }>("/api/v1/tokens", {
    method: "POST",
    token: org.ownerToken,
    body: { role: "member", description: "second member" },
  });
  return res.body.token;
}

describe("POST /api/v1/workspaces/:workspaceId/lock and /unlock", () => {
  it("a member locks with a reason; the holder is its token id; the holder unlocks", async () => {
    const org = await seedOrg();
    const ws = await createWorkspace(org);
    const memberId = await tokenIdOf(org.tokens.member);
    const locked = await lock(ws.name, org.tokens.member, { reason: "  upgrading providers " });
    expect(locked.status, JSON.stringify(locked.body)).toBe(200);
    expect(locked.body.lock).toMatchObject({
      lockedBy: memberId,
      holderKind: "user",
      reason: "upgrading providers",
    });
    const row = await db.query.workspaces.findFirst({ where: eq(workspaces.id, ws.id) });
    expect(row?.lockedBy).toBe(memberId);
    expect(row?.lockReason).toBe("upgrading providers");

    // A retry by the holder changes nothing and records nothing.
    const before = await snapshotD1();
    const again = await lock(ws.id, org.tokens.member, { reason: "other" });
    expect(again.status).toBe(200);
    expect(again.body.lock?.reason).toBe("upgrading providers");
    expect(await snapshotD1()).toEqual(before);

    const released = await unlock(ws.id, org.tokens.member);
    expect(released.status).toBe(200);
    expect(released.body.lock).toBeNull();
    expect(await actionsOf(ws.id)).toEqual([
      { action: "workspace.create", actor: org.ownerTokenId },
      { action: "workspace.lock", actor: memberId },
      { action: "workspace.unlock", actor: memberId },
    ]);
    // Unlocking an unlocked workspace succeeds and writes nothing.
    const idle = await snapshotD1();
    expect((await unlock(ws.id, org.tokens.member)).status).toBe(200);
    expect(await snapshotD1()).toEqual(idle);
  });

  it("another token cannot take or release the lock; an admin must force, and that is audited", async () => {
    const org = await seedOrg();
    const ws = await createWorkspace(org);
    const memberId = await tokenIdOf(org.tokens.member);
    expect((await lock(ws.id, org.tokens.member)).status).toBe(200);
    const other = await extraMember(org);
    const before = await snapshotD1();

    const taken = await lock(ws.id, other);
    expect(taken.status).toBe(409);
    expect(taken.body.error.details).toEqual({ lockedBy: memberId });
    const notHolder = await unlock(ws.id, other, "?force=true");
    expect(notHolder.status).toBe(403);
    expect(notHolder.body.error.code).toBe("FORBIDDEN");
    const adminNoForce = await unlock(ws.id, org.tokens.admin);
    expect(adminNoForce.status).toBe(409);
    expect(adminNoForce.body.error.message).toMatch(/force=true/);
    const adminLock = await lock(ws.id, org.tokens.admin);
    expect(adminLock.status).toBe(409);
    expect(await snapshotD1()).toEqual(before);

    const forced = await unlock(ws.id, org.tokens.admin, "?force=true");
    expect(forced.status).toBe(200);
    expect(forced.body.lock).toBeNull();
    const events = await actionsOf(ws.id);
    expect(events.at(-1)).toEqual({
      action: "workspace.force_unlock",
      actor: await tokenIdOf(org.tokens.admin),
    });
  });

  it("two tokens racing for the lock: one wins, one gets 409, one audit event", async () => {
    const org = await seedOrg();
    const ws = await createWorkspace(org);
    const other = await extraMember(org);
    const results = await Promise.all([lock(ws.id, org.tokens.member), lock(ws.id, other)]);
    expect(results.map((r) => r.status).sort()).toEqual([200, 409]);
    const events = (await actionsOf(ws.id)).filter((e) => e.action === "workspace.lock");
    expect(events).toHaveLength(1);
    const winner = results.find((r) => r.status === 200);
    expect(events[0]?.actor).toBe(winner?.body.lock?.lockedBy);
  });

  it("a run's lock is shown as such and only an admin can force it open", async () => {
    const org = await seedOrg();
    const ws = await createWorkspace(org);
    await db
      .update(workspaces)
      .set({ lockedBy: "run_abc", lockReason: "run", lockedAt: Date.now() })
      .where(eq(workspaces.id, ws.id));
    const got = await requestJson<WorkspaceBody>(`/api/v1/workspaces/${ws.id}`, {
      token: org.tokens.reader,
    });
    expect(got.body.lock).toMatchObject({ lockedBy: "run_abc", holderKind: "run" });
    expect((await lock(ws.id, org.tokens.member)).status).toBe(409);
    expect((await unlock(ws.id, org.tokens.member, "?force=true")).status).toBe(403);
    expect((await unlock(ws.id, org.tokens.owner, "?force=true")).status).toBe(200);
  });

  it("refuses bad lock bodies and bad unlock queries with 4xx and changes nothing", async () => {
    const org = await seedOrg();
    const ws = await createWorkspace(org);
    const before = await snapshotD1();
    for (const body of [
      {},
      { reason: "" },
      { reason: "   " },
      { reason: 7 },
      { reason: "x", extra: 1 },
    ]) {
      const res = await lock(ws.id, org.tokens.member, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
    }
    const long = await lock(ws.id, org.tokens.member, { reason: "r".repeat(501) });
    expect(long.status).toBe(400);
    const malformed = await requestJson<ErrorBody>(`/api/v1/workspaces/${ws.id}/lock`, {
      method: "POST",
      token: org.tokens.member,
      body: "{",
      headers: { "content-type": "application/json" },
    });
    expect(malformed.status).toBe(400);
    const wrongType = await requestJson<ErrorBody>(`/api/v1/workspaces/${ws.id}/lock`, {
      method: "POST",
      token: org.tokens.member,
      body: "reason=x",
      headers: { "content-type": "application/x-www-form-urlencoded" },
    });
    expect(wrongType.status).toBe(415);
    const huge = await lock(ws.id, org.tokens.member, { reason: "x".repeat(300_000) });
    expect(huge.status).toBe(413);
    for (const query of ["?force=yes", "?force=1", "?other=true"]) {
      const res = await unlock(ws.id, org.tokens.admin, query);
      expect(res.status, query).toBe(400);
    }
    expect((await lock("missing-ws", org.tokens.member)).status).toBe(404);
    expect((await unlock("missing-ws", org.tokens.member)).status).toBe(404);
    expect(await snapshotD1()).toEqual(before);
    // Many cases, each with two full D1 snapshots: slower than the default 5 s on a busy machine.
  }, 30_000);
});

describeAuth("POST /api/v1/workspaces/:workspaceId/lock", {
  role: "member",
  target: async (org) => ({
    method: "POST",
    path: `/api/v1/workspaces/${(await createWorkspace(org)).id}/lock`,
    body: { reason: "auth matrix" },
  }),
});
describeAuth("POST /api/v1/workspaces/:workspaceId/unlock", {
  role: "member",
  target: async (org) => {
    const ws = await createWorkspace(org);
    expect((await lock(ws.id, org.ownerToken)).status).toBe(200);
    return { method: "POST", path: `/api/v1/workspaces/${ws.id}/unlock?force=true` };
  },
});
