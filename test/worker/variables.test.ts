import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { type ErrorBody, requestJson } from "./helpers/api.ts";
import { describeAuth } from "./helpers/auth-matrix.ts";
import { snapshotD1 } from "./helpers/d1-snapshot.ts";
import { seedOrg, type TestOrg } from "./helpers/fixtures.ts";
import { createWorkspace, jobVariablesOf } from "./helpers/workspaces.ts";

type Variable = {
  id: string;
  key: string;
  category: string;
  value: string | null;
  hcl: boolean;
  sensitive: boolean;
  description: string;
};

const put = (org: TestOrg, ws: string, key: string, body: unknown, query = "") =>
  requestJson<Variable & ErrorBody>(`/api/v1/workspaces/${ws}/vars/${key}${query}`, {
    method: "PUT",
    token: org.tokens.admin,
    body,
  });

async function rowOf(id: string) {
  return env.DB.prepare("SELECT * FROM variables WHERE id = ?")
    .bind(id)
    .first<Record<string, unknown>>();
}

describe("PUT/GET /api/v1/workspaces/:workspaceId/vars/:key", () => {
  it("creates (201), reads, replaces (200) and lists variables, with audit events", async () => {
    const org = await seedOrg();
    const ws = await createWorkspace(org);
    const created = await put(org, ws.id, "region", {
      category: "terraform",
      value: "eu-west-1",
      description: "where",
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body).toMatchObject({
      key: "region",
      category: "terraform",
      value: "eu-west-1",
      hcl: false,
      sensitive: false,
      description: "where",
    });
    const replaced = await put(org, ws.name, "region", {
      category: "terraform",
      value: '["a", "b"]',
      hcl: true,
    });
    expect(replaced.status).toBe(200);
    expect(replaced.body).toMatchObject({ id: created.body.id, hcl: true, description: "" });
    await put(org, ws.id, "TF_LOG", { category: "env", value: "DEBUG" });
    const one = await requestJson<Variable>(`/api/v1/workspaces/${ws.id}/vars/region`, {
      token: org.tokens.reader,
    });
    expect(one.body.value).toBe('["a", "b"]');
    const list = await requestJson<{ variables: Variable[] }>(`/api/v1/workspaces/${ws.id}/vars`, {
      token: org.tokens.reader,
    });
    expect(list.body.variables.map((v) => `${v.category}:${v.key}=${v.value}`)).toEqual([
      "env:TF_LOG=DEBUG",
      'terraform:region=["a", "b"]',
    ]);
    const envOnly = await requestJson<{ variables: Variable[] }>(
      `/api/v1/workspaces/${ws.id}/vars?category=env`,
      { token: org.tokens.reader },
    );
    expect(envOnly.body.variables.map((v) => v.key)).toEqual(["TF_LOG"]);
    const audit = await env.DB.prepare(
      "SELECT action FROM audit_events WHERE target_id = ? ORDER BY created_at, rowid",
    )
      .bind(created.body.id)
      .all<{ action: string }>();
    expect(audit.results.map((a) => a.action)).toEqual(["variable.create", "variable.update"]);
  });

  it("stores sensitive values only encrypted and never returns them", async () => {
    const org = await seedOrg();
    const ws = await createWorkspace(org);
    const secret = "s3cr3t-Pl41ntext-value-0123456789";
    const res = await put(org, ws.id, "AWS_SECRET_ACCESS_KEY", {
      category: "env",
      value: secret,
      sensitive: true,
    });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ sensitive: true, value: null });
    expect(JSON.stringify(res.body)).not.toContain(secret);

    const row = await rowOf(res.body.id);
    expect(row?.value).toBeNull();
    expect(row?.key_id).toBe("k1");
    expect(row?.ciphertext).toMatch(/^v1:k1:/);
    expect(JSON.stringify(await snapshotD1())).not.toContain(secret);
    expect(JSON.stringify(await snapshotD1())).not.toContain(btoa(secret).slice(0, 20));

    for (const path of [
      `/vars`,
      `/vars/AWS_SECRET_ACCESS_KEY`,
      `/vars/AWS_SECRET_ACCESS_KEY?category=env`,
    ]) {
      const read = await requestJson(`/api/v1/workspaces/${ws.id}${path}`, {
        token: org.ownerToken,
      });
      expect(read.status).toBe(200);
      expect(JSON.stringify(read.body)).not.toContain(secret);
    }
    const deleted = await requestJson(`/api/v1/workspaces/${ws.id}/vars/AWS_SECRET_ACCESS_KEY`, {
      method: "DELETE",
      token: org.tokens.admin,
    });
    expect(JSON.stringify(deleted.body)).not.toContain(secret);
    expect(deleted.body).toMatchObject({ sensitive: true, value: null });
  });

  it("decrypts only for jobs, and leaves sensitive variables out when told to", async () => {
    const org = await seedOrg();
    const ws = await createWorkspace(org);
    await put(org, ws.id, "token", { category: "terraform", value: "t0ps3cret", sensitive: true });
    await put(org, ws.id, "TF_LOG", { category: "env", value: "INFO" });
    const all = await jobVariablesOf(env, ws.id, true);
    expect(all).toEqual([
      { key: "TF_LOG", value: "INFO", category: "env", hcl: false, sensitive: false },
      { key: "token", value: "t0ps3cret", category: "terraform", hcl: false, sensitive: true },
    ]);
    const forFork = await jobVariablesOf(env, ws.id, false);
    expect(forFork.map((v) => v.key)).toEqual(["TF_LOG"]);
  });

  it("keeps, seals or refuses the stored value when a replace omits it", async () => {
    const org = await seedOrg();
    const ws = await createWorkspace(org);
    const created = await put(org, ws.id, "db_password", {
      category: "terraform",
      value: "first",
      sensitive: true,
    });
    const sealedBefore = (await rowOf(created.body.id))?.ciphertext;
    expect(sealedBefore).toEqual(expect.any(String));
    const before = await snapshotD1();
    const downgrade = await put(org, ws.id, "db_password", { category: "terraform" });
    expect(downgrade.status).toBe(400);
    expect(downgrade.body.error.issues?.[0]?.path).toBe("json.value");
    expect(await snapshotD1()).toEqual(before);

    const described = await put(org, ws.id, "db_password", {
      category: "terraform",
      sensitive: true,
      description: "rotated monthly",
    });
    expect(described.status).toBe(200);
    expect((await rowOf(created.body.id))?.ciphertext).toBe(sealedBefore);
    let vars = await jobVariablesOf(env, ws.id, true);
    expect(vars[0]?.value).toBe("first");

    const plain = await put(org, ws.id, "db_password", { category: "terraform", value: "second" });
    expect(plain.status).toBe(200);
    expect(plain.body).toMatchObject({ sensitive: false, value: "second" });
    expect((await rowOf(created.body.id))?.ciphertext).toBeNull();

    const sealed = await put(org, ws.id, "db_password", { category: "terraform", sensitive: true });
    expect(sealed.status).toBe(200);
    expect(sealed.body.value).toBeNull();
    const row = await rowOf(created.body.id);
    expect(row?.value).toBeNull();
    expect(JSON.stringify(row)).not.toContain("second");
    vars = await jobVariablesOf(env, ws.id, true);
    expect(vars[0]?.value).toBe("second");

    const missing = await put(org, ws.id, "fresh", { category: "terraform" });
    expect(missing.status).toBe(400);
  });

  it("names a variable by key and category: the same key may exist in both", async () => {
    const org = await seedOrg();
    const ws = await createWorkspace(org);
    expect((await put(org, ws.id, "region", { category: "env", value: "env-value" })).status).toBe(
      201,
    );
    expect(
      (await put(org, ws.id, "region", { category: "terraform", value: "tf-value" })).status,
    ).toBe(201);
    const base = `/api/v1/workspaces/${ws.id}/vars/region`;
    const ambiguous = await requestJson<ErrorBody>(base, { token: org.tokens.reader });
    expect(ambiguous.status).toBe(400);
    expect(ambiguous.body.error.issues?.[0]?.path).toBe("query.category");
    const env1 = await requestJson<Variable>(`${base}?category=env`, { token: org.tokens.reader });
    expect(env1.body.value).toBe("env-value");
    const before = await snapshotD1();
    expect((await requestJson(base, { method: "DELETE", token: org.tokens.admin })).status).toBe(
      400,
    );
    expect(await snapshotD1()).toEqual(before);
    const del = await requestJson<Variable>(`${base}?category=env`, {
      method: "DELETE",
      token: org.tokens.admin,
    });
    expect(del.status).toBe(200);
    const rest = await requestJson<Variable>(base, { token: org.tokens.reader });
    expect(rest.body).toMatchObject({ category: "terraform", value: "tf-value" });
    const gone = await requestJson(`${base}?category=env`, { token: org.tokens.reader });
    expect(gone.status).toBe(404);
    const mismatch = await put(
      org,
      ws.id,
      "region",
      { category: "env", value: "x" },
      "?category=terraform",
    );
    expect(mismatch.status).toBe(400);
  });

  it("refuses bad names and bad bodies with 4xx and changes nothing", async () => {
    const org = await seedOrg();
    const ws = await createWorkspace(org);
    const cases: { key: string; body: unknown; status: number; field?: string }[] = [
      { key: "1ABC", body: { category: "env", value: "x" }, status: 400, field: "param.key" },
      { key: "MY-VAR", body: { category: "env", value: "x" }, status: 400, field: "param.key" },
      {
        key: "count",
        body: { category: "terraform", value: "1" },
        status: 400,
        field: "param.key",
      },
      { key: "a.b", body: { category: "terraform", value: "1" }, status: 400, field: "param.key" },
      {
        key: "x".repeat(129),
        body: { category: "env", value: "1" },
        status: 400,
        field: "param.key",
      },
      {
        key: "OK",
        body: { category: "env", value: "[1]", hcl: true },
        status: 400,
        field: "json.hcl",
      },
      { key: "OK", body: { category: "both", value: "x" }, status: 400, field: "json.category" },
      { key: "OK", body: { value: "x" }, status: 400, field: "json.category" },
      { key: "OK", body: { category: "env", value: 5 }, status: 400, field: "json.value" },
      {
        key: "OK",
        body: { category: "env", value: "x", sensitive: "yes" },
        status: 400,
        field: "json.sensitive",
      },
      {
        key: "OK",
        body: { category: "env", value: "x", secret: true },
        status: 400,
        field: "json",
      },
      {
        key: "OK",
        body: { category: "env", value: "v".repeat(128 * 1024 + 1) },
        status: 400,
        field: "json.value",
      },
      { key: "OK", body: { category: "env", value: "v".repeat(300_000) }, status: 413 },
      { key: "OK", body: "{nope", status: 400 },
    ];
    for (const { key, body, status, field } of cases) {
      const before = await snapshotD1();
      const res = await requestJson<ErrorBody>(`/api/v1/workspaces/${ws.id}/vars/${key}`, {
        method: "PUT",
        token: org.tokens.admin,
        body,
        headers: { "content-type": "application/json" },
      });
      expect(res.status, `${key} ${JSON.stringify(body).slice(0, 80)}`).toBe(status);
      if (field) {
        expect(res.body.error.issues?.some((i) => i.path.startsWith(field))).toBe(true);
      }
      expect(await snapshotD1()).toEqual(before);
    }
    const wrongType = await requestJson<ErrorBody>(`/api/v1/workspaces/${ws.id}/vars/OK`, {
      method: "PUT",
      token: org.tokens.admin,
      body: "value=x",
      headers: { "content-type": "text/plain" },
    });
    expect(wrongType.status).toBe(415);
    const noWorkspace = await put(org, "nope", "OK", { category: "env", value: "x" });
    expect(noWorkspace.status).toBe(404);
    const badCategory = await requestJson(`/api/v1/workspaces/${ws.id}/vars/OK?category=all`, {
      token: org.tokens.reader,
    });
    expect(badCategory.status).toBe(400);
    // Many cases, each with two full D1 snapshots: slower than the default 5 s on a busy machine.
  }, 30_000);
});

