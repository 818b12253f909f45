/**
 * Teams and team access through the TFE API, as go-tfe's `Teams` and `TeamAccess` send them (the
 * `tfe_team` and `tfe_team_access` resources); a grant made here gives the team's members their
 * access at once. Refusals change nothing; every route passes the auth matrix.
 */
import { describe, expect, it } from "vitest";
import { describeAccess, describeAuth } from "./helpers/auth-matrix.ts";
import { snapshotD1 } from "./helpers/d1-snapshot.ts";
import { seedOrg, type TestOrg } from "./helpers/fixtures.ts";
import { addMember, seedTeam, seedUser } from "./helpers/people.ts";
import {
  type Document,
  type ErrorsDocument,
  JSONAPI,
  type ListDocument,
  orgName,
  tfe,
} from "./helpers/tfe.ts";
import { createWorkspace } from "./helpers/workspaces.ts";

const json = { "content-type": JSONAPI };
const teamDocument = (attributes: Record<string, unknown>) => ({
  data: { type: "teams", attributes },
});
const grantDocument = (access: string, teamId: string, workspaceId: string) => ({
  data: {
    type: "team-workspaces",
    attributes: { access },
    relationships: {
      team: { data: { type: "teams", id: teamId } },
      workspace: { data: { type: "workspaces", id: workspaceId } },
    },
  },
});

async function createTeam(org: TestOrg, name = `team-${crypto.randomUUID().slice(0, 8)}`) {
  const res = await tfe<Document>(`/organizations/${await orgName(org)}/teams`, {
    method: "POST",
    token: org.ownerToken,
    body: teamDocument({ name }),
  });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.data;
}

describe("teams", () => {
  it("creates, lists, reads, renames and deletes a team", async () => {
    const org = await seedOrg();
    const team = await createTeam(org, "platform");
    expect(team).toMatchObject({
      type: "teams",
      attributes: { name: "platform", "users-count": 0 },
    });
    const listed = await tfe<ListDocument>(`/organizations/${await orgName(org)}/teams?q=PLAT`, {
      token: org.tokens.reader,
    });
    expect(listed.body.data.map((t) => t.id)).toEqual([team.id]);
    const renamed = await tfe<Document>(`/teams/${team.id}`, {
      method: "PATCH",
      token: org.ownerToken,
      body: teamDocument({
        name: "platform-core",
        "organization-access": { "manage-workspaces": false },
      }),
    });
    expect(renamed.body.data.attributes.name).toBe("platform-core");
    const read = await tfe<Document>(`/teams/${team.id}`, { token: org.tokens.reader });
    expect(read.body.data.attributes.name).toBe("platform-core");
    const deleted = await tfe<null>(`/teams/${team.id}`, {
      method: "DELETE",
      token: org.ownerToken,
    });
    expect(deleted.status).toBe(204);
    expect((await tfe(`/teams/${team.id}`, { token: org.ownerToken })).status).toBe(404);
  });

  it("refuses organization access, a missing or taken name, changing nothing", async () => {
    const org = await seedOrg();
    const taken = await createTeam(org, "taken");
    const name = await orgName(org);
    const before = await snapshotD1();
    const refusals: [string, string, unknown, number][] = [
      [
        "POST",
        `/organizations/${name}/teams`,
        teamDocument({ name: "admins", "organization-access": { "manage-workspaces": true } }),
        400,
      ],
      ["POST", `/organizations/${name}/teams`, teamDocument({}), 400],
      ["POST", `/organizations/${name}/teams`, teamDocument({ name: "taken" }), 409],
      ["POST", `/organizations/${name}/teams`, teamDocument({ name: "bad/name" }), 400],
      [
        "PATCH",
        `/teams/${taken.id}`,
        teamDocument({ "organization-access": { "manage-vcs-settings": true } }),
        400,
      ],
    ];
    for (const [method, path, body, status] of refusals) {
      const res = await tfe<ErrorsDocument>(path, { method, token: org.ownerToken, body });
      expect(res.status, `${method} ${path} ${JSON.stringify(res.body)}`).toBe(status);
    }
    expect(await snapshotD1()).toEqual(before);
  });
});

