/**
 * Names everywhere: every `{workspaceId}`, `{poolId}` and agent `{tokenId}` path parameter takes
 * the name (a token's description when one active token has it) through the one resolver, the
 * `http` state backend included, and a miss says what was looked for in words.
 */
import { describe, expect, it } from "vitest";
import { type ErrorBody, requestJson } from "./helpers/api.ts";
import { describeAuth } from "./helpers/auth-matrix.ts";
import { snapshotD1 } from "./helpers/d1-snapshot.ts";
import { seedOrg, type TestOrg } from "./helpers/fixtures.ts";
import { addAgentToken, seedPool } from "./helpers/pools.ts";
import { BackendClient, stateJson } from "./helpers/state-fixtures.ts";
import { createWorkspace } from "./helpers/workspaces.ts";

let counter = 0;
const unique = (prefix: string) => `${prefix}-${Date.now().toString(36)}-${counter++}`;

async function localWorkspace(org: TestOrg) {
  return createWorkspace(org, { name: unique("localws"), executionMode: "local" });
}

async function poolName(org: TestOrg, poolId: string): Promise<string> {
  const res = await requestJson<{ name: string }>(`/api/v1/pools/${poolId}`, {
    token: org.ownerToken,
  });
  expect(res.status).toBe(200);
  return res.body.name;
}

describe("workspaces by name in the state routes", () => {
  it("the http backend writes and reads /state/v1/<name>, and the API lists it by name", async () => {
    const org = await seedOrg();
    const ws = await localWorkspace(org);
    const client = new BackendClient(ws.name, org.tokens.member);
    expect((await client.lock()).status).toBe(200);
    const put = await client.put(stateJson({ serial: 1, lineage: "l-1" }));
    expect(put.status, await put.clone().text()).toBe(200);
    expect((await client.unlock()).status).toBe(200);
    const read = await client.get();
    expect(read.status).toBe(200);
    expect(JSON.parse(await read.text())).toMatchObject({ serial: 1, lineage: "l-1" });

    const byId = await requestJson<{ stateVersions: { id: string }[] }>(
      `/api/v1/workspaces/${ws.id}/state-versions`,
      { token: org.tokens.reader },
    );
    const byName = await requestJson<{ stateVersions: { id: string }[] }>(
      `/api/v1/workspaces/${ws.name}/state-versions`,
      { token: org.tokens.reader },
    );
    expect(byName.status).toBe(200);
    expect(byName.body).toEqual(byId.body);
    expect(byName.body.stateVersions).toHaveLength(1);
    for (const path of ["outputs", "state-lock"]) {
      const res = await requestJson(`/api/v1/workspaces/${ws.name}/${path}`, {
        token: org.tokens.reader,
      });
      expect(res.status, `${path}: ${JSON.stringify(res.body)}`).toBe(200);
    }
  });

  it("an unknown name answers 404 in words, on the API and the backend, and changes nothing", async () => {
    const org = await seedOrg();
    const before = await snapshotD1();
    for (const path of [
      "/api/v1/workspaces/localws/state-versions",
      "/api/v1/workspaces/localws/outputs",
      "/api/v1/workspaces/localws/state-lock",
      "/api/v1/workspaces/localws",
      "/api/v1/workspaces/localws/runs",
    ]) {
      const res = await requestJson<ErrorBody>(path, { token: org.ownerToken });
      expect(res.status, path).toBe(404);
      expect(res.body.error.message).toBe("no workspace named localws in this organization");
    }
    const backend = new BackendClient("localws", org.ownerToken);
    const res = await backend.put(stateJson({ serial: 1, lineage: "l" }));
    expect(res.status).toBe(404);
    expect(((await res.json()) as ErrorBody).error.message).toBe(
      "no workspace named localws in this organization",
    );
    expect(await snapshotD1()).toEqual(before);
  });

  it("another organization's workspace is not found by its name either", async () => {
    const [org, other] = [await seedOrg(), await seedOrg()];
    const ws = await localWorkspace(other);
    const res = await requestJson<ErrorBody>(`/api/v1/workspaces/${ws.name}/state-versions`, {
      token: org.ownerToken,
    });
    expect(res.status).toBe(404);
    expect(res.body.error.message).toBe(`no workspace named ${ws.name} in this organization`);
    const backend = await new BackendClient(ws.name, org.ownerToken).get();
    expect(backend.status).toBe(404);
  });
});

