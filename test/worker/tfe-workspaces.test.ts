/**
 * The TFE API's discovery, ping, organization and workspaces (`src/tfe`) through the real Worker,
 * with the requests go-tfe makes (`tfe.go`, `organization.go`, `workspace.go`) and the checks the
 * cloud backend applies to the answers (`internal/cloud/backend.go`).
 */
import { describe, expect, it } from "vitest";
import { request, requestJson } from "./helpers/api.ts";
import { describeAccess, describeAuth } from "./helpers/auth-matrix.ts";
import { snapshotD1 } from "./helpers/d1-snapshot.ts";
import { seedOrg } from "./helpers/fixtures.ts";
import { personWithAccess } from "./helpers/people.ts";
import {
  type Document,
  type ErrorsDocument,
  JSONAPI,
  type ListDocument,
  orgName,
  tfe,
  workspaceDocument,
} from "./helpers/tfe.ts";
import { createWorkspace, seedPool } from "./helpers/workspaces.ts";

describe("service discovery and ping", () => {
  it("advertises the TFE API under every name the CLI and the provider look for", async () => {
    const res = await request("/.well-known/terraform.json");
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      "tfe.v2": "/api/v2/",
      "tfe.v2.1": "/api/v2/",
      "tfe.v2.2": "/api/v2/",
    });
  });

  it("answers ping with the headers go-tfe reads, without a token", async () => {
    const res = await tfe<null>("/ping");
    expect(res.status).toBe(204);
    // internal/cloud/backend.go wants TFP-API-Version >= 2.5; backend_plan.go parses
    // X-TFE-Version as v<yyyymm>-<n>.
    expect(Number(res.headers.get("tfp-api-version"))).toBeGreaterThanOrEqual(2.5);
    expect(res.headers.get("tfp-appname")).toBe("Outpost");
    expect(res.headers.get("x-tfe-version")).toMatch(/^v\d{6}-\d+$/);
  });

  it("answers unknown /api/v2 paths with a JSON:API 404 carrying the API headers", async () => {
    const org = await seedOrg();
    const res = await tfe<ErrorsDocument>("/no-such-thing", { token: org.ownerToken });
    expect(res.status).toBe(404);
    expect(res.headers.get("content-type")).toBe(JSONAPI);
    expect(res.headers.get("tfp-api-version")).toBe("2.5");
    expect(res.body.errors[0]).toMatchObject({ status: "404", code: "NOT_FOUND" });
  });
});

describe("organizations", () => {
  it("reads the caller's organization and its entitlements by name", async () => {
    const org = await seedOrg();
    const name = await orgName(org);
    const read = await tfe<Document>(`/organizations/${name}`, { token: org.tokens.reader });
    expect(read.status).toBe(200);
    expect(read.headers.get("content-type")).toBe(JSONAPI);
    expect(read.body.data).toMatchObject({
      id: name,
      type: "organizations",
      attributes: {
        name,
        "external-id": org.orgId,
        permissions: { "can-create-workspace": false },
      },
    });
    const entitlements = await tfe<Document>(`/organizations/${name}/entitlement-set`, {
      token: org.tokens.reader,
    });
    expect(entitlements.status).toBe(200);
    expect(entitlements.body.data).toMatchObject({
      type: "entitlement-sets",
      attributes: { operations: true, "state-storage": true, sentinel: false },
    });
  });

  it("answers 404 for another organization's name, as for a missing one", async () => {
    const org = await seedOrg();
    const other = await orgName(await seedOrg());
    for (const name of [other, "no-such-org"]) {
      const res = await tfe<ErrorsDocument>(`/organizations/${name}/entitlement-set`, {
        token: org.ownerToken,
      });
      expect(res.status).toBe(404);
      expect(res.body.errors[0]?.detail).toBe(`organization ${name} not found`);
    }
  });

  describeAuth("GET /api/v2/organizations/{name}/entitlement-set", {
    target: async (org) => ({
      method: "GET",
      path: `/api/v2/organizations/${await orgName(org)}/entitlement-set`,
    }),
    role: "reader",
  });
});

