import { env } from "cloudflare:workers";
import { eq } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { agentPools } from "../../src/db/schema.ts";
import { type ErrorBody, requestJson } from "./helpers/api.ts";
import { describeAuth } from "./helpers/auth-matrix.ts";
import { snapshotD1 } from "./helpers/d1-snapshot.ts";
import { db, seedOrg } from "./helpers/fixtures.ts";
import { createWorkspace, seedPool, type WorkspaceBody } from "./helpers/workspaces.ts";

async function auditOf(targetId: string) {
  const rows = await env.DB.prepare(
    "SELECT action, actor, data FROM audit_events WHERE target_id = ? ORDER BY created_at, rowid",
  )
    .bind(targetId)
    .all<{ action: string; actor: string; data: string | null }>();
  return rows.results.map((r) => ({ ...r, data: r.data ? JSON.parse(r.data) : null }));
}

describe("POST /api/v1/workspaces", () => {
  it("creates a local workspace with defaults, and an agent one on a pool of the org", async () => {
    const org = await seedOrg();
    const res = await requestJson<WorkspaceBody>("/api/v1/workspaces", {
      method: "POST",
      token: org.tokens.admin,
      body: { name: "network-prod", engineVersion: "1.9.5" },
    });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      id: expect.stringMatching(/^ws_[a-z2-7]{26}$/),
      name: "network-prod",
      executionMode: "local",
      poolId: null,
      engine: "terraform",
      engineVersion: "1.9.5",
      workingDirectory: "",
      autoApply: false,
      vcsRepoUrl: null,
      vcsBranch: null,
      vcsTriggerPaths: [],
      forkPullRequests: "refuse",
      lock: null,
      currentRunId: null,
    });
    const audit = await auditOf(res.body.id);
    expect(audit.map((a) => a.action)).toEqual(["workspace.create"]);

    const poolId = await seedPool(org.orgId);
    const agent = await requestJson<WorkspaceBody>("/api/v1/workspaces", {
      method: "POST",
      token: org.tokens.admin,
      body: {
        name: "k8s_private",
        engine: "tofu",
        engineVersion: "1.8.3",
        poolId,
        workingDirectory: "envs/prod/",
        autoApply: true,
        vcsRepoUrl: "git@git.example.internal:platform/k8s.git",
        vcsBranch: "release/2026",
        vcsTriggerPaths: ["envs/prod", "modules/**"],
        forkPullRequests: "plan_without_secrets",
        description: "private cluster",
      },
    });
    expect(agent.status, JSON.stringify(agent.body)).toBe(201);
    expect(agent.body).toMatchObject({
      executionMode: "agent",
      poolId,
      engine: "tofu",
      workingDirectory: "envs/prod",
      vcsTriggerPaths: ["envs/prod", "modules/**"],
    });
  });

  it("refuses a duplicate name with 409 and changes nothing", async () => {
    const org = await seedOrg();
    await createWorkspace(org, { name: "dup" });
    const before = await snapshotD1();
    const res = await requestJson<ErrorBody>("/api/v1/workspaces", {
      method: "POST",
      token: org.tokens.admin,
      body: { name: "dup", engineVersion: "1.9.5" },
    });
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe("CONFLICT");
    expect(await snapshotD1()).toEqual(before);
    // The same name in another org is fine.
    await createWorkspace(await seedOrg(), { name: "dup" });
  });

  it("refuses invalid settings with field-level issues and changes nothing", async () => {
    const org = await seedOrg();
    const other = await seedOrg();
    const foreignPool = await seedPool(other.orgId);
    const base = { name: "valid-name", engineVersion: "1.9.5" };
    const cases: { body: Record<string, unknown>; field: string }[] = [
      { body: { ...base, name: "has space" }, field: "json.name" },
      { body: { ...base, name: "ws_looks_like_an_id" }, field: "json.name" },
      { body: { ...base, name: "-leading" }, field: "json.name" },
      { body: { ...base, name: "x".repeat(91) }, field: "json.name" },
      { body: { ...base, engineVersion: "" }, field: "json.engineVersion" },
      { body: { ...base, engineVersion: "newest" }, field: "json.engineVersion" },
      { body: { ...base, engineVersion: "~> 1.9.x" }, field: "json.engineVersion" },
      { body: { ...base, engineVersion: ">= 1.6," }, field: "json.engineVersion" },
      { body: { ...base, engineVersion: "^1.9.0" }, field: "json.engineVersion" },
      { body: { ...base, engineVersion: "v1.9.5" }, field: "json.engineVersion" },
      { body: { ...base, engineVersion: "01.9.5" }, field: "json.engineVersion" },
      { body: { ...base, engine: "tofu", engineVersion: "1.5.7" }, field: "json.engineVersion" },
      { body: { ...base, engine: "pulumi" }, field: "json.stackName" },
      { body: { ...base, engine: "opentofu" }, field: "json.engine" },
      { body: { ...base, executionMode: "remote" }, field: "json.executionMode" },
      { body: { ...base, executionMode: "agent" }, field: "json.poolId" },
      { body: { ...base, poolId: foreignPool }, field: "json.poolId" },
      { body: { ...base, poolId: `pool_${"a".repeat(26)}` }, field: "json.poolId" },
      { body: { ...base, poolId: "ws_123" }, field: "json.poolId" },
      {
        body: { ...base, executionMode: "local", poolId: await seedPool(org.orgId) },
        field: "json.poolId",
      },
      { body: { ...base, workingDirectory: "../outside" }, field: "json.workingDirectory" },
      { body: { ...base, workingDirectory: "a/../../b" }, field: "json.workingDirectory" },
      { body: { ...base, workingDirectory: "/etc" }, field: "json.workingDirectory" },
      { body: { ...base, workingDirectory: "a//b" }, field: "json.workingDirectory" },
      { body: { ...base, workingDirectory: "a\\b" }, field: "json.workingDirectory" },
      { body: { ...base, vcsRepoUrl: "http://git.example/x.git" }, field: "json.vcsRepoUrl" },
      { body: { ...base, vcsRepoUrl: "file:///etc/passwd" }, field: "json.vcsRepoUrl" },
      { body: { ...base, vcsRepoUrl: "-oProxyCommand=sh" }, field: "json.vcsRepoUrl" },
      { body: { ...base, vcsRepoUrl: "ext::sh -c touch%20x" }, field: "json.vcsRepoUrl" },
      { body: { ...base, vcsRepoUrl: "https://u:secret@git.example/x" }, field: "json.vcsRepoUrl" },
      { body: { ...base, vcsRepoUrl: "https://git.example/" }, field: "json.vcsRepoUrl" },
      { body: { ...base, vcsBranch: "main" }, field: "json.vcsRepoUrl" },
      {
        body: { ...base, vcsRepoUrl: "https://git.example/x.git", vcsBranch: "-f" },
        field: "json.vcsBranch",
      },
      {
        body: { ...base, vcsRepoUrl: "https://git.example/x.git", vcsBranch: "a..b" },
        field: "json.vcsBranch",
      },
      {
        body: { ...base, vcsRepoUrl: "https://git.example/x.git", vcsTriggerPaths: ["../x"] },
        field: "json.vcsTriggerPaths",
      },
      {
        body: { ...base, vcsRepoUrl: "https://git.example/x.git", vcsTriggerPaths: "modules" },
        field: "json.vcsTriggerPaths",
      },
      { body: { ...base, forkPullRequests: "always" }, field: "json.forkPullRequests" },
      { body: { ...base, autoApply: "yes" }, field: "json.autoApply" },
      { body: { ...base, description: 3 }, field: "json.description" },
      { body: { ...base, lockedBy: "tok_x" }, field: "json" },
      { body: { ...base, id: "ws_x" }, field: "json" },
    ];
    for (const { body, field } of cases) {
      const before = await snapshotD1();
      const res = await requestJson<ErrorBody>("/api/v1/workspaces", {
        method: "POST",
        token: org.tokens.admin,
        body,
      });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error.code).toBe("BAD_REQUEST");
      expect(
        res.body.error.issues?.some((i) => i.path.startsWith(field)),
        `${JSON.stringify(body)} → ${JSON.stringify(res.body.error.issues)}`,
      ).toBe(true);
      expect(await snapshotD1()).toEqual(before);
    }
    // Many cases, each with two full D1 snapshots: slower than the default 5 s on a busy machine.
  }, 30_000);

  it("takes latest, exact versions and constraints, and defaults to latest", async () => {
    const org = await seedOrg();
    const poolId = await seedPool(org.orgId);
    const cases: [Record<string, unknown>, string][] = [
      [{ name: "local-no-version" }, "latest"],
      [{ name: "agent-no-version", poolId }, "latest"],
      [{ name: "pessimistic", engineVersion: "~> 1.9" }, "~> 1.9"],
      [{ name: "range", engineVersion: ">= 1.6, < 2.0" }, ">= 1.6, < 2.0"],
      [{ name: "tofu-range", engine: "tofu", engineVersion: ">= 1.6" }, ">= 1.6"],
      [{ name: "pre", engineVersion: "1.10.0-beta1" }, "1.10.0-beta1"],
    ];
    for (const [body, stored] of cases) {
      const res = await requestJson<WorkspaceBody>("/api/v1/workspaces", {
        method: "POST",
        token: org.tokens.admin,
        body,
      });
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      expect(res.body.engineVersion).toBe(stored);
    }
  });

  it("says what is wrong in a sentence a person reads", async () => {
    const org = await seedOrg();
    const cases: [unknown, RegExp][] = [
      [{}, /^name is required$/],
      [{ name: "x", engineVersion: 1.9 }, /^engineVersion must be a string$/],
      [
        { name: "x", engineVersion: "~> one" },
        /^engineVersion "~> one" is not a version .* ~> 1\.9/,
      ],
      [{ name: "x", executionMode: "remote" }, /^executionMode must be one of "agent", "local"$/],
      [{ name: "x", color: "red" }, /does not take: color$/],
    ];
    for (const [body, message] of cases) {
      const res = await requestJson<ErrorBody>("/api/v1/workspaces", {
        method: "POST",
        token: org.tokens.admin,
        body,
      });
      expect(res.status).toBe(400);
      expect(res.body.error.message).toMatch(message);
    }
  });

  it("accepts https, ssh:// and scp-like repository URLs", async () => {
    const org = await seedOrg();
    for (const url of [
      "https://git.example.internal/platform/net.git",
      "ssh://git@git.example.internal:2222/platform/net.git",
      "git@github.com:acme/infra.git",
    ]) {
      const ws = await createWorkspace(org, { vcsRepoUrl: url });
      expect(ws.vcsRepoUrl).toBe(url);
    }
  });

  it("refuses malformed JSON, a wrong content type, an oversized and a missing body", async () => {
    const org = await seedOrg();
    const before = await snapshotD1();
    const send = (body: unknown, headers?: Record<string, string>) =>
      requestJson<ErrorBody>("/api/v1/workspaces", {
        method: "POST",
        token: org.tokens.admin,
        body,
        ...(headers ? { headers } : {}),
      });
    const malformed = await send('{"name": "x",', { "content-type": "application/json" });
    expect(malformed.status).toBe(400);
    expect(malformed.body.error.code).toBe("BAD_REQUEST");
    const wrongType = await send("name=x", { "content-type": "text/plain" });
    expect(wrongType.status).toBe(415);
    expect(wrongType.body.error.code).toBe("UNSUPPORTED_MEDIA_TYPE");
    const oversized = await send({
      name: "big",
      engineVersion: "1.9.5",
      description: "x".repeat(300_000),
    });
    expect(oversized.status).toBe(413);
    expect(oversized.body.error.code).toBe("PAYLOAD_TOO_LARGE");
    const missing = await requestJson<ErrorBody>("/api/v1/workspaces", {
      method: "POST",
      token: org.tokens.admin,
    });
    expect(missing.status).toBe(400);
    const array = await send([]);
    expect(array.status).toBe(400);
    expect(await snapshotD1()).toEqual(before);
  });
});

