/**
 * Agent tokens through the TFE API, as go-tfe's `AgentTokens` sends them (the `tfe_agent_token`
 * resource): the secret once on create, never on reads; deleting revokes it. Refusals change
 * nothing; every route passes the auth matrix (owners only, as on /api/v1/pools).
 */
import { describe, expect, it } from "vitest";
import { describeAuth } from "./helpers/auth-matrix.ts";
import { snapshotD1 } from "./helpers/d1-snapshot.ts";
import { seedOrg, type TestOrg } from "./helpers/fixtures.ts";
import {
  type Document,
  type ErrorsDocument,
  JSONAPI,
  type ListDocument,
  tfe,
} from "./helpers/tfe.ts";
import { seedPool } from "./helpers/workspaces.ts";

const json = { "content-type": JSONAPI };
const tokenDocument = (description: unknown) => ({
  data: { type: "authentication-tokens", attributes: { description } },
});

async function createToken(org: TestOrg, poolId: string) {
  const res = await tfe<Document>(`/agent-pools/${poolId}/authentication-tokens`, {
    method: "POST",
    token: org.ownerToken,
    body: tokenDocument("ci agents"),
  });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res;
}

describe("agent tokens", () => {
  it("creates a token whose secret shows once, lists and reads it without, and revokes it", async () => {
    const org = await seedOrg();
    const poolId = await seedPool(org.orgId);
    const created = await createToken(org, poolId);
    expect(created.headers.get("cache-control")).toBe("no-store");
    const id = created.body.data.id;
    expect(created.body.data).toMatchObject({
      type: "authentication-tokens",
      attributes: { description: "ci agents", "last-used-at": null },
    });
    expect(created.body.data.attributes.token).toMatch(/^op_agent_/);

    const listed = await tfe<ListDocument>(`/agent-pools/${poolId}/authentication-tokens`, {
      token: org.ownerToken,
    });
    expect(listed.body.data.map((t) => [t.id, t.attributes.token])).toEqual([[id, null]]);
    const read = await tfe<Document>(`/authentication-tokens/${id}`, { token: org.ownerToken });
    expect(read.body.data.attributes).toMatchObject({ description: "ci agents", token: null });

    const deleted = await tfe<null>(`/authentication-tokens/${id}`, {
      method: "DELETE",
      token: org.ownerToken,
    });
    expect(deleted.status).toBe(204);
    const after = await tfe<ListDocument>(`/agent-pools/${poolId}/authentication-tokens`, {
      token: org.ownerToken,
    });
    expect(after.body.data).toEqual([]);
    expect((await tfe(`/authentication-tokens/${id}`, { token: org.ownerToken })).status).toBe(404);
  });

  it("refuses a bad description, another organization's pool and token, changing nothing", async () => {
    const org = await seedOrg();
    const other = await seedOrg();
    const poolId = await seedPool(org.orgId);
    const foreignPool = await seedPool(other.orgId);
    const foreignToken = (await createToken(other, foreignPool)).body.data.id;
    const before = await snapshotD1();
    const refusals: [string, string, unknown, number][] = [
      ["POST", `/agent-pools/${poolId}/authentication-tokens`, tokenDocument(""), 400],
      ["POST", `/agent-pools/${poolId}/authentication-tokens`, tokenDocument(7), 400],
      ["POST", `/agent-pools/${foreignPool}/authentication-tokens`, tokenDocument("x"), 404],
      ["GET", `/agent-pools/${foreignPool}/authentication-tokens`, undefined, 404],
      ["GET", `/authentication-tokens/${foreignToken}`, undefined, 404],
      ["DELETE", `/authentication-tokens/${foreignToken}`, undefined, 404],
    ];
    for (const [method, path, body, status] of refusals) {
      const res = await tfe<ErrorsDocument>(path, { method, token: org.ownerToken, body });
      expect(res.status, `${method} ${path} ${JSON.stringify(res.body)}`).toBe(status);
    }
    expect(await snapshotD1()).toEqual(before);
  });
});

describeAuth("GET /api/v2/agent-pools/{id}/authentication-tokens", {
  target: async (org) => ({
    method: "GET",
    path: `/api/v2/agent-pools/${await seedPool(org.orgId)}/authentication-tokens`,
  }),
  role: "owner",
});

describeAuth("POST /api/v2/agent-pools/{id}/authentication-tokens", {
  target: async (org) => ({
    method: "POST",
    path: `/api/v2/agent-pools/${await seedPool(org.orgId)}/authentication-tokens`,
    body: JSON.stringify(tokenDocument("matrix")),
    headers: json,
  }),
  role: "owner",
});

for (const method of ["GET", "DELETE"] as const) {
  describeAuth(`${method} /api/v2/authentication-tokens/{id}`, {
    target: async (org) => {
      const poolId = await seedPool(org.orgId);
      const id = (await createToken(org, poolId)).body.data.id;
      return { method, path: `/api/v2/authentication-tokens/${id}` };
    },
    role: "owner",
  });
}
