/**
 * Variable sets through the real routes: the sets, their variables (the same rules and
 * write-only sensitive values as a workspace's), where they apply, the rule that two global sets
 * may not share a variable, and key rotation reaching their sealed values.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { type ErrorBody, requestJson } from "./helpers/api.ts";
import { describeAuth } from "./helpers/auth-matrix.ts";
import { snapshotD1 } from "./helpers/d1-snapshot.ts";
import { seedOrg, type TestOrg } from "./helpers/fixtures.ts";
import { NEW_KEY, ROTATED, reencryptWith } from "./helpers/keys.ts";
import {
  applySet,
  createProject,
  createVariableSet,
  putSetVariable,
  type VariableSetBody,
} from "./helpers/projects.ts";
import { createWorkspace, jobVariablesOf } from "./helpers/workspaces.ts";

type Variable = {
  id: string;
  key: string;
  category: string;
  value: string | null;
  sensitive: boolean;
};

const call = <T = VariableSetBody & ErrorBody>(
  org: TestOrg,
  method: string,
  path: string,
  body?: unknown,
  token = org.tokens.admin,
) => requestJson<T>(path, { method, token, body });

describe("variable sets", () => {
  it("creates, reads by id and by name, lists, changes and deletes a set", async () => {
    const org = await seedOrg();
    const created = await call(org, "POST", "/api/v1/variable-sets", {
      name: "aws-credentials",
      description: "prod account",
      priority: true,
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      id: expect.stringMatching(/^varset_[a-z2-7]{26}$/),
      name: "aws-credentials",
      description: "prod account",
      global: false,
      priority: true,
      projects: [],
      workspaces: [],
      variableCount: 0,
    });
    const byName = await call(
      org,
      "GET",
      "/api/v1/variable-sets/aws-credentials",
      undefined,
      org.tokens.reader,
    );
    expect(byName.body).toEqual(created.body);
    const list = await call<{ variableSets: VariableSetBody[] }>(
      org,
      "GET",
      "/api/v1/variable-sets",
    );
    expect(list.body.variableSets.map((s) => s.name)).toEqual(["aws-credentials"]);
    const patched = await call(org, "PATCH", `/api/v1/variable-sets/${created.body.id}`, {
      name: "aws",
      priority: false,
    });
    expect(patched.body).toMatchObject({ name: "aws", priority: false });
    expect((await call(org, "DELETE", "/api/v1/variable-sets/aws")).status).toBe(200);
    expect((await call(org, "GET", `/api/v1/variable-sets/${created.body.id}`)).status).toBe(404);
  });

  it("refuses bad input (400) and a taken name (409), changing nothing", async () => {
    const org = await seedOrg();
    const set = await createVariableSet(org, { name: "tags" });
    const before = await snapshotD1();
    for (const body of [
      {},
      { name: "varset_x" },
      { name: "x", global: "yes" },
      { name: "x", y: 1 },
    ]) {
      expect((await call(org, "POST", "/api/v1/variable-sets", body)).status).toBe(400);
    }
    const taken = await call(org, "POST", "/api/v1/variable-sets", { name: "tags" });
    expect(taken.status).toBe(409);
    expect(taken.body.error.message).toBe("a variable set named tags exists");
    const bad = [
      ["PUT", `/api/v1/variable-sets/${set.id}/vars/1bad`, { value: "x", category: "env" }],
      ["PUT", `/api/v1/variable-sets/${set.id}/vars/FOO`, { value: "x", category: "shell" }],
      ["PUT", `/api/v1/variable-sets/${set.id}/vars/FOO`, { category: "env" }],
      [
        "PUT",
        `/api/v1/variable-sets/${set.id}/vars/FOO`,
        { value: "x", category: "env", hcl: true },
      ],
      ["PATCH", `/api/v1/variable-sets/${set.id}`, {}],
    ] as const;
    for (const [method, path, body] of bad) {
      const res = await call(org, method, path, body);
      expect(res.status, `${method} ${path} ${JSON.stringify(body)}`).toBe(400);
    }
    expect(await snapshotD1()).toEqual(before);
  });

  it("keeps a set's sensitive values write-only, as a workspace's", async () => {
    const org = await seedOrg();
    const set = await createVariableSet(org);
    await putSetVariable(org, set.id, "AWS_SECRET_ACCESS_KEY", {
      value: "s3cr3t-value",
      category: "env",
      sensitive: true,
    });
    await putSetVariable(org, set.id, "region", { value: "eu-west-1", category: "terraform" });
    const list = await call<{ variables: Variable[] }>(
      org,
      "GET",
      `/api/v1/variable-sets/${set.id}/vars`,
      undefined,
      org.tokens.reader,
    );
    expect(list.body.variables.map((v) => [v.key, v.value, v.sensitive])).toEqual([
      ["AWS_SECRET_ACCESS_KEY", null, true],
      ["region", "eu-west-1", false],
    ]);
    const one = await call<Variable>(
      org,
      "GET",
      `/api/v1/variable-sets/${set.id}/vars/AWS_SECRET_ACCESS_KEY`,
    );
    expect(one.body.value).toBeNull();
    const row = await env.DB.prepare(
      "SELECT value, ciphertext FROM variable_set_variables WHERE key = ?",
    )
      .bind("AWS_SECRET_ACCESS_KEY")
      .first<{ value: string | null; ciphertext: string }>();
    expect(row?.value).toBeNull();
    expect(row?.ciphertext).not.toContain("s3cr3t");
    const deleted = await call<Variable>(
      org,
      "DELETE",
      `/api/v1/variable-sets/${set.id}/vars/region`,
    );
    expect(deleted.body.key).toBe("region");
    expect((await call(org, "GET", `/api/v1/variable-sets/${set.id}`)).body.variableCount).toBe(1);
  });

  it("applies to projects and workspaces by id or name; global sets take no links", async () => {
    const org = await seedOrg();
    const project = await createProject(org, "apps");
    const ws = await createWorkspace(org, { projectId: project.id });
    const set = await createVariableSet(org, { name: "shared" });
    const onProject = await call(org, "PUT", "/api/v1/variable-sets/shared/projects/apps");
    expect(onProject.status).toBe(200);
    expect(onProject.body.projects).toEqual([{ id: project.id, name: "apps" }]);
    const twice = await call(org, "PUT", `/api/v1/variable-sets/${set.id}/projects/${project.id}`);
    expect(twice.body.projects).toHaveLength(1);
    const onWorkspace = await call(
      org,
      "PUT",
      `/api/v1/variable-sets/shared/workspaces/${ws.name}`,
    );
    expect(onWorkspace.body.workspaces).toEqual([{ id: ws.id, name: ws.name }]);
    expect((await call(org, "PUT", "/api/v1/variable-sets/shared/projects/nope")).status).toBe(404);

    // Made global, it drops its links; a global set refuses new ones.
    const global = await call(org, "PATCH", "/api/v1/variable-sets/shared", { global: true });
    expect(global.body).toMatchObject({ global: true, projects: [], workspaces: [] });
    const before = await snapshotD1();
    const refused = await call(org, "PUT", "/api/v1/variable-sets/shared/projects/apps");
    expect(refused.status).toBe(409);
    expect(refused.body.error.message).toMatch(/is global: it applies to every workspace already/);
    const notApplied = await call(
      org,
      "DELETE",
      `/api/v1/variable-sets/shared/workspaces/${ws.id}`,
    );
    expect(notApplied.status).toBe(404);
    expect(await snapshotD1()).toEqual(before);
    await call(org, "PATCH", "/api/v1/variable-sets/shared", { global: false });
    await applySet(org, set.id, { workspaceId: ws.id });
    const removed = await call(org, "DELETE", `/api/v1/variable-sets/shared/workspaces/${ws.id}`);
    expect(removed.body.workspaces).toEqual([]);
  });

  it("two global sets may not set the same variable (409), whichever way they would meet", async () => {
    const org = await seedOrg();
    const base = await createVariableSet(org, { name: "base", global: true });
    await putSetVariable(org, base.id, "TEAM", { value: "platform", category: "env" });
    const tags = await createVariableSet(org, { name: "tags", global: true });
    const before = await snapshotD1();
    const clash = await call(org, "PUT", `/api/v1/variable-sets/${tags.id}/vars/TEAM`, {
      value: "apps",
      category: "env",
    });
    expect(clash.status).toBe(409);
    expect(clash.body.error.message).toBe(
      "global variable sets base and tags would both set the env variable TEAM; global sets may not share a variable",
    );
    expect(await snapshotD1()).toEqual(before);
    // The same key in the other category is another variable.
    await putSetVariable(org, tags.id, "TEAM", { value: "apps", category: "terraform" });
    const local = await createVariableSet(org, { name: "local" });
    await putSetVariable(org, local.id, "TEAM", { value: "x", category: "env" });
    const becoming = await call(org, "PATCH", `/api/v1/variable-sets/${local.id}`, {
      global: true,
    });
    expect(becoming.status).toBe(409);
    expect(becoming.body.error.message).toMatch(
      /base and local would both set the env variable TEAM/,
    );
  });

  it("key rotation re-seals the sets' sensitive values too", async () => {
    const org = await seedOrg();
    const set = await createVariableSet(org, { name: "rotating" });
    await putSetVariable(org, set.id, "TOKEN", {
      value: "t0k3n",
      category: "env",
      sensitive: true,
    });
    const ws = await createWorkspace(org);
    await applySet(org, set.id, { workspaceId: ws.id });
    const res = await reencryptWith(ROTATED, org.ownerToken);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.variables).toEqual({ reencrypted: 1, remaining: 0 });
    const row = await env.DB.prepare(
      "SELECT key_id FROM variable_set_variables WHERE varset_id = ?",
    )
      .bind(set.id)
      .first<{ key_id: string }>();
    expect(row?.key_id).toBe("k2");
    // Only the new key left: the value still opens.
    const vars = await jobVariablesOf({ ENCRYPTION_KEY: NEW_KEY }, ws.id, true);
    expect(vars).toContainEqual(expect.objectContaining({ key: "TOKEN", value: "t0k3n" }));
  });
});

describeAuth("POST /api/v1/variable-sets", {
  role: "admin",
  hasOrgIds: false,
  target: () => ({ method: "POST", path: "/api/v1/variable-sets", body: { name: "auth-case" } }),
});

describeAuth("GET /api/v1/variable-sets", {
  role: "reader",
  hasOrgIds: false,
  target: () => ({ method: "GET", path: "/api/v1/variable-sets" }),
});

describeAuth("GET /api/v1/variable-sets/:varsetId", {
  role: "reader",
  target: async (org) => ({
    method: "GET",
    path: `/api/v1/variable-sets/${(await createVariableSet(org)).id}`,
  }),
});

describeAuth("PATCH /api/v1/variable-sets/:varsetId", {
  role: "admin",
  target: async (org) => ({
    method: "PATCH",
    path: `/api/v1/variable-sets/${(await createVariableSet(org)).id}`,
    body: { priority: true },
  }),
});

describeAuth("DELETE /api/v1/variable-sets/:varsetId", {
  role: "admin",
  target: async (org) => ({
    method: "DELETE",
    path: `/api/v1/variable-sets/${(await createVariableSet(org)).id}`,
  }),
});

describeAuth("GET /api/v1/variable-sets/:varsetId/vars", {
  role: "reader",
  target: async (org) => ({
    method: "GET",
    path: `/api/v1/variable-sets/${(await createVariableSet(org)).id}/vars`,
  }),
});

describeAuth("GET /api/v1/variable-sets/:varsetId/vars/:key", {
  role: "reader",
  target: async (org) => {
    const set = await createVariableSet(org);
    await putSetVariable(org, set.id, "FOO", { value: "x", category: "env" });
    return { method: "GET", path: `/api/v1/variable-sets/${set.id}/vars/FOO` };
  },
});

describeAuth("PUT /api/v1/variable-sets/:varsetId/vars/:key", {
  role: "admin",
  target: async (org) => ({
    method: "PUT",
    path: `/api/v1/variable-sets/${(await createVariableSet(org)).id}/vars/FOO`,
    body: { value: "x", category: "env" },
  }),
});

describeAuth("DELETE /api/v1/variable-sets/:varsetId/vars/:key", {
  role: "admin",
  target: async (org) => {
    const set = await createVariableSet(org);
    await putSetVariable(org, set.id, "FOO", { value: "x", category: "env" });
    return { method: "DELETE", path: `/api/v1/variable-sets/${set.id}/vars/FOO` };
  },
});

for (const kind of ["projects", "workspaces"] as const) {
  const targetOf = async (org: TestOrg) => {
    const set = await createVariableSet(org);
    const id =
      kind === "projects" ? (await createProject(org)).id : (await createWorkspace(org)).id;
    return { set, path: `/api/v1/variable-sets/${set.id}/${kind}/${id}` };
  };
  describeAuth(`PUT /api/v1/variable-sets/:varsetId/${kind}/:id`, {
    role: "admin",
    target: async (org) => ({ method: "PUT", path: (await targetOf(org)).path }),
  });
  describeAuth(`DELETE /api/v1/variable-sets/:varsetId/${kind}/:id`, {
    role: "admin",
    target: async (org) => {
      const { path } = await targetOf(org);
      await call(org, "PUT", path);
      return { method: "DELETE", path };
    },
  });
}
