import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { type ErrorBody, requestJson } from "./helpers/api.ts";
import { describeAuth } from "./helpers/auth-matrix.ts";
import { useTestClock } from "./helpers/clock.ts";
import { snapshotD1 } from "./helpers/d1-snapshot.ts";
import { seedOrg, type TestOrg } from "./helpers/fixtures.ts";
import {
  createHook,
  deliverGitHub,
  deliverGitLab,
  githubExample,
  type HookBody,
} from "./helpers/vcs.ts";

const hookTarget = async (org: TestOrg) => (await createHook(org, "github")).id;

describe("POST /api/v1/vcs-hooks", () => {
  it("creates a hook whose secret is shown once and stored only sealed", async () => {
    const org = await seedOrg();
    const hook = await createHook(org, "github", "git@github.com:acme/infra.git");
    expect(hook).toMatchObject({
      provider: "github",
      repoUrl: "git@github.com:acme/infra.git",
      url: `http://outpost.test/webhooks/github/${hook.id}`,
      previousSecretExpiresAt: null,
    });
    expect(hook.secret).toMatch(/^whsec_[A-Za-z0-9_-]{43}$/);
    const row = await env.DB.prepare("SELECT * FROM vcs_hooks WHERE id = ?")
      .bind(hook.id)
      .first<Record<string, unknown>>();
    expect(JSON.stringify(row)).not.toContain(hook.secret);
    expect(String(row?.secret_ciphertext)).toMatch(/^v1:k1:/);

    const shown = await requestJson<HookBody>(`/api/v1/vcs-hooks/${hook.id}`, {
      token: org.tokens.admin,
    });
    expect(shown.status).toBe(200);
    expect(shown.body.secret).toBeUndefined();
    const listed = await requestJson<{ hooks: HookBody[] }>("/api/v1/vcs-hooks", {
      token: org.tokens.admin,
    });
    expect(listed.body.hooks.map((h) => h.id)).toEqual([hook.id]);
    expect(JSON.stringify(listed.body)).not.toContain(hook.secret);
  });

  it("refuses bad input with 400 and changes nothing", async () => {
    const org = await seedOrg();
    const before = await snapshotD1();
    const bodies: unknown[] = [
      {},
      { provider: "bitbucket" },
      { provider: "github", repoUrl: "file:///srv/repo.git" },
      { provider: "github", repoUrl: "-uhttps://evil" },
      { provider: "github", repoUrl: "http://git.example.com/a/b.git" },
      { provider: "github", repoUrl: "ext::sh -c touch% /tmp/x" },
      { provider: "github", repoUrl: "https://user:pw@github.com/a/b.git" },
      { provider: "gitlab", extra: true },
      { provider: "gitlab", description: "x".repeat(201) },
    ];
    for (const body of bodies) {
      const res = await requestJson<ErrorBody>("/api/v1/vcs-hooks", {
        method: "POST",
        token: org.tokens.admin,
        body,
      });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error.code).toBe("BAD_REQUEST");
    }
    expect(await snapshotD1()).toEqual(before);
  });
});

describe("PATCH and DELETE /api/v1/vcs-hooks/{hookId}", () => {
  it("updates the description and repository scope, and a deleted hook's URL answers 404", async () => {
    const org = await seedOrg();
    const hook = await createHook(org, "gitlab");
    const patched = await requestJson<HookBody>(`/api/v1/vcs-hooks/${hook.id}`, {
      method: "PATCH",
      token: org.tokens.admin,
      body: { description: "infra", repoUrl: "https://gitlab.example.com/g/r.git" },
    });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({
      description: "infra",
      repoUrl: "https://gitlab.example.com/g/r.git",
    });
    const bad = await requestJson<ErrorBody>(`/api/v1/vcs-hooks/${hook.id}`, {
      method: "PATCH",
      token: org.tokens.admin,
      body: { repoUrl: "file:///x" },
    });
    expect(bad.status).toBe(400);

    const deleted = await requestJson(`/api/v1/vcs-hooks/${hook.id}`, {
      method: "DELETE",
      token: org.tokens.admin,
    });
    expect(deleted.status).toBe(200);
    const delivery = await deliverGitLab(hook, "Push Hook", {}, { token: hook.secret });
    expect(delivery.status).toBe(404);
    const again = await requestJson(`/api/v1/vcs-hooks/${hook.id}`, { token: org.tokens.admin });
    expect(again.status).toBe(404);
    const audit = await env.DB.prepare(
      "SELECT action FROM audit_events WHERE target_id = ? ORDER BY created_at",
    )
      .bind(hook.id)
      .all<{ action: string }>();
    expect(audit.results.map((r) => r.action)).toEqual([
      "vcs_hook.create",
      "vcs_hook.update",
      "vcs_hook.delete",
    ]);
  });
});

