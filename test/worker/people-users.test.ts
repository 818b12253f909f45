/** People: the caller, users (admins list, owners disable), personal tokens, teams and members. */

import { eq } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { auditEvents } from "../../src/db/schema.ts";
import { signInUser } from "../../src/users/service.ts";
import { type ErrorBody, requestJson } from "./helpers/api.ts";
import { describeAuth } from "./helpers/auth-matrix.ts";
import { snapshotD1 } from "./helpers/d1-snapshot.ts";
import { db, seedOrg } from "./helpers/fixtures.ts";
import { addMember, seedTeam, seedUser, sessionCookieOf } from "./helpers/people.ts";
import { seedWorkspace } from "./helpers/state-fixtures.ts";

type UserBody = {
  id: string;
  email: string;
  organizationRole: string | null;
  teams: { id: string; name: string; source: string }[];
  isDisabled: boolean;
};

describe("GET /api/v1/user", () => {
  it("names the caller with its teams and the highest organization role among them", async () => {
    const org = await seedOrg();
    const user = await seedUser(org, { name: "Ada Lovelace" });
    const [readers, admins] = await Promise.all([
      seedTeam(org, { role: "reader" }),
      seedTeam(org, { role: "admin" }),
    ]);
    await addMember(org, readers, user);
    await addMember(org, admins, user);
    const me = await requestJson<UserBody>("/api/v1/user", { token: user.token });
    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({
      id: user.userId,
      email: user.email,
      name: "Ada Lovelace",
      organizationRole: "admin",
    });
    expect(me.body.teams.map((t) => t.id).sort()).toEqual([readers.teamId, admins.teamId].sort());
    const org2 = await requestJson<{ role: string }>("/api/v1/organization", { token: user.token });
    expect(org2.body.role).toBe("admin");
  });

  it("refuses an org or team token: they are not a person (403)", async () => {
    const org = await seedOrg();
    const team = await seedTeam(org);
    for (const token of [org.ownerToken, team.token]) {
      const res = await requestJson<ErrorBody>("/api/v1/user", { token });
      expect(res.status).toBe(403);
      expect(res.body.error.message).toMatch(/not a person/);
    }
  });
});

describe("GET /api/v1/users and PATCH /api/v1/users/:id", () => {
  it("lists users for admins; an owner disables one and every session and token of theirs ends at once", async () => {
    const org = await seedOrg();
    const user = await seedUser(org);
    const cookie = await sessionCookieOf(org, user);
    const sameSite = { cookie, "sec-fetch-site": "same-origin" };
    expect((await requestJson("/api/v1/user", { headers: sameSite })).status).toBe(200);
    const list = await requestJson<{ users: UserBody[] }>("/api/v1/users", {
      token: org.tokens.admin,
    });
    expect(list.body.users.map((u) => u.id)).toContain(user.userId);
    const res = await requestJson<UserBody>(`/api/v1/users/${user.userId}`, {
      method: "PATCH",
      token: org.ownerToken,
      body: { disabled: true },
    });
    expect(res.status).toBe(200);
    expect(res.body.isDisabled).toBe(true);
    expect((await requestJson("/api/v1/user", { token: user.token })).status).toBe(401);
    expect((await requestJson("/api/v1/user", { headers: sameSite })).status).toBe(401);
    // The next sign-in is refused too.
    const again = await signInUser(db, {
      orgId: org.orgId,
      email: user.email,
      name: "",
      subject: null,
      method: "sso",
      groups: null,
      now: Date.now(),
    });
    expect(again).toMatchObject({ ok: false, reason: { kind: "revoked" } });
    const events = await db.select().from(auditEvents).where(eq(auditEvents.targetId, user.userId));
    expect(events.map((e) => e.action)).toContain("user.disable");
    // Enabled again: they may sign in; their old token stays revoked.
    const enabled = await requestJson<UserBody>(`/api/v1/users/${user.userId}`, {
      method: "PATCH",
      token: org.ownerToken,
      body: { disabled: false },
    });
    expect(enabled.body.isDisabled).toBe(false);
    expect((await requestJson("/api/v1/user", { token: user.token })).status).toBe(401);
  });

  it("refuses a body it does not take and an unknown user, changing nothing", async () => {
    const org = await seedOrg();
    const user = await seedUser(org);
    const before = await snapshotD1();
    const bad = await requestJson<ErrorBody>(`/api/v1/users/${user.userId}`, {
      method: "PATCH",
      token: org.ownerToken,
      body: { disabled: "yes" },
    });
    expect(bad.status).toBe(400);
    expect(bad.body.error.message).toMatch(/disabled must be true or false/);
    const unknown = await requestJson(`/api/v1/users/usr_${"a".repeat(26)}`, {
      method: "PATCH",
      token: org.ownerToken,
      body: { disabled: true },
    });
    expect(unknown.status).toBe(404);
    expect(await snapshotD1()).toEqual(before);
  });
});