describe("workspaces", () => {
  it("creates, reads by name and id, updates and deletes a workspace with TFC's attributes", async () => {
    const org = await seedOrg();
    const name = await orgName(org);
    const poolId = await seedPool(org.orgId);
    const created = await tfe<Document>(`/organizations/${name}/workspaces`, {
      method: "POST",
      token: org.tokens.admin,
      body: workspaceDocument(
        {
          name: "app-prod",
          "auto-apply": true,
          "execution-mode": "agent",
          "terraform-version": "1.9.5",
          "working-directory": "envs/prod",
          // Attributes Outpost does not keep are ignored, as the tfe provider sends many.
          "queue-all-runs": false,
        },
        { "agent-pool": { data: { id: poolId, type: "agent-pools" } } },
      ),
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const id = created.body.data.id;
    expect(created.body.data).toMatchObject({
      type: "workspaces",
      attributes: {
        name: "app-prod",
        "auto-apply": true,
        "execution-mode": "agent",
        "agent-pool-id": poolId,
        "terraform-version": "1.9.5",
        "working-directory": "envs/prod",
        locked: false,
        permissions: { "can-update": true, "can-queue-run": true },
      },
      relationships: {
        organization: { data: { id: name, type: "organizations" } },
        "agent-pool": { data: { id: poolId, type: "agent-pools" } },
      },
    });

    const byName = await tfe<Document>(`/organizations/${name}/workspaces/app-prod`, {
      token: org.tokens.reader,
    });
    expect(byName.status).toBe(200);
    expect(byName.body.data.id).toBe(id);
    expect(byName.body.data.attributes.permissions).toMatchObject({
      "can-read-settings": true,
      "can-update": false,
      "can-queue-run": false,
    });

    const updated = await tfe<Document>(`/workspaces/${id}`, {
      method: "PATCH",
      token: org.tokens.admin,
      body: workspaceDocument({ "execution-mode": "local", "auto-apply": false }),
    });
    expect(updated.status, JSON.stringify(updated.body)).toBe(200);
    expect(updated.body.data.attributes).toMatchObject({
      "execution-mode": "local",
      "agent-pool-id": null,
      "auto-apply": false,
    });

    const renamed = await tfe<Document>(`/organizations/${name}/workspaces/app-prod`, {
      method: "PATCH",
      token: org.tokens.admin,
      body: workspaceDocument({ name: "app-production" }),
    });
    expect(renamed.body.data.attributes.name).toBe("app-production");

    const deleted = await tfe<null>(`/organizations/${name}/workspaces/app-production`, {
      method: "DELETE",
      token: org.tokens.admin,
    });
    expect(deleted.status).toBe(204);
    const gone = await tfe<ErrorsDocument>(`/workspaces/${id}`, { token: org.tokens.admin });
    expect(gone.status).toBe(404);
  });

  it("refuses invalid documents with a JSON:API 400 and changes nothing", async () => {
    const org = await seedOrg();
    const name = await orgName(org);
    const before = await snapshotD1();
    const cases = [
      { body: workspaceDocument({ name: "has space" }), field: "name" },
      { body: workspaceDocument({}), field: "name" },
      {
        body: workspaceDocument({ name: "x", "execution-mode": "remote" }),
        field: "execution-mode",
      },
      { body: workspaceDocument({ name: "x", "execution-mode": "agent" }), field: "poolId" },
      {
        body: workspaceDocument({ name: "x", "terraform-version": "newest" }),
        field: "newest",
      },
      {
        body: workspaceDocument({ name: "x", "working-directory": "../up" }),
        field: "working directory",
      },
      { body: { data: { type: "runs", attributes: { name: "x" } } }, field: "type" },
      { body: { name: "x" }, field: "data" },
    ];
    for (const { body, field } of cases) {
      const res = await tfe<ErrorsDocument>(`/organizations/${name}/workspaces`, {
        method: "POST",
        token: org.tokens.admin,
        body,
      });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.headers.get("content-type")).toBe(JSONAPI);
      expect(res.body.errors[0]).toMatchObject({ status: "400", code: "BAD_REQUEST" });
      expect(res.body.errors[0]?.detail).toContain(field);
    }
    expect(await snapshotD1()).toEqual(before);
  });

  it("lists the workspaces a caller may see, by name, in numbered pages with TFC's pagination", async () => {
    const org = await seedOrg();
    const name = await orgName(org);
    for (const n of ["a-1", "a-2", "a-3", "b-1", "b-2"]) {
      await createWorkspace(org, { name: n });
    }
    const first = await tfe<ListDocument>(
      `/organizations/${name}/workspaces?page%5Bsize%5D=2&search%5Bname%5D=a-`,
      { token: org.tokens.reader },
    );
    expect(first.status).toBe(200);
    expect(first.body.data.map((w) => w.attributes.name)).toEqual(["a-1", "a-2"]);
    expect(first.body.meta.pagination).toEqual({
      "current-page": 1,
      "page-size": 2,
      "prev-page": null,
      "next-page": 2,
      "total-pages": 2,
      "total-count": 3,
    });
    const second = await tfe<ListDocument>(
      `/organizations/${name}/workspaces?page%5Bsize%5D=2&page%5Bnumber%5D=2&search%5Bname%5D=a-`,
      { token: org.tokens.reader },
    );
    expect(second.body.data.map((w) => w.attributes.name)).toEqual(["a-3"]);
    expect(second.body.meta.pagination).toMatchObject({ "next-page": null, "prev-page": 1 });

    // A person sees only the workspaces their teams have access to.
    const b1 = await tfe<Document>(`/organizations/${name}/workspaces/b-1`, {
      token: org.ownerToken,
    });
    const { user } = await personWithAccess(org, { id: b1.body.data.id }, "read");
    const theirs = await tfe<ListDocument>(`/organizations/${name}/workspaces`, {
      token: user.token,
    });
    expect(theirs.body.data.map((w) => w.attributes.name)).toEqual(["b-1"]);
    expect(theirs.body.meta.pagination["total-count"]).toBe(1);

    // Tags are searched now (tfe-tags.test.ts): none of these workspaces carries one.
    const tags = await tfe<ListDocument>(`/organizations/${name}/workspaces?search%5Btags%5D=app`, {
      token: org.tokens.reader,
    });
    expect(tags.status).toBe(200);
    expect(tags.body.data).toEqual([]);
  });

  it("locks and unlocks through the actions the cloud backend calls, 409 while locked by another, 403 to unlock another's", async () => {
    const org = await seedOrg();
    const ws = await createWorkspace(org);
    const locked = await tfe<Document>(`/workspaces/${ws.id}/actions/lock`, {
      method: "POST",
      token: org.tokens.member,
      body: { reason: "Locked by Terraform" },
    });
    expect(locked.status, JSON.stringify(locked.body)).toBe(200);
    expect(locked.body.data.attributes.locked).toBe(true);
    const taken = await tfe<ErrorsDocument>(`/workspaces/${ws.id}/actions/lock`, {
      method: "POST",
      token: org.tokens.admin,
    });
    expect(taken.status).toBe(409);
    const notHolder = await tfe<ErrorsDocument>(`/workspaces/${ws.id}/actions/unlock`, {
      method: "POST",
      token: org.tokens.admin,
    });
    // Outpost's rule: only the holder unlocks; others force-unlock (admins).
    expect(notHolder.status).toBe(403);
    const unlocked = await tfe<Document>(`/workspaces/${ws.id}/actions/unlock`, {
      method: "POST",
      token: org.tokens.member,
    });
    expect(unlocked.status).toBe(200);
    expect(unlocked.body.data.attributes.locked).toBe(false);

    await tfe(`/workspaces/${ws.id}/actions/lock`, { method: "POST", token: org.tokens.member });
    const forced = await tfe<Document>(`/workspaces/${ws.id}/actions/force-unlock`, {
      method: "POST",
      token: org.tokens.admin,
    });
    expect(forced.status).toBe(200);
    expect(forced.body.data.attributes.locked).toBe(false);
  });

  it("keeps the reason go-tfe sends (jsonapi `data.attributes.reason`) and a bare `reason`", async () => {
    const org = await seedOrg();
    for (const [body, reason] of [
      [
        { data: { type: "", attributes: { reason: "Locked by Terraform" } } },
        "Locked by Terraform",
      ],
      [{ reason: "upgrading providers" }, "upgrading providers"],
      [{ data: { type: "" } }, "locked through the TFE API"],
    ] as const) {
      const ws = await createWorkspace(org);
      const locked = await request(`/api/v2/workspaces/${ws.id}/actions/lock`, {
        method: "POST",
        token: org.tokens.member,
        headers: { "content-type": JSONAPI },
        body: JSON.stringify(body),
      });
      expect(locked.status, await locked.clone().text()).toBe(200);
      const doc = (await locked.json()) as Document;
      expect(doc.data.attributes["locked-reason"]).toBe(reason);
      const read = await tfe<Document>(`/workspaces/${ws.id}`, { token: org.tokens.reader });
      expect(read.body.data.attributes).toMatchObject({ locked: true, "locked-reason": reason });
      // Outpost's own API shows the same reason.
      const own = await requestJson<{ lock: { reason: string } | null }>(
        `/api/v1/workspaces/${ws.id}`,
        { token: org.tokens.reader },
      );
      expect(own.body.lock?.reason).toBe(reason);
    }
  });

  it("refuses a lock body with a reason too long or not a string (400) and stays unlocked", async () => {
    const org = await seedOrg();
    const ws = await createWorkspace(org);
    const before = await snapshotD1();
    for (const body of [
      { data: { type: "", attributes: { reason: "x".repeat(501) } } },
      { data: { type: "", attributes: { reason: 7 } } },
      { reason: "x".repeat(501) },
    ]) {
      const res = await tfe<ErrorsDocument>(`/workspaces/${ws.id}/actions/lock`, {
        method: "POST",
        token: org.tokens.member,
        body,
      });
      expect(res.status, JSON.stringify(res.body)).toBe(400);
      expect(res.body.errors[0]?.detail).toMatch(/\w+ \w+/);
    }
    expect(await snapshotD1()).toEqual(before);
  });

  it("answers 409 to a lock the caller already holds, as Terraform Cloud does, and keeps it", async () => {
    const org = await seedOrg();
    const ws = await createWorkspace(org);
    // Locked by hand through Outpost's API, then a local-mode `terraform apply` by the same token.
    const byHand = await requestJson(`/api/v1/workspaces/${ws.id}/lock`, {
      method: "POST",
      token: org.tokens.member,
      body: { reason: "hands off" },
    });
    expect(byHand.status, JSON.stringify(byHand.body)).toBe(200);
    const before = await snapshotD1();
    for (const token of [org.tokens.member, org.tokens.admin]) {
      const again = await tfe<ErrorsDocument>(`/workspaces/${ws.id}/actions/lock`, {
        method: "POST",
        token,
        body: { data: { type: "", attributes: { reason: "Locked by Terraform" } } },
      });
      expect(again.status).toBe(409);
      expect(again.body.errors[0]?.status).toBe("409");
    }
    expect(await snapshotD1()).toEqual(before);
    const read = await tfe<Document>(`/workspaces/${ws.id}`, { token: org.tokens.reader });
    expect(read.body.data.attributes).toMatchObject({ locked: true, "locked-reason": "hands off" });
    // Taken through the TFE API, a second TFE lock by the same token is refused as well.
    await requestJson(`/api/v1/workspaces/${ws.id}/unlock`, {
      method: "POST",
      token: org.tokens.member,
    });
    const first = await tfe(`/workspaces/${ws.id}/actions/lock`, {
      method: "POST",
      token: org.tokens.member,
    });
    expect(first.status).toBe(200);
    const second = await tfe(`/workspaces/${ws.id}/actions/lock`, {
      method: "POST",
      token: org.tokens.member,
    });
    expect(second.status).toBe(409);
  });

  it("unlocks as go-tfe asks: a JSON:API content type and an empty body (Workspaces.Unlock)", async () => {
    const org = await seedOrg();
    const ws = await createWorkspace(org);
    // go-tfe's Lock body: WorkspaceLockOptions marshalled by jsonapi, without a primary type.
    const locked = await request(`/api/v2/workspaces/${ws.id}/actions/lock`, {
      method: "POST",
      token: org.tokens.member,
      headers: { "content-type": "application/vnd.api+json" },
      body: JSON.stringify({ data: { type: "", attributes: { reason: "Locked by Terraform" } } }),
    });
    expect(locked.status).toBe(200);
    for (const action of ["unlock", "force-unlock"]) {
      if (action === "force-unlock") {
        await tfe(`/workspaces/${ws.id}/actions/lock`, {
          method: "POST",
          token: org.tokens.member,
        });
      }
      const res = await request(`/api/v2/workspaces/${ws.id}/actions/${action}`, {
        method: "POST",
        token: action === "unlock" ? org.tokens.member : org.tokens.admin,
        headers: { "content-type": "application/vnd.api+json", accept: "application/vnd.api+json" },
      });
      expect(res.status, await res.clone().text()).toBe(200);
      const doc = (await res.json()) as Document;
      expect(doc.data.attributes.locked).toBe(false);
    }
  });
});

const json = { "content-type": JSONAPI, accept: JSONAPI };

describeAuth("POST /api/v2/organizations/{name}/workspaces", {
  target: async (org) => ({
    method: "POST",
    path: `/api/v2/organizations/${await orgName(org)}/workspaces`,
    body: JSON.stringify(workspaceDocument({ name: "from-matrix" })),
    headers: json,
  }),
  role: "admin",
});

describeAuth("GET /api/v2/organizations/{name}/workspaces", {
  target: async (org) => ({
    method: "GET",
    path: `/api/v2/organizations/${await orgName(org)}/workspaces`,
  }),
  role: "reader",
});

const named = async (org: Parameters<typeof createWorkspace>[0]) => {
  const ws = await createWorkspace(org);
  return { ws, path: `/api/v2/organizations/${await orgName(org)}/workspaces/${ws.name}` };
};

for (const [method, level, status] of [
  ["GET", "read", 200],
  ["PATCH", "admin", 200],
  ["DELETE", "admin", 204],
] as const) {
  const body =
    method === "PATCH" ? JSON.stringify(workspaceDocument({ "auto-apply": true })) : undefined;
  describeAuth(`${method} /api/v2/organizations/{name}/workspaces/{name}`, {
    target: async (org) => ({ method, path: (await named(org)).path, body, headers: json }),
    role: level === "read" ? "reader" : "admin",
  });
  describeAccess(`${method} /api/v2/workspaces/{id}`, {
    target: async (org) => {
      const ws = await createWorkspace(org);
      return {
        method,
        path: `/api/v2/workspaces/${ws.id}`,
        body,
        headers: json,
        workspaceId: ws.id,
      };
    },
    level,
    allowedStatus: status,
  });
}

for (const [action, level] of [
  ["lock", "write"],
  ["unlock", "write"],
  ["force-unlock", "admin"],
] as const) {
  describeAuth(`POST /api/v2/workspaces/{id}/actions/${action}`, {
    target: async (org) => {
      const ws = await createWorkspace(org);
      return { method: "POST", path: `/api/v2/workspaces/${ws.id}/actions/${action}` };
    },
    role: level === "write" ? "member" : "admin",
  });
  describeAccess(`POST /api/v2/workspaces/{id}/actions/${action}`, {
    target: async (org) => {
      const ws = await createWorkspace(org);
      return {
        method: "POST",
        path: `/api/v2/workspaces/${ws.id}/actions/${action}`,
        workspaceId: ws.id,
      };
    },
    level,
    allowedStatus: 200,
  });
}
