/**
 * Variable sets through the TFE API, as go-tfe's `VariableSets` and `VariableSetVariables` send
 * them (the `tfe_variable_set`, `tfe_workspace_variable_set`, `tfe_project_variable_set` and
 * `tfe_variable` with `variable_set_id` resources); the variables then reach the workspace's
 * jobs like any set's. Refusals change nothing; every route passes the auth matrix.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { describeAuth } from "./helpers/auth-matrix.ts";
import { snapshotD1 } from "./helpers/d1-snapshot.ts";
import { seedOrg, type TestOrg } from "./helpers/fixtures.ts";
import { createProject } from "./helpers/projects.ts";
import {
  type Document,
  type ErrorsDocument,
  JSONAPI,
  type ListDocument,
  orgName,
  tfe,
} from "./helpers/tfe.ts";
import { createWorkspace, jobVariablesOf } from "./helpers/workspaces.ts";

const json = { "content-type": JSONAPI };
const varsetDocument = (attributes: Record<string, unknown>) => ({
  data: { type: "varsets", attributes },
});
const varDocument = (attributes: Record<string, unknown>) => ({
  data: { type: "vars", attributes },
});

async function createSet(org: TestOrg, attributes: Record<string, unknown> = {}) {
  const res = await tfe<Document>(`/organizations/${await orgName(org)}/varsets`, {
    method: "POST",
    token: org.ownerToken,
    body: varsetDocument({ name: `set-${crypto.randomUUID().slice(0, 8)}`, ...attributes }),
  });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.data;
}

describe("variable sets", () => {
  it("creates a set, adds variables, applies it to a workspace and a project, reads and deletes it", async () => {
    const org = await seedOrg();
    const set = await createSet(org, { description: "cloud credentials", priority: true });
    expect(set).toMatchObject({
      type: "varsets",
      attributes: { description: "cloud credentials", global: false, priority: true },
    });
    const vars = `/varsets/${set.id}/relationships/vars`;
    const region = await tfe<Document>(vars, {
      method: "POST",
      token: org.ownerToken,
      body: varDocument({ key: "region", value: "eu-west-1", category: "terraform" }),
    });
    expect(region.status, JSON.stringify(region.body)).toBe(201);
    const secret = await tfe<Document>(vars, {
      method: "POST",
      token: org.ownerToken,
      body: varDocument({ key: "AWS_SECRET", value: "s3cr3t", category: "env", sensitive: true }),
    });
    expect(secret.body.data.attributes).toMatchObject({ value: null, sensitive: true });
    const changed = await tfe<Document>(`${vars}/${region.body.data.id}`, {
      method: "PATCH",
      token: org.ownerToken,
      body: varDocument({ value: "eu-central-1" }),
    });
    expect(changed.body.data.attributes).toMatchObject({ key: "region", value: "eu-central-1" });

    const ws = await createWorkspace(org);
    const project = await createProject(org);
    const applied = await tfe<null>(`/varsets/${set.id}/relationships/workspaces`, {
      method: "POST",
      token: org.ownerToken,
      body: { data: [{ type: "workspaces", id: ws.id }] },
    });
    expect(applied.status).toBe(204);
    const toProject = await tfe<null>(`/varsets/${set.id}/relationships/projects`, {
      method: "POST",
      token: org.ownerToken,
      body: { data: [{ type: "projects", id: project.id }] },
    });
    expect(toProject.status).toBe(204);
    const read = await tfe<Document>(`/varsets/${set.id}`, { token: org.tokens.reader });
    expect(read.body.data.attributes).toMatchObject({
      "var-count": 2,
      "workspace-count": 1,
      "project-count": 1,
    });
    expect(read.body.data.relationships?.workspaces).toEqual({
      data: [{ id: ws.id, type: "workspaces" }],
    });
    const jobVars = await jobVariablesOf(env, ws.id, true);
    expect(jobVars).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ key: "region", value: "eu-central-1" }),
        expect.objectContaining({ key: "AWS_SECRET", value: "s3cr3t" }),
      ]),
    );
    const listed = await tfe<ListDocument>(`/organizations/${await orgName(org)}/varsets`, {
      token: org.tokens.reader,
    });
    expect(listed.body.data.map((s) => s.id)).toEqual([set.id]);
    const listedVars = await tfe<ListDocument>(vars, { token: org.tokens.reader });
    expect(listedVars.body.data.map((v) => v.attributes.key).sort()).toEqual([
      "AWS_SECRET",
      "region",
    ]);

    const removed = await tfe<null>(`/varsets/${set.id}/relationships/workspaces`, {
      method: "DELETE",
      token: org.ownerToken,
      body: { data: [{ type: "workspaces", id: ws.id }] },
    });
    expect(removed.status).toBe(204);
    const deletedVar = await tfe<null>(`${vars}/${secret.body.data.id}`, {
      method: "DELETE",
      token: org.ownerToken,
    });
    expect(deletedVar.status).toBe(204);
    const renamed = await tfe<Document>(`/varsets/${set.id}`, {
      method: "PATCH",
      token: org.ownerToken,
      body: varsetDocument({ name: "renamed", priority: false }),
    });
    expect(renamed.body.data.attributes).toMatchObject({ name: "renamed", priority: false });
    const deleted = await tfe<null>(`/varsets/${set.id}`, {
      method: "DELETE",
      token: org.ownerToken,
    });
    expect(deleted.status).toBe(204);
    expect((await tfe(`/varsets/${set.id}`, { token: org.ownerToken })).status).toBe(404);
  });

  it("refuses invalid documents, unknown or foreign targets, and applying a global set, changing nothing", async () => {
    const org = await seedOrg();
    const set = await createSet(org);
    const global = await createSet(org, { global: true });
    const foreignWs = await createWorkspace(await seedOrg());
    const ws = await createWorkspace(org);
    const name = await orgName(org);
    const vars = `/varsets/${set.id}/relationships/vars`;
    const existing = await tfe<Document>(vars, {
      method: "POST",
      token: org.ownerToken,
      body: varDocument({ key: "taken", value: "1", category: "env" }),
    });
    const before = await snapshotD1();
    const refusals: [string, string, unknown, number][] = [
      ["POST", `/organizations/${name}/varsets`, varsetDocument({}), 400],
      ["POST", `/organizations/${name}/varsets`, varsetDocument({ name: "bad/name" }), 400],
      [
        "POST",
        `/organizations/${name}/varsets`,
        varsetDocument({ name: set.attributes.name }),
        409,
      ],
      [
        "POST",
        `/varsets/${set.id}/relationships/workspaces`,
        { data: [{ type: "workspaces", id: foreignWs.id }] },
        404,
      ],
      [
        "POST",
        `/varsets/${set.id}/relationships/workspaces`,
        {
          data: [
            { type: "workspaces", id: ws.id },
            { type: "workspaces", id: foreignWs.id },
          ],
        },
        404,
      ],
      ["POST", `/varsets/${set.id}/relationships/workspaces`, { data: [] }, 400],
      [
        "POST",
        `/varsets/${global.id}/relationships/workspaces`,
        { data: [{ type: "workspaces", id: ws.id }] },
        409,
      ],
      ["POST", vars, varDocument({ key: "taken", value: "2", category: "env" }), 409],
      ["POST", vars, varDocument({ key: "no-category", value: "2" }), 400],
      ["POST", vars, varDocument({ key: "bad key!", value: "2", category: "env" }), 400],
      ["PATCH", `${vars}/${existing.body.data.id}`, varDocument({ key: "renamed" }), 400],
      ["DELETE", `${vars}/var_${"a".repeat(26)}`, undefined, 404],
    ];
    for (const [method, path, body, status] of refusals) {
      const res = await tfe<ErrorsDocument>(path, { method, token: org.ownerToken, body });
      expect(res.status, `${method} ${path} ${JSON.stringify(res.body)}`).toBe(status);
      expect(res.body.errors[0]?.detail).toEqual(expect.any(String));
    }
    expect(await snapshotD1()).toEqual(before);
  });
});

describeAuth("GET /api/v2/organizations/{name}/varsets", {
  target: async (org) => ({
    method: "GET",
    path: `/api/v2/organizations/${await orgName(org)}/varsets`,
  }),
  role: "reader",
});

describeAuth("POST /api/v2/organizations/{name}/varsets", {
  target: async (org) => ({
    method: "POST",
    path: `/api/v2/organizations/${await orgName(org)}/varsets`,
    body: JSON.stringify(varsetDocument({ name: "matrix" })),
    headers: json,
  }),
  role: "admin",
});

for (const [method, role] of [
  ["GET", "reader"],
  ["PATCH", "admin"],
  ["DELETE", "admin"],
] as const) {
  describeAuth(`${method} /api/v2/varsets/{id}`, {
    target: async (org) => ({
      method,
      path: `/api/v2/varsets/${(await createSet(org)).id}`,
      body: method === "PATCH" ? JSON.stringify(varsetDocument({ priority: true })) : undefined,
      headers: json,
    }),
    role,
  });
}

for (const type of ["workspaces", "projects"] as const) {
  for (const method of ["POST", "DELETE"] as const) {
    describeAuth(`${method} /api/v2/varsets/{id}/relationships/${type}`, {
      target: async (org) => {
        const target =
          type === "workspaces" ? await createWorkspace(org) : await createProject(org);
        return {
          method,
          path: `/api/v2/varsets/${(await createSet(org)).id}/relationships/${type}`,
          body: JSON.stringify({ data: [{ type, id: target.id }] }),
          headers: json,
        };
      },
      role: "admin",
    });
  }
}

describeAuth("GET /api/v2/varsets/{id}/relationships/vars", {
  target: async (org) => ({
    method: "GET",
    path: `/api/v2/varsets/${(await createSet(org)).id}/relationships/vars`,
  }),
  role: "reader",
});

describeAuth("POST /api/v2/varsets/{id}/relationships/vars", {
  target: async (org) => ({
    method: "POST",
    path: `/api/v2/varsets/${(await createSet(org)).id}/relationships/vars`,
    body: JSON.stringify(varDocument({ key: "k", value: "v", category: "env" })),
    headers: json,
  }),
  role: "admin",
});

for (const [method, role] of [
  ["GET", "reader"],
  ["PATCH", "admin"],
  ["DELETE", "admin"],
] as const) {
  describeAuth(`${method} /api/v2/varsets/{id}/relationships/vars/{id}`, {
    target: async (org) => {
      const set = await createSet(org);
      const path = `/api/v2/varsets/${set.id}/relationships/vars`;
      const created = await tfe<Document>(path.replace("/api/v2", ""), {
        method: "POST",
        token: org.ownerToken,
        body: varDocument({ key: "k", value: "v", category: "env" }),
      });
      return {
        method,
        path: `${path}/${created.body.data.id}`,
        body: method === "PATCH" ? JSON.stringify(varDocument({ value: "w" })) : undefined,
        headers: json,
      };
    },
    role,
  });
}