describe("concurrent creates", () => {
  it("two creates of the same name: one 201, one 409, one audit event", async () => {
    const org = await seedOrg();
    const body = { name: "racing", engineVersion: "1.9.5" };
    const send = () =>
      requestJson<WorkspaceBody>("/api/v1/workspaces", {
        method: "POST",
        token: org.tokens.admin,
        body,
      });
    const results = await Promise.all([send(), send()]);
    expect(results.map((r) => r.status).sort()).toEqual([201, 409]);
    const events = await env.DB.prepare(
      "SELECT count(*) AS n FROM audit_events WHERE org_id = ? AND action = 'workspace.create'",
    )
      .bind(org.orgId)
      .first<{ n: number }>();
    expect(events?.n).toBe(1);
  });
});

describe("a pool deleted while a workspace is created on it", () => {
  it("ends in 201 or 400, never a 500, and never a workspace on a missing pool", async () => {
    const org = await seedOrg();
    for (let i = 0; i < 5; i++) {
      const poolId = await seedPool(org.orgId);
      const [created] = await Promise.allSettled([
        requestJson<WorkspaceBody>("/api/v1/workspaces", {
          method: "POST",
          token: org.tokens.admin,
          body: { name: `on-dying-pool-${i}`, engineVersion: "1.9.5", poolId },
        }),
        db.delete(agentPools).where(eq(agentPools.id, poolId)),
      ]);
      expect(created.status).toBe("fulfilled");
      const status = created.status === "fulfilled" ? created.value.status : 0;
      expect([201, 400]).toContain(status);
      const orphans = await env.DB.prepare(
        "SELECT count(*) AS n FROM workspaces w LEFT JOIN agent_pools p ON p.id = w.pool_id WHERE w.pool_id IS NOT NULL AND p.id IS NULL",
      ).first<{ n: number }>();
      expect(orphans?.n).toBe(0);
    }
  });
});

