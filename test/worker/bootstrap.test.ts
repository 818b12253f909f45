import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { newApp } from "../../src/app.ts";
import { systemClock } from "../../src/deps.ts";
import { createOrgToken } from "../../src/tokens/service.ts";
import { BASE, type ErrorBody, requestJson } from "./helpers/api.ts";
import { snapshotD1 } from "./helpers/d1-snapshot.ts";
import { deps, tokenActor } from "./helpers/fixtures.ts";

type Created = {
  organization: { id: string; name: string };
  token: { id: string; role: string; token: string };
};

const bootstrap = (authorization: string | null, body: unknown = { name: "acme" }) =>
  requestJson<Created & ErrorBody>("/api/v1/bootstrap", {
    method: "POST",
    body,
    headers: authorization ? { authorization } : {},
  });

// Runs in order: the file's storage starts empty, so the first successful call bootstraps.
describe("POST /api/v1/bootstrap", () => {
  it("refuses without the secret, with a wrong one, and with bad input, changing nothing", async () => {
    const before = await snapshotD1();
    for (const header of [
      null,
      "Bearer wrong-secret",
      `Basic ${btoa(`x:${env.BOOTSTRAP_TOKEN}`)}`,
    ]) {
      const res = await bootstrap(header);
      expect(res.status, String(header)).toBe(401);
      expect(res.body.error.code).toBe("UNAUTHORIZED");
    }
    const invalid = await bootstrap(`Bearer ${env.BOOTSTRAP_TOKEN}`, { name: "Not Valid!" });
    expect(invalid.status).toBe(400);
    expect(invalid.body.error.issues?.[0]?.path).toBe("json.name");
    const unknownField = await bootstrap(`Bearer ${env.BOOTSTRAP_TOKEN}`, { name: "a", x: 1 });
    expect(unknownField.status).toBe(400);
    expect(await snapshotD1()).toEqual(before);
  });

  it("creates the first organization and an owner token that works", async () => {
    const res = await bootstrap(`Bearer ${env.BOOTSTRAP_TOKEN}`);
    expect(res.status).toBe(201);
    expect(res.body.organization.name).toBe("acme");
    expect(res.body.token).toMatchObject({ role: "owner" });
    const me = await requestJson("/api/v1/organization", { token: res.body.token.token });
    expect(me.body).toMatchObject({ id: res.body.organization.id, role: "owner" });
    const audit = await env.DB.prepare("SELECT action, actor FROM audit_events").all();
    expect(audit.results).toEqual([{ action: "organization.create", actor: "bootstrap" }]);
  });

  it("refuses a second bootstrap with 409 and changes nothing", async () => {
    const before = await snapshotD1();
    const res = await bootstrap(`Bearer ${env.BOOTSTRAP_TOKEN}`, { name: "second" });
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe("CONFLICT");
    expect(await snapshotD1()).toEqual(before);
  });

  it("stays closed when the deployment has no bootstrap secret", async () => {
    const app = newApp(systemClock);
    const ctx = createExecutionContext();
    const res = await app.fetch(
      new Request(`${BASE}/api/v1/bootstrap`, {
        method: "POST",
        headers: { authorization: "Bearer ", "content-type": "application/json" },
        body: JSON.stringify({ name: "x" }),
      }),
      { ...env, BOOTSTRAP_TOKEN: "" },
      ctx,
    );
    await waitOnExecutionContext(ctx);
    expect(res.status).toBe(401);
  });
});

describe("POST /api/v1/organizations", () => {
  async function ownerToken(): Promise<string> {
    const row = await env.DB.prepare("SELECT id FROM organizations WHERE name = 'acme'").first<{
      id: string;
    }>();
    return (
      await createOrgToken(deps, {
        orgId: row?.id ?? "",
        role: "owner",
        description: "t",
        actor: tokenActor("test"),
      })
    ).token;
  }

  it("lets an owner create a further organization when the deployment allows it", async () => {
    const token = await ownerToken();
    const res = await requestJson<Created>("/api/v1/organizations", {
      method: "POST",
      token,
      body: { name: "second-org" },
    });
    expect(res.status).toBe(201);
    const other = await requestJson("/api/v1/organization", { token: res.body.token.token });
    expect(other.body).toMatchObject({ name: "second-org", role: "owner" });
    const dup = await requestJson<ErrorBody>("/api/v1/organizations", {
      method: "POST",
      token,
      body: { name: "second-org" },
    });
    expect(dup.status).toBe(409);
  });

  it("refuses with 403 where the deployment allows one organization", async () => {
    const token = await ownerToken();
    const before = await snapshotD1();
    const app = newApp(systemClock);
    const ctx = createExecutionContext();
    const res = await app.fetch(
      new Request(`${BASE}/api/v1/organizations`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: JSON.stringify({ name: "third-org" }),
      }),
      { ...env, ALLOW_MULTIPLE_ORGS: "false" },
      ctx,
    );
    await waitOnExecutionContext(ctx);
    expect(res.status).toBe(403);
    expect(((await res.json()) as ErrorBody).error.code).toBe("FORBIDDEN");
    expect(await snapshotD1()).toEqual(before);
  });

  it("refuses non-owners", async () => {
    const row = await env.DB.prepare("SELECT id FROM organizations WHERE name = 'acme'").first<{
      id: string;
    }>();
    const admin = await createOrgToken(deps, {
      orgId: row?.id ?? "",
      role: "admin",
      description: "a",
      actor: tokenActor("t"),
    });
    const res = await requestJson<ErrorBody>("/api/v1/organizations", {
      method: "POST",
      token: admin.token,
      body: { name: "nope" },
    });
    expect(res.status).toBe(403);
  });
});