describe("POST /api/v1/vcs-hooks/{hookId}/rotate-secret", () => {
  const clock = useTestClock();

  it("accepts the old secret during the grace period only, and 0 revokes it at once", async () => {
    const org = await seedOrg();
    const hook = await createHook(org, "github");
    const ping = githubExample("ping");
    const rotate = (graceSeconds: number) =>
      requestJson<HookBody & { secret: string }>(`/api/v1/vcs-hooks/${hook.id}/rotate-secret`, {
        method: "POST",
        token: org.tokens.admin,
        body: { graceSeconds },
      });
    const rotated = await rotate(3600);
    expect(rotated.status).toBe(200);
    expect(rotated.body.secret).not.toBe(hook.secret);
    expect(Date.parse(rotated.body.previousSecretExpiresAt ?? "")).toBeGreaterThan(Date.now());
    expect((await deliverGitHub(hook, "ping", ping, { secret: hook.secret })).status).toBe(200);
    expect((await deliverGitHub(hook, "ping", ping, { secret: rotated.body.secret })).status).toBe(
      200,
    );

    // The grace period ends: the old secret is refused, the new one still works.
    clock.advance(3600 * 1000 + 1);
    expect((await deliverGitHub(hook, "ping", ping, { secret: hook.secret })).status).toBe(401);
    const shown = await requestJson<HookBody>(`/api/v1/vcs-hooks/${hook.id}`, {
      token: org.tokens.admin,
    });
    expect(shown.body.previousSecretExpiresAt).toBeNull();

    const immediate = await rotate(0);
    expect(immediate.body.previousSecretExpiresAt).toBeNull();
    expect((await deliverGitHub(hook, "ping", ping, { secret: rotated.body.secret })).status).toBe(
      401,
    );
    expect(
      (await deliverGitHub(hook, "ping", ping, { secret: immediate.body.secret })).status,
    ).toBe(200);
  });

  it("rotates GitLab tokens the same way", async () => {
    const org = await seedOrg();
    const hook = await createHook(org, "gitlab");
    const rotated = await requestJson<HookBody & { secret: string }>(
      `/api/v1/vcs-hooks/${hook.id}/rotate-secret`,
      { method: "POST", token: org.tokens.admin, body: {} },
    );
    expect(rotated.status).toBe(200);
    const tag = { object_kind: "tag_push" };
    for (const token of [hook.secret, rotated.body.secret]) {
      expect((await deliverGitLab(hook, "Tag Push Hook", tag, { token })).status).toBe(202);
    }
    expect((await deliverGitLab(hook, "Tag Push Hook", tag, { token: "nope" })).status).toBe(401);
  });

  it("refuses a grace period over 7 days or negative", async () => {
    const org = await seedOrg();
    const hook = await createHook(org, "github");
    for (const graceSeconds of [-1, 7 * 24 * 3600 + 1, 1.5]) {
      const res = await requestJson(`/api/v1/vcs-hooks/${hook.id}/rotate-secret`, {
        method: "POST",
        token: org.tokens.admin,
        body: { graceSeconds },
      });
      expect(res.status).toBe(400);
    }
  });
});

describeAuth("POST /api/v1/vcs-hooks", {
  role: "admin",
  hasOrgIds: false,
  target: () => ({ method: "POST", path: "/api/v1/vcs-hooks", body: { provider: "github" } }),
});
describeAuth("GET /api/v1/vcs-hooks", {
  role: "admin",
  hasOrgIds: false,
  target: () => ({ method: "GET", path: "/api/v1/vcs-hooks" }),
});
describeAuth("GET /api/v1/vcs-hooks/{hookId}", {
  role: "admin",
  target: async (org) => ({ method: "GET", path: `/api/v1/vcs-hooks/${await hookTarget(org)}` }),
});
describeAuth("PATCH /api/v1/vcs-hooks/{hookId}", {
  role: "admin",
  target: async (org) => ({
    method: "PATCH",
    path: `/api/v1/vcs-hooks/${await hookTarget(org)}`,
    body: { description: "changed" },
  }),
});
describeAuth("DELETE /api/v1/vcs-hooks/{hookId}", {
  role: "admin",
  target: async (org) => ({
    method: "DELETE",
    path: `/api/v1/vcs-hooks/${await hookTarget(org)}`,
  }),
});
describeAuth("POST /api/v1/vcs-hooks/{hookId}/rotate-secret", {
  role: "admin",
  target: async (org) => ({
    method: "POST",
    path: `/api/v1/vcs-hooks/${await hookTarget(org)}/rotate-secret`,
    body: {},
  }),
});
describeAuth("GET /api/v1/vcs-hooks/{hookId}/deliveries", {
  role: "admin",
  target: async (org) => ({
    method: "GET",
    path: `/api/v1/vcs-hooks/${await hookTarget(org)}/deliveries`,
  }),
});