describe("GET /api/v1/workspaces", () => {
  it("lists the org's workspaces by name, a page at a time, never another org's", async () => {
    const org = await seedOrg();
    for (const name of ["charlie", "alpha", "bravo"]) {
      await createWorkspace(org, { name });
    }
    await createWorkspace(await seedOrg(), { name: "aardvark" });
    const first = await requestJson<{ workspaces: WorkspaceBody[]; nextCursor: string | null }>(
      "/api/v1/workspaces?limit=2",
      { token: org.tokens.reader },
    );
    expect(first.status).toBe(200);
    expect(first.body.workspaces.map((w) => w.name)).toEqual(["alpha", "bravo"]);
    expect(first.body.nextCursor).toEqual(expect.any(String));
    const second = await requestJson<{ workspaces: WorkspaceBody[]; nextCursor: string | null }>(
      `/api/v1/workspaces?limit=2&cursor=${first.body.nextCursor}`,
      { token: org.tokens.reader },
    );
    expect(second.body.workspaces.map((w) => w.name)).toEqual(["charlie"]);
    expect(second.body.nextCursor).toBeNull();
    const all = await requestJson<{ workspaces: WorkspaceBody[] }>("/api/v1/workspaces", {
      token: org.tokens.member,
    });
    expect(all.body.workspaces).toHaveLength(3);
    for (const [search, names] of [
      ["rav", ["bravo"]],
      ["a", ["alpha", "bravo", "charlie"]],
      ["%", []],
      ["_", []],
    ] as const) {
      const found = await requestJson<{ workspaces: WorkspaceBody[] }>(
        `/api/v1/workspaces?search=${encodeURIComponent(search)}`,
        { token: org.tokens.reader },
      );
      expect(
        found.body.workspaces.map((w) => w.name),
        search,
      ).toEqual(names);
    }
  });

  it("refuses a bad limit, a forged cursor and unknown query parameters with 400", async () => {
    const org = await seedOrg();
    for (const query of [
      "limit=0",
      "limit=101",
      "limit=abc",
      "cursor=!!",
      "cursor=bm9wZQ",
      "x=1",
      "search=",
    ]) {
      const res = await requestJson<ErrorBody>(`/api/v1/workspaces?${query}`, {
        token: org.tokens.reader,
      });
      expect(res.status, query).toBe(400);
      expect(res.body.error.code).toBe("BAD_REQUEST");
    }
  });
});