describe("team access", () => {
  it("gives a team access, which its members then have, changes and removes it", async () => {
    const org = await seedOrg();
    const ws = await createWorkspace(org);
    const team = await seedTeam(org);
    const user = await seedUser(org);
    await addMember(org, team, user);
    expect((await tfe(`/workspaces/${ws.id}`, { token: user.token })).status).toBe(404);

    const created = await tfe<Document>("/team-workspaces", {
      method: "POST",
      token: org.ownerToken,
      body: grantDocument("read", team.teamId, ws.id),
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const id = created.body.data.id;
    expect(created.body.data).toMatchObject({
      type: "team-workspaces",
      attributes: { access: "read" },
      relationships: {
        team: { data: { id: team.teamId, type: "teams" } },
        workspace: { data: { id: ws.id, type: "workspaces" } },
      },
    });
    const asMember = await tfe<Document>(`/workspaces/${ws.id}`, { token: user.token });
    expect(asMember.body.data.attributes.permissions).toMatchObject({
      "can-read-settings": true,
      "can-update": false,
    });
    const listed = await tfe<ListDocument>(
      `/team-workspaces?filter%5Bworkspace%5D%5Bid%5D=${ws.id}`,
      { token: org.tokens.reader },
    );
    expect(listed.body.data.map((g) => g.id)).toEqual([id]);
    const changed = await tfe<Document>(`/team-workspaces/${id}`, {
      method: "PATCH",
      token: org.ownerToken,
      body: { data: { type: "team-workspaces", attributes: { access: "admin" } } },
    });
    expect(changed.body.data.attributes.access).toBe("admin");
    const read = await tfe<Document>(`/team-workspaces/${id}`, { token: user.token });
    expect(read.body.data.attributes.access).toBe("admin");
    const removed = await tfe<null>(`/team-workspaces/${id}`, {
      method: "DELETE",
      token: org.ownerToken,
    });
    expect(removed.status).toBe(204);
    expect((await tfe(`/workspaces/${ws.id}`, { token: user.token })).status).toBe(404);
  });

  it("refuses custom access, another organization's team or workspace, changing nothing", async () => {
    const org = await seedOrg();
    const other = await seedOrg();
    const ws = await createWorkspace(org);
    const team = await seedTeam(org);
    const foreignTeam = await seedTeam(other);
    const foreignWs = await createWorkspace(other);
    const before = await snapshotD1();
    const refusals: [unknown, number][] = [
      [grantDocument("custom", team.teamId, ws.id), 400],
      [grantDocument("owner", team.teamId, ws.id), 400],
      [grantDocument("read", foreignTeam.teamId, ws.id), 404],
      [grantDocument("read", team.teamId, foreignWs.id), 404],
    ];
    for (const [body, status] of refusals) {
      const res = await tfe<ErrorsDocument>("/team-workspaces", {
        method: "POST",
        token: org.ownerToken,
        body,
      });
      expect(res.status, JSON.stringify(res.body)).toBe(status);
    }
    const missing = await tfe<ErrorsDocument>(`/team-workspaces/${ws.id}.${team.teamId}`, {
      token: org.ownerToken,
    });
    expect(missing.status).toBe(404);
    expect(await snapshotD1()).toEqual(before);
  });
});

describeAuth("GET /api/v2/organizations/{name}/teams", {
  target: async (org) => ({
    method: "GET",
    path: `/api/v2/organizations/${await orgName(org)}/teams`,
  }),
  role: "reader",
});

describeAuth("POST /api/v2/organizations/{name}/teams", {
  target: async (org) => ({
    method: "POST",
    path: `/api/v2/organizations/${await orgName(org)}/teams`,
    body: JSON.stringify(teamDocument({ name: "matrix" })),
    headers: json,
  }),
  role: "owner",
});

for (const [method, role] of [
  ["GET", "reader"],
  ["PATCH", "owner"],
  ["DELETE", "owner"],
] as const) {
  describeAuth(`${method} /api/v2/teams/{id}`, {
    target: async (org) => ({
      method,
      path: `/api/v2/teams/${(await seedTeam(org)).teamId}`,
      body: method === "PATCH" ? JSON.stringify(teamDocument({ name: "renamed" })) : undefined,
      headers: json,
    }),
    role,
  });
}

describeAccess("POST /api/v2/team-workspaces", {
  target: async (org) => {
    const ws = await createWorkspace(org);
    const team = await seedTeam(org);
    return {
      method: "POST",
      path: "/api/v2/team-workspaces",
      body: JSON.stringify(grantDocument("read", team.teamId, ws.id)),
      headers: json,
      workspaceId: ws.id,
    };
  },
  level: "admin",
  allowedStatus: 201,
});

describeAuth("POST /api/v2/team-workspaces", {
  target: async (org) => {
    const ws = await createWorkspace(org);
    const team = await seedTeam(org);
    return {
      method: "POST",
      path: "/api/v2/team-workspaces",
      body: JSON.stringify(grantDocument("read", team.teamId, ws.id)),
      headers: json,
    };
  },
  role: "admin",
});

describeAuth("GET /api/v2/team-workspaces", {
  target: async (org) => ({
    method: "GET",
    path: `/api/v2/team-workspaces?filter%5Bworkspace%5D%5Bid%5D=${(await createWorkspace(org)).id}`,
  }),
  role: "reader",
});

for (const [method, level, status] of [
  ["GET", "read", 200],
  ["PATCH", "admin", 200],
  ["DELETE", "admin", 204],
] as const) {
  const target = async (org: TestOrg) => {
    const ws = await createWorkspace(org);
    const team = await seedTeam(org);
    await tfe("/team-workspaces", {
      method: "POST",
      token: org.ownerToken,
      body: grantDocument("plan", team.teamId, ws.id),
    });
    return {
      method,
      path: `/api/v2/team-workspaces/${ws.id}.${team.teamId}`,
      body:
        method === "PATCH"
          ? JSON.stringify({ data: { type: "team-workspaces", attributes: { access: "write" } } })
          : undefined,
      headers: json,
      workspaceId: ws.id,
    };
  };
  describeAuth(`${method} /api/v2/team-workspaces/{id}`, {
    target,
    role: level === "read" ? "reader" : "admin",
  });
  describeAccess(`${method} /api/v2/team-workspaces/{id}`, {
    target,
    level,
    allowedStatus: status,
  });
}