describeAuth("GET /api/v1/users", {
  role: "admin",
  target: () => ({ method: "GET", path: "/api/v1/users" }),
  hasOrgIds: false,
});
describeAuth("PATCH /api/v1/users/:userId", {
  role: "owner",
  target: async (org) => ({
    method: "PATCH",
    path: `/api/v1/users/${(await seedUser(org)).userId}`,
    body: { disabled: true },
  }),
});

describe("personal tokens", () => {
  it("are created (shown once), listed, and revoked: the next request gets 401", async () => {
    const org = await seedOrg();
    const user = await seedUser(org);
    const created = await requestJson<{ id: string; token: string; expiresAt: string | null }>(
      "/api/v1/user/tokens",
      {
        method: "POST",
        token: user.token,
        body: { description: "laptop", expiresInSeconds: 3600 },
      },
    );
    expect(created.status).toBe(201);
    expect(created.body.token).toMatch(/^op_user_[A-Za-z0-9_-]{43}$/);
    expect(created.body.expiresAt).not.toBeNull();
    const listed = await requestJson<{ tokens: { id: string; token?: string }[] }>(
      "/api/v1/user/tokens",
      {
        token: created.body.token,
      },
    );
    expect(listed.body.tokens.map((t) => t.id)).toContain(created.body.id);
    expect(JSON.stringify(listed.body)).not.toContain(created.body.token);
    const revoked = await requestJson(`/api/v1/user/tokens/${created.body.id}`, {
      method: "DELETE",
      token: user.token,
    });
    expect(revoked.status).toBe(200);
    const after = await requestJson<ErrorBody>("/api/v1/user", { token: created.body.token });
    expect(after.status).toBe(401);
    expect(after.body.error.code).toBe("TOKEN_REVOKED");
  });

  it("act with the user's permissions of the moment", async () => {
    const org = await seedOrg();
    const user = await seedUser(org);
    const workspaceId = await seedWorkspace(org);
    expect(
      (await requestJson(`/api/v1/workspaces/${workspaceId}`, { token: user.token })).status,
    ).toBe(404);
    const readers = await seedTeam(org, { role: "reader" });
    await addMember(org, readers, user);
    expect(
      (await requestJson(`/api/v1/workspaces/${workspaceId}`, { token: user.token })).status,
    ).toBe(200);
  });

  it("another user's token id is not found, and nothing changes", async () => {
    const org = await seedOrg();
    const [alice, bob] = await Promise.all([seedUser(org), seedUser(org)]);
    const before = await snapshotD1();
    const res = await requestJson(`/api/v1/user/tokens/${bob.tokenId}`, {
      method: "DELETE",
      token: alice.token,
    });
    expect(res.status).toBe(404);
    expect(await snapshotD1()).toEqual(before);
  });

  it("refuses an expiry out of range (400)", async () => {
    const org = await seedOrg();
    const user = await seedUser(org);
    const res = await requestJson<ErrorBody>("/api/v1/user/tokens", {
      method: "POST",
      token: user.token,
      body: { description: "x", expiresInSeconds: 5 },
    });
    expect(res.status).toBe(400);
    expect(res.body.error.issues?.[0]?.path).toBe("json.expiresInSeconds");
  });
});

