/**
 * The TFE API's workspace variables and agent pools through the real Worker, with go-tfe's
 * requests (`variable.go`: create, list, update and delete by id; `agent_pool.go`: list by
 * organization, read by id) and Terraform Cloud's attribute names.
 */
import { describe, expect, it } from "vitest";
import { requestJson } from "./helpers/api.ts";
import { describeAccess, describeAuth } from "./helpers/auth-matrix.ts";
import { snapshotD1 } from "./helpers/d1-snapshot.ts";
import { seedOrg, type TestOrg } from "./helpers/fixtures.ts";
import {
  type Document,
  type ErrorsDocument,
  JSONAPI,
  type ListDocument,
  orgName,
  tfe,
} from "./helpers/tfe.ts";
import { createWorkspace, seedPool } from "./helpers/workspaces.ts";

const vars = (attributes: Record<string, unknown>) => ({ data: { type: "vars", attributes } });

async function createVar(org: TestOrg, ws: string, attributes: Record<string, unknown>) {
  const res = await tfe<Document>(`/workspaces/${ws}/vars`, {
    method: "POST",
    token: org.ownerToken,
    body: vars(attributes),
  });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.data;
}

describe("workspace variables", () => {
  it("creates, lists, updates and deletes variables with TFC's attributes, the same ones /api/v1 shows", async () => {
    const org = await seedOrg();
    const ws = await createWorkspace(org);
    const region = await createVar(org, ws.id, {
      key: "region",
      value: "eu-west-1",
      category: "terraform",
      description: "where",
    });
    expect(region).toMatchObject({
      type: "vars",
      attributes: { key: "region", value: "eu-west-1", category: "terraform", hcl: false },
      relationships: { configurable: { data: { id: ws.id, type: "workspaces" } } },
    });
    const secret = await createVar(org, ws.id, {
      key: "TF_TOKEN",
      value: "s3cret",
      category: "env",
      sensitive: true,
    });
    expect(secret.attributes).toMatchObject({ value: null, sensitive: true });

    const list = await tfe<ListDocument>(`/workspaces/${ws.id}/vars`, { token: org.tokens.reader });
    expect(list.status).toBe(200);
    expect(list.body.data.map((v) => v.attributes.key).sort()).toEqual(["TF_TOKEN", "region"]);
    expect(JSON.stringify(list.body)).not.toContain("s3cret");

    const updated = await tfe<Document>(`/workspaces/${ws.id}/vars/${region.id}`, {
      method: "PATCH",
      token: org.tokens.admin,
      body: vars({ value: '["a"]', hcl: true }),
    });
    expect(updated.status, JSON.stringify(updated.body)).toBe(200);
    expect(updated.body.data.attributes).toMatchObject({
      value: '["a"]',
      hcl: true,
      description: "where",
    });
    const v1 = await requestJson<{ value: string; hcl: boolean }>(
      `/api/v1/workspaces/${ws.id}/vars/region`,
      { token: org.tokens.reader },
    );
    expect(v1.body).toMatchObject({ value: '["a"]', hcl: true });

    const deleted = await tfe<null>(`/workspaces/${ws.id}/vars/${region.id}`, {
      method: "DELETE",
      token: org.tokens.admin,
    });
    expect(deleted.status).toBe(204);
    const after = await tfe<ListDocument>(`/workspaces/${ws.id}/vars`, {
      token: org.tokens.reader,
    });
    expect(after.body.data.map((v) => v.attributes.key)).toEqual(["TF_TOKEN"]);
  });

  it("refuses a duplicate key, a changed key, invalid attributes, and changes nothing", async () => {
    const org = await seedOrg();
    const ws = await createWorkspace(org);
    const existing = await createVar(org, ws.id, { key: "a", value: "1", category: "terraform" });
    const sibling = await createWorkspace(org);
    const siblingVar = await createVar(org, sibling.id, { key: "s", value: "1", category: "env" });
    const foreignWs = await createWorkspace(await seedOrg());
    const before = await snapshotD1();
    const duplicate = await tfe<ErrorsDocument>(`/workspaces/${ws.id}/vars`, {
      method: "POST",
      token: org.ownerToken,
      body: vars({ key: "a", value: "2", category: "terraform" }),
    });
    expect(duplicate.status).toBe(409);
    expect(duplicate.headers.get("content-type")).toBe(JSONAPI);
    const cases: { path: string; method: string; body: unknown; field: string }[] = [
      { path: "", method: "POST", body: vars({ key: "b", value: "1" }), field: "category" },
      { path: "", method: "POST", body: vars({ value: "1", category: "env" }), field: "key" },
      {
        path: "",
        method: "POST",
        body: vars({ key: "b", category: "nope" }),
        field: "category",
      },
      {
        path: "",
        method: "POST",
        body: vars({ key: "1bad", category: "terraform" }),
        field: "Terraform variable",
      },
      { path: "", method: "POST", body: { data: { type: "runs", attributes: {} } }, field: "type" },
      { path: `/${existing.id}`, method: "PATCH", body: vars({ key: "renamed" }), field: "key" },
    ];
    for (const { path, method, body, field } of cases) {
      const res = await tfe<ErrorsDocument>(`/workspaces/${ws.id}/vars${path}`, {
        method,
        token: org.ownerToken,
        body,
      });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.errors[0]?.detail, field).toContain(field);
    }
    // Another workspace's variable under this workspace, and another organization's workspace.
    const elsewhere = await tfe<ErrorsDocument>(`/workspaces/${ws.id}/vars/${siblingVar.id}`, {
      method: "DELETE",
      token: org.ownerToken,
    });
    expect(elsewhere.status).toBe(404);
    const foreign = await tfe<ErrorsDocument>(`/workspaces/${foreignWs.id}/vars`, {
      token: org.ownerToken,
    });
    expect(foreign.status).toBe(404);
    expect(await snapshotD1()).toEqual(before);
  });
});