describe("GET /api/v1/workspaces/:workspaceId", () => {
  it("finds a workspace by id and by name, and only in the caller's org", async () => {
    const org = await seedOrg();
    const ws = await createWorkspace(org, { name: "by-name" });
    const byId = await requestJson<WorkspaceBody>(`/api/v1/workspaces/${ws.id}`, {
      token: org.tokens.reader,
    });
    expect(byId.status).toBe(200);
    expect(byId.body).toEqual(ws);
    const byName = await requestJson<WorkspaceBody>("/api/v1/workspaces/by-name", {
      token: org.tokens.reader,
    });
    expect(byName.body).toEqual(ws);
    const other = await seedOrg();
    const foreign = await requestJson<ErrorBody>("/api/v1/workspaces/by-name", {
      token: other.tokens.reader,
    });
    expect(foreign.status).toBe(404);
    const bad = await requestJson<ErrorBody>("/api/v1/workspaces/has%20space", {
      token: org.tokens.reader,
    });
    expect(bad.status).toBe(400);
    expect(bad.body.error.issues?.[0]?.path).toBe("param.workspaceId");
  });
});

const workspaceTarget = async (org: Parameters<typeof createWorkspace>[0]) =>
  (await createWorkspace(org)).id;

describeAuth("POST /api/v1/workspaces", {
  role: "admin",
  hasOrgIds: false,
  target: () => ({
    method: "POST",
    path: "/api/v1/workspaces",
    body: { name: "auth-matrix", engineVersion: "1.9.5" },
  }),
});
describeAuth("GET /api/v1/workspaces", {
  role: "reader",
  hasOrgIds: false,
  target: () => ({ method: "GET", path: "/api/v1/workspaces" }),
});
describeAuth("GET /api/v1/workspaces/:workspaceId", {
  role: "reader",
  target: async (org) => ({
    method: "GET",
    path: `/api/v1/workspaces/${await workspaceTarget(org)}`,
  }),
});
describeAuth("GET /api/v1/workspaces/:name", {
  role: "reader",
  target: async (org) => ({
    method: "GET",
    path: `/api/v1/workspaces/${(await createWorkspace(org)).name}`,
  }),
});