describe("concurrent writes", () => {
  it("two creates of the same variable: one 201, the other 200 or 409, never a 500", async () => {
    const org = await seedOrg();
    const ws = await createWorkspace(org);
    const results = await Promise.all([
      put(org, ws.id, "RACE", { category: "env", value: "a" }),
      put(org, ws.id, "RACE", { category: "env", value: "b" }),
    ]);
    const statuses = results.map((r) => r.status).sort();
    expect([
      [200, 201],
      [201, 409],
    ]).toContainEqual(statuses);
    const rows = await env.DB.prepare("SELECT id FROM variables WHERE workspace_id = ?")
      .bind(ws.id)
      .all<{ id: string }>();
    expect(rows.results).toHaveLength(1);
    const events = await env.DB.prepare(
      "SELECT action FROM audit_events WHERE target_id = ? ORDER BY rowid",
    )
      .bind(rows.results[0]?.id)
      .all<{ action: string }>();
    expect(events.results.map((e) => e.action)).toEqual(
      statuses[0] === 200 ? ["variable.create", "variable.update"] : ["variable.create"],
    );
  });
});

describe("bad input on reads and deletes", () => {
  it("answers 400 for malformed keys and 404 for unknown workspaces or variables", async () => {
    const org = await seedOrg();
    const ws = await createWorkspace(org);
    const before = await snapshotD1();
    for (const [method, path, status] of [
      ["GET", `/api/v1/workspaces/${ws.id}/vars/bad.key`, 400],
      ["DELETE", `/api/v1/workspaces/${ws.id}/vars/bad%20key`, 400],
      ["DELETE", `/api/v1/workspaces/${ws.id}/vars/MISSING`, 404],
      ["GET", "/api/v1/workspaces/no-such-ws/vars", 404],
      ["GET", "/api/v1/workspaces/bad name/vars", 400],
      ["GET", `/api/v1/workspaces/${ws.id}/vars?sensitive=true`, 400],
      ["GET", `/api/v1/workspaces/${ws.id}/vars?category=secret`, 400],
    ] as const) {
      const res = await requestJson<ErrorBody>(path, { method, token: org.tokens.admin });
      expect(res.status, `${method} ${path}`).toBe(status);
    }
    expect(await snapshotD1()).toEqual(before);
  });
});

const withVariable = async (org: TestOrg) => {
  const ws = await createWorkspace(org);
  await put(org, ws.id, "region", { category: "terraform", value: "eu" });
  return ws.id;
};

describeAuth("GET /api/v1/workspaces/:workspaceId/vars", {
  role: "reader",
  target: async (org) => ({
    method: "GET",
    path: `/api/v1/workspaces/${await withVariable(org)}/vars`,
  }),
});
describeAuth("GET /api/v1/workspaces/:workspaceId/vars/:key", {
  role: "reader",
  target: async (org) => ({
    method: "GET",
    path: `/api/v1/workspaces/${await withVariable(org)}/vars/region`,
  }),
});
describeAuth("PUT /api/v1/workspaces/:workspaceId/vars/:key", {
  role: "admin",
  target: async (org) => ({
    method: "PUT",
    path: `/api/v1/workspaces/${await withVariable(org)}/vars/region`,
    body: { category: "terraform", value: "us", sensitive: true },
  }),
});
describeAuth("DELETE /api/v1/workspaces/:workspaceId/vars/:key", {
  role: "admin",
  target: async (org) => ({
    method: "DELETE",
    path: `/api/v1/workspaces/${await withVariable(org)}/vars/region?category=terraform`,
  }),
});