describe("pools and agent tokens by name", () => {
  it("reads a pool, creates, lists and revokes its tokens by pool name and token description", async () => {
    const org = await seedOrg();
    const { poolId } = await seedPool(org);
    const name = await poolName(org, poolId);
    const detail = await requestJson<{ id: string }>(`/api/v1/pools/${name}`, {
      token: org.tokens.reader,
    });
    expect(detail.body.id).toBe(poolId);

    const created = await requestJson<{ id: string; poolId: string }>(
      `/api/v1/pools/${name}/tokens`,
      { method: "POST", token: org.ownerToken, body: { description: "rack 7 agents" } },
    );
    expect(created.status).toBe(201);
    expect(created.body.poolId).toBe(poolId);
    const listed = await requestJson<{ tokens: { id: string }[] }>(`/api/v1/pools/${name}/tokens`, {
      token: org.ownerToken,
    });
    expect(listed.body.tokens.map((t) => t.id)).toContain(created.body.id);

    const revoked = await requestJson<{ id: string; revokedAt: string | null }>(
      `/api/v1/pools/${name}/tokens/${encodeURIComponent("rack 7 agents")}`,
      { method: "DELETE", token: org.ownerToken },
    );
    expect(revoked.status, JSON.stringify(revoked.body)).toBe(200);
    expect(revoked.body).toMatchObject({ id: created.body.id, revokedAt: expect.any(String) });

    // Revoked, its description no longer names an active token.
    const again = await requestJson<ErrorBody>(
      `/api/v1/pools/${name}/tokens/${encodeURIComponent("rack 7 agents")}`,
      { method: "DELETE", token: org.ownerToken },
    );
    expect(again.status).toBe(404);
    expect(again.body.error.message).toBe(
      'no active agent token described "rack 7 agents" in this pool',
    );
  });

  it("a description two active tokens share is refused with both ids, revoking neither", async () => {
    const org = await seedOrg();
    const { poolId } = await seedPool(org);
    const ids: string[] = [];
    for (let i = 0; i < 2; i++) {
      const res = await requestJson<{ id: string }>(`/api/v1/pools/${poolId}/tokens`, {
        method: "POST",
        token: org.ownerToken,
        body: { description: "ci" },
      });
      ids.push(res.body.id);
    }
    const before = await snapshotD1();
    const res = await requestJson<ErrorBody>(`/api/v1/pools/${poolId}/tokens/ci`, {
      method: "DELETE",
      token: org.ownerToken,
    });
    expect(res.status).toBe(409);
    for (const id of ids) {
      expect(res.body.error.message).toContain(id);
    }
    expect(await snapshotD1()).toEqual(before);
  });

  it("an unknown pool name answers 404 in words on every pool route, changing nothing", async () => {
    const org = await seedOrg();
    const before = await snapshotD1();
    for (const [method, path, body] of [
      ["GET", "/api/v1/pools/dc2", undefined],
      ["PATCH", "/api/v1/pools/dc2", { description: "x" }],
      ["DELETE", "/api/v1/pools/dc2", undefined],
      ["POST", "/api/v1/pools/dc2/tokens", { description: "x" }],
      ["GET", "/api/v1/pools/dc2/tokens", undefined],
      ["DELETE", "/api/v1/pools/dc2/tokens/x", undefined],
      ["GET", "/api/v1/pools/dc2/oidc-trusts", undefined],
    ] as const) {
      const res = await requestJson<ErrorBody>(path, { method, token: org.ownerToken, body });
      expect(res.status, `${method} ${path}`).toBe(404);
      expect(res.body.error.message).toBe("no agent pool named dc2 in this organization");
    }
    expect(await snapshotD1()).toEqual(before);
  });

  it("another organization's pool is not found by its name, nor its token by description", async () => {
    const [org, other] = [await seedOrg(), await seedOrg()];
    const { poolId } = await seedPool(other);
    const name = await poolName(other, poolId);
    await addAgentToken(other, poolId);
    const res = await requestJson<ErrorBody>(`/api/v1/pools/${name}/tokens`, {
      token: org.ownerToken,
    });
    expect(res.status).toBe(404);
    expect(res.body.error.message).toBe(`no agent pool named ${name} in this organization`);
  });
});