describe("teams", () => {
  it("an owner creates, renames, maps groups, gives a role, adds and removes members, and deletes", async () => {
    const org = await seedOrg();
    const user = await seedUser(org);
    const created = await requestJson<{ id: string; name: string }>("/api/v1/teams", {
      method: "POST",
      token: org.ownerToken,
      body: { name: "platform", idpGroups: ["eng", "eng"], organizationRole: "member" },
    });
    expect(created.status).toBe(201);
    const teamId = created.body.id;
    const dup = await requestJson("/api/v1/teams", {
      method: "POST",
      token: org.ownerToken,
      body: { name: "platform" },
    });
    expect(dup.status).toBe(409);
    const patched = await requestJson<{
      name: string;
      idpGroups: string[];
      organizationRole: string | null;
    }>(`/api/v1/teams/${teamId}`, {
      method: "PATCH",
      token: org.ownerToken,
      body: { name: "platform-eng", idpGroups: ["sre"], organizationRole: null },
    });
    expect(patched.body).toMatchObject({
      name: "platform-eng",
      idpGroups: ["sre"],
      organizationRole: null,
    });
    const added = await requestJson<{ members: { id: string; source: string }[] }>(
      `/api/v1/teams/${teamId}/members/${user.userId}`,
      { method: "PUT", token: org.ownerToken },
    );
    expect(added.body.members).toEqual([
      expect.objectContaining({ id: user.userId, source: "manual" }),
    ]);
    const removed = await requestJson<{ members: unknown[] }>(
      `/api/v1/teams/${teamId}/members/${user.userId}`,
      {
        method: "DELETE",
        token: org.ownerToken,
      },
    );
    expect(removed.body.members).toEqual([]);
    const token = await requestJson<{ id: string; token: string }>(
      `/api/v1/teams/${teamId}/tokens`,
      {
        method: "POST",
        token: org.ownerToken,
        body: { description: "ci" },
      },
    );
    expect(token.body.token).toMatch(/^op_team_/);
    expect((await requestJson("/api/v1/organization", { token: token.body.token })).status).toBe(
      200,
    );
    const deleted = await requestJson(`/api/v1/teams/${teamId}`, {
      method: "DELETE",
      token: org.ownerToken,
    });
    expect(deleted.status).toBe(204);
    // The team's token went with it.
    expect((await requestJson("/api/v1/organization", { token: token.body.token })).status).toBe(
      401,
    );
  });

  it("membership from the provider's groups follows them at every sign-in; a manual one stays", async () => {
    const org = await seedOrg();
    const [eng, ops, manual] = await Promise.all([
      seedTeam(org, { groups: ["eng"] }),
      seedTeam(org, { groups: ["ops"] }),
      seedTeam(org),
    ]);
    const user = await seedUser(org, { groups: ["eng", "ops"] });
    await addMember(org, manual, user);
    const teamsOf = async () =>
      (await requestJson<UserBody>("/api/v1/user", { token: user.token })).body.teams
        .map((t) => t.id)
        .sort();
    expect(await teamsOf()).toEqual([eng.teamId, ops.teamId, manual.teamId].sort());
    await signInUser(db, {
      orgId: org.orgId,
      email: user.email,
      name: "",
      subject: null,
      method: "sso",
      groups: ["ops"],
      now: Date.now(),
    });
    expect(await teamsOf()).toEqual([ops.teamId, manual.teamId].sort());
    const audit = await db.select().from(auditEvents).where(eq(auditEvents.targetId, eng.teamId));
    expect(audit.map((e) => e.action)).toContain("team.member.remove");
  });

  it("refuses invalid input (400) and other organizations' teams (404)", async () => {
    const [org, other] = await Promise.all([seedOrg(), seedOrg()]);
    const foreign = await seedTeam(other);
    const before = await snapshotD1();
    const bad = await requestJson<ErrorBody>("/api/v1/teams", {
      method: "POST",
      token: org.ownerToken,
      body: { name: "", organizationRole: "god" },
    });
    expect(bad.status).toBe(400);
    const res = await requestJson(`/api/v1/teams/${foreign.teamId}`, { token: org.ownerToken });
    expect(res.status).toBe(404);
    expect(await snapshotD1()).toEqual(before);
  });
});

describeAuth("POST /api/v1/teams", {
  role: "owner",
  target: () => ({ method: "POST", path: "/api/v1/teams", body: { name: "t" } }),
  hasOrgIds: false,
});
describeAuth("PATCH /api/v1/teams/:teamId", {
  role: "owner",
  target: async (org) => ({
    method: "PATCH",
    path: `/api/v1/teams/${(await seedTeam(org)).teamId}`,
    body: { organizationRole: "owner" },
  }),
});
describeAuth("POST /api/v1/teams/:teamId/tokens", {
  role: "owner",
  target: async (org) => ({
    method: "POST",
    path: `/api/v1/teams/${(await seedTeam(org)).teamId}/tokens`,
    body: { description: "x" },
  }),
});
describeAuth("PUT /api/v1/teams/:teamId/members/:userId", {
  role: "owner",
  target: async (org) => {
    const [team, user] = await Promise.all([seedTeam(org), seedUser(org)]);
    return { method: "PUT", path: `/api/v1/teams/${team.teamId}/members/${user.userId}` };
  },
});
describeAuth("PUT /api/v1/workspaces/:id/team-access/:teamId", {
  role: "admin",
  target: async (org) => {
    const [team, id] = await Promise.all([seedTeam(org), seedWorkspace(org)]);
    return {
      method: "PUT",
      path: `/api/v1/workspaces/${id}/team-access/${team.teamId}`,
      body: { access: "write" },
    };
  },
});