describe("agent pools", () => {
  it("lists the organization's pools by name and reads one", async () => {
    const org = await seedOrg();
    const name = await orgName(org);
    const a = await seedPool(org.orgId, "alpha");
    await seedPool(org.orgId, "beta");
    await seedPool((await seedOrg()).orgId, "alpha-elsewhere");
    const list = await tfe<ListDocument>(`/organizations/${name}/agent-pools?q=alp`, {
      token: org.tokens.reader,
    });
    expect(list.status).toBe(200);
    expect(list.body.data.map((p) => [p.id, p.attributes.name])).toEqual([[a, "alpha"]]);
    expect(list.body.meta.pagination["total-count"]).toBe(1);
    const read = await tfe<Document>(`/agent-pools/${a}`, { token: org.tokens.reader });
    expect(read.status).toBe(200);
    expect(read.body.data).toMatchObject({
      id: a,
      type: "agent-pools",
      attributes: { name: "alpha", "agent-count": 0 },
      relationships: { organization: { data: { id: name, type: "organizations" } } },
    });
  });
});

const json = { "content-type": JSONAPI };

describeAuth("GET /api/v2/organizations/{name}/agent-pools", {
  target: async (org) => ({
    method: "GET",
    path: `/api/v2/organizations/${await orgName(org)}/agent-pools`,
  }),
  role: "reader",
});
describeAuth("GET /api/v2/agent-pools/{id}", {
  target: async (org) => ({
    method: "GET",
    path: `/api/v2/agent-pools/${await seedPool(org.orgId)}`,
  }),
  role: "reader",
});

describeAuth("GET /api/v2/workspaces/{id}/vars", {
  target: async (org) => ({
    method: "GET",
    path: `/api/v2/workspaces/${(await createWorkspace(org)).id}/vars`,
  }),
  role: "reader",
});
describeAccess("GET /api/v2/workspaces/{id}/vars", {
  target: async (org) => {
    const ws = await createWorkspace(org);
    return { method: "GET", path: `/api/v2/workspaces/${ws.id}/vars`, workspaceId: ws.id };
  },
  level: "read",
  allowedStatus: 200,
});

const createTarget = async (org: TestOrg) => {
  const ws = await createWorkspace(org);
  return {
    method: "POST",
    path: `/api/v2/workspaces/${ws.id}/vars`,
    body: JSON.stringify(vars({ key: "k", value: "v", category: "terraform" })),
    headers: json,
    workspaceId: ws.id,
  };
};
describeAuth("POST /api/v2/workspaces/{id}/vars", { target: createTarget, role: "admin" });
describeAccess("POST /api/v2/workspaces/{id}/vars", {
  target: createTarget,
  level: "write",
  allowedStatus: 201,
});

for (const method of ["PATCH", "DELETE"] as const) {
  const target = async (org: TestOrg) => {
    const ws = await createWorkspace(org);
    const variable = await createVar(org, ws.id, { key: "k", value: "v", category: "env" });
    return {
      method,
      path: `/api/v2/workspaces/${ws.id}/vars/${variable.id}`,
      body: method === "PATCH" ? JSON.stringify(vars({ value: "w" })) : undefined,
      headers: json,
      workspaceId: ws.id,
    };
  };
  describeAuth(`${method} /api/v2/workspaces/{id}/vars/{id}`, { target, role: "admin" });
  describeAccess(`${method} /api/v2/workspaces/{id}/vars/{id}`, {
    target,
    level: "write",
    allowedStatus: method === "PATCH" ? 200 : 204,
  });
}