describe("a workspace's pool by name", () => {
  it("creates and moves a workspace naming its pool by name; the workspace keeps the id", async () => {
    const org = await seedOrg();
    const [first, second] = [(await seedPool(org)).poolId, (await seedPool(org)).poolId];
    const ws = await createWorkspace(org, {
      executionMode: "agent",
      poolId: await poolName(org, first),
    });
    expect(ws.poolId).toBe(first);
    const moved = await requestJson<{ poolId: string }>(`/api/v1/workspaces/${ws.name}`, {
      method: "PATCH",
      token: org.ownerToken,
      body: { poolId: await poolName(org, second) },
    });
    expect(moved.status, JSON.stringify(moved.body)).toBe(200);
    expect(moved.body.poolId).toBe(second);
    // The audit event records the ids, not the name the caller used.
    const read = await requestJson<{ poolId: string }>(`/api/v1/workspaces/${ws.id}`, {
      token: org.tokens.reader,
    });
    expect(read.body.poolId).toBe(second);
  });

  it("an unknown pool, or another organization's by name or id, is a 400 naming it, changing nothing", async () => {
    const [org, other] = [await seedOrg(), await seedOrg()];
    const foreign = (await seedPool(other)).poolId;
    const foreignName = await poolName(other, foreign);
    const ws = await createWorkspace(org, {
      executionMode: "agent",
      poolId: (await seedPool(org)).poolId,
    });
    const before = await snapshotD1();
    for (const [ref, sentence] of [
      ["dc3", "no agent pool named dc3 in this organization"],
      [foreignName, `no agent pool named ${foreignName} in this organization`],
      [foreign, `no agent pool with id ${foreign} in this organization`],
    ]) {
      const answers = [
        await requestJson<ErrorBody>("/api/v1/workspaces", {
          method: "POST",
          token: org.ownerToken,
          body: { name: "on-dc3", engineVersion: "1.9.5", executionMode: "agent", poolId: ref },
        }),
        await requestJson<ErrorBody>(`/api/v1/workspaces/${ws.name}`, {
          method: "PATCH",
          token: org.ownerToken,
          body: { poolId: ref },
        }),
      ];
      for (const res of answers) {
        expect(res.status, ref).toBe(400);
        expect(res.body.error.message).toBe(sentence);
        expect(res.body.error.issues).toEqual([{ path: "json.poolId", message: sentence }]);
      }
    }
    expect(await snapshotD1()).toEqual(before);
  });
});

describeAuth("DELETE /api/v1/pools/{name}/tokens/{description}", {
  role: "owner",
  target: async (org) => {
    const { poolId } = await seedPool(org);
    const name = await poolName(org, poolId);
    await requestJson(`/api/v1/pools/${poolId}/tokens`, {
      method: "POST",
      token: org.ownerToken,
      body: { description: "matrix" },
    });
    return { method: "DELETE", path: `/api/v1/pools/${name}/tokens/matrix` };
  },
});

describeAuth("GET /api/v1/workspaces/{name}/state-versions", {
  role: "reader",
  target: async (org) => {
    const ws = await localWorkspace(org);
    return { method: "GET", path: `/api/v1/workspaces/${ws.name}/state-versions` };
  },
});
