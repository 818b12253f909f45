/**
 * Workspace tags and the project relationship through the TFE API, as the `cloud` block uses
 * them (`internal/cloud/backend.go`: `Workspaces.List` with `search[tags]`, `Workspaces.Create`
 * with `relationships.tags`, `Workspaces.AddTags` when the workspace lacks one) and as the `tfe`
 * provider sets `tag_names` and `project_id`; then the refusals and the auth matrix.
 */
import { describe, expect, it } from "vitest";
import { requestJson } from "./helpers/api.ts";
import { describeAccess, describeAuth } from "./helpers/auth-matrix.ts";
import { snapshotD1 } from "./helpers/d1-snapshot.ts";
import { seedOrg, type TestOrg } from "./helpers/fixtures.ts";
import { personWithAccess } from "./helpers/people.ts";
import { createProject } from "./helpers/projects.ts";
import {
  type Document,
  type ErrorsDocument,
  JSONAPI,
  type ListDocument,
  orgName,
  tfe,
  workspaceDocument,
} from "./helpers/tfe.ts";
import { createWorkspace } from "./helpers/workspaces.ts";

const json = { "content-type": JSONAPI };
const tagsOf = (names: string[]) => ({
  data: names.map((name) => ({ type: "tags", attributes: { name } })),
});

/** A workspace made as `terraform init` makes one for a `cloud` block with tags. */
async function createTagged(org: TestOrg, name: string, tags: string[]) {
  const res = await tfe<Document>(`/organizations/${await orgName(org)}/workspaces`, {
    method: "POST",
    token: org.ownerToken,
    body: workspaceDocument({ name }, { tags: tagsOf(tags) }),
  });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.data;
}

async function listNames(org: TestOrg, query: string, token = org.ownerToken) {
  const res = await tfe<ListDocument>(`/organizations/${await orgName(org)}/workspaces?${query}`, {
    token,
  });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.data.map((w) => w.attributes.name);
}

describe("workspace tags", () => {
  it("creates workspaces with tags and lists those carrying every tag searched, by name too", async () => {
    const org = await seedOrg();
    const app = await createTagged(org, "app-prod", ["app", "Prod"]);
    expect(app.attributes["tag-names"]).toEqual(["app", "prod"]);
    await createTagged(org, "app-dev", ["app", "dev"]);
    await createTagged(org, "db-prod", ["db", "prod"]);
    const byAttribute = await tfe<Document>(`/organizations/${await orgName(org)}/workspaces`, {
      method: "POST",
      token: org.ownerToken,
      body: workspaceDocument({ name: "legacy", "tag-names": ["app", "team:core"] }),
    });
    expect(byAttribute.body.data.attributes["tag-names"]).toEqual(["app", "team:core"]);

    expect(await listNames(org, "search%5Btags%5D=app")).toEqual(["app-dev", "app-prod", "legacy"]);
    expect(await listNames(org, "search%5Btags%5D=app,prod")).toEqual(["app-prod"]);
    expect(await listNames(org, "search%5Btags%5D=prod&search%5Bname%5D=db")).toEqual(["db-prod"]);
    expect(await listNames(org, "search%5Btags%5D=app,nope")).toEqual([]);
    const page = await tfe<ListDocument>(
      `/organizations/${await orgName(org)}/workspaces?search%5Btags%5D=app&page%5Bsize%5D=2`,
      { token: org.ownerToken },
    );
    expect(page.body.meta.pagination).toMatchObject({ "total-count": 3, "total-pages": 2 });
    expect(page.body.data.map((w) => w.attributes["tag-names"])).toEqual([
      ["app", "dev"],
      ["app", "prod"],
    ]);
  });

  it("adds tags by name and id, lists them, removes them, as terraform init and the provider do", async () => {
    const org = await seedOrg();
    const ws = await createWorkspace(org);
    const other = await createTagged(org, "other", ["shared"]);
    const path = `/workspaces/${ws.id}/relationships/tags`;
    const add = await tfe<null>(path, {
      method: "POST",
      token: org.ownerToken,
      body: tagsOf(["app", "env:prod"]),
    });
    expect(add.status).toBe(204);
    const shared = await tfe<ListDocument>(`/workspaces/${other.id}/relationships/tags`, {
      token: org.ownerToken,
    });
    const sharedId = shared.body.data[0]?.id ?? "";
    expect(sharedId).toMatch(/^tag_/);
    const byId = await tfe<null>(path, {
      method: "POST",
      token: org.ownerToken,
      body: { data: [{ type: "tags", id: sharedId }] },
    });
    expect(byId.status).toBe(204);
    const listed = await tfe<ListDocument>(path, { token: org.tokens.reader });
    expect(listed.body.data.map((t) => [t.type, t.attributes.name])).toEqual([
      ["tags", "app"],
      ["tags", "env:prod"],
      ["tags", "shared"],
    ]);
    const orgTags = await tfe<ListDocument>(`/organizations/${await orgName(org)}/tags`, {
      token: org.tokens.reader,
    });
    expect(orgTags.body.data.find((t) => t.attributes.name === "shared")?.attributes).toEqual({
      name: "shared",
      "instance-count": 2,
    });

    const removed = await tfe<null>(path, {
      method: "DELETE",
      token: org.ownerToken,
      body: tagsOf(["app", "not-there"]),
    });
    expect(removed.status).toBe(204);
    const read = await tfe<Document>(`/workspaces/${ws.id}`, { token: org.ownerToken });
    expect(read.body.data.attributes["tag-names"]).toEqual(["env:prod", "shared"]);
    // PATCH with tag-names replaces the set (Outpost's own use; go-tfe adds and removes).
    const patched = await tfe<Document>(`/workspaces/${ws.id}`, {
      method: "PATCH",
      token: org.ownerToken,
      body: workspaceDocument({ "tag-names": ["solo"] }),
    });
    expect(patched.body.data.attributes["tag-names"]).toEqual(["solo"]);
  });

  it("lists only the tags of workspaces the caller may read", async () => {
    const org = await seedOrg();
    const seen = await createTagged(org, "seen", ["visible"]);
    await createTagged(org, "hidden", ["secret-project"]);
    const { user } = await personWithAccess(org, { id: seen.id }, "read");
    const res = await tfe<ListDocument>(`/organizations/${await orgName(org)}/tags`, {
      token: user.token,
    });
    expect(res.body.data.map((t) => t.attributes.name)).toEqual(["visible"]);
    expect(await listNames(org, "search%5Btags%5D=secret-project", user.token)).toEqual([]);
  });

  it("refuses bad tags, unknown or foreign tag ids and too many tags, changing nothing", async () => {
    const org = await seedOrg();
    const other = await seedOrg();
    const foreign = await createTagged(other, "foreign", ["theirs"]);
    const foreignTags = await tfe<ListDocument>(`/workspaces/${foreign.id}/relationships/tags`, {
      token: other.ownerToken,
    });
    const foreignId = foreignTags.body.data[0]?.id ?? "";
    const ws = await createWorkspace(org);
    const name = await orgName(org);
    const path = `/workspaces/${ws.id}/relationships/tags`;
    const many = Array.from({ length: 51 }, (_, i) => `t${i}`);
    const before = await snapshotD1();
    const refusals: [string, string, unknown][] = [
      ["POST", path, tagsOf(["bad tag"])],
      ["POST", path, tagsOf(["-dash"])],
      ["POST", path, tagsOf(["x".repeat(256)])],
      ["POST", path, { data: [{ type: "tags", id: foreignId }] }],
      ["POST", path, { data: [{ type: "tags" }] }],
      ["POST", path, { data: [] }],
      ["POST", path, { data: [{ type: "teams", attributes: { name: "a" } }] }],
      ["DELETE", path, tagsOf(["bad tag"])],
      [
        "POST",
        `/organizations/${name}/workspaces`,
        workspaceDocument({ name: "tagged", "tag-names": ["ok", "not ok"] }),
      ],
      [
        "POST",
        `/organizations/${name}/workspaces`,
        workspaceDocument(
          { name: "too-many", "tag-names": many.slice(0, 30) },
          {
            tags: tagsOf(many.slice(30)),
          },
        ),
      ],
      [
        "POST",
        `/organizations/${name}/workspaces`,
        workspaceDocument(
          { name: "foreign-id" },
          { tags: { data: [{ type: "tags", id: foreignId }] } },
        ),
      ],
      ["PATCH", `/workspaces/${ws.id}`, workspaceDocument({ "tag-names": many })],
    ];
    for (const [method, target, body] of refusals) {
      const res = await tfe<ErrorsDocument>(target, { method, token: org.ownerToken, body });
      expect(res.status, `${method} ${target} ${JSON.stringify(body).slice(0, 80)}`).toBe(400);
      expect(res.body.errors[0]?.detail).toEqual(expect.any(String));
    }
    const search = await tfe<ErrorsDocument>(
      `/organizations/${name}/workspaces?search%5Btags%5D=a%20b`,
      { token: org.ownerToken },
    );
    expect(search.status).toBe(400);
    expect(search.body.errors[0]?.detail).toContain("search[tags]");
    expect(await snapshotD1()).toEqual(before);
  });
});

describe("tags in Outpost's own API (/api/v1/workspaces)", () => {
  type V1 = { id: string; name: string; tags?: string[] };

  it("sets tags on create, answers them on read and list, and replaces them on update", async () => {
    const org = await seedOrg();
    const ws = await createWorkspace(org, { tags: ["App", "env:prod", "app"] });
    expect(ws.tags).toEqual(["app", "env:prod"]);
    const read = await requestJson<V1>(`/api/v1/workspaces/${ws.id}`, { token: org.tokens.reader });
    expect(read.body.tags).toEqual(["app", "env:prod"]);
    const list = await requestJson<{ workspaces: V1[] }>("/api/v1/workspaces", {
      token: org.tokens.reader,
    });
    expect(list.body.workspaces.find((w) => w.id === ws.id)?.tags).toEqual(["app", "env:prod"]);
    const updated = await requestJson<V1>(`/api/v1/workspaces/${ws.id}`, {
      method: "PATCH",
      token: org.ownerToken,
      body: { tags: ["solo"] },
    });
    expect(updated.status).toBe(200);
    expect(updated.body.tags).toEqual(["solo"]);
    // The TFE API sees the same tags.
    expect(await listNames(org, "search%5Btags%5D=solo")).toEqual([ws.name]);
    const untouched = await requestJson<V1>(`/api/v1/workspaces/${ws.id}`, {
      method: "PATCH",
      token: org.ownerToken,
      body: { description: "kept tags" },
    });
    expect(untouched.body.tags).toEqual(["solo"]);
  });

  it("refuses invalid tags, changing nothing", async () => {
    const org = await seedOrg();
    const ws = await createWorkspace(org, { tags: ["keep"] });
    const before = await snapshotD1();
    for (const tags of [
      ["has space"],
      ["x".repeat(256)],
      Array.from({ length: 51 }, (_, i) => `t${i}`),
      "app",
    ]) {
      const created = await requestJson("/api/v1/workspaces", {
        method: "POST",
        token: org.ownerToken,
        body: { name: "refused", engineVersion: "1.9.5", tags },
      });
      expect(created.status).toBe(400);
      const updated = await requestJson(`/api/v1/workspaces/${ws.id}`, {
        method: "PATCH",
        token: org.ownerToken,
        body: { tags },
      });
      expect(updated.status).toBe(400);
    }
    expect(await snapshotD1()).toEqual(before);
  });
});

describe("the project relationship", () => {
  it("creates a workspace in a project, reads it, moves it, and filters the list by project", async () => {
    const org = await seedOrg();
    const name = await orgName(org);
    const platform = await createProject(org, "platform");
    const apps = await createProject(org, "apps");
    const created = await tfe<Document>(`/organizations/${name}/workspaces`, {
      method: "POST",
      token: org.ownerToken,
      body: workspaceDocument(
        { name: "in-project" },
        { project: { data: { type: "projects", id: platform.id } } },
      ),
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body.data.relationships?.project).toEqual({
      data: { id: platform.id, type: "projects" },
    });
    await createWorkspace(org);
    const inPlatform = await listNames(org, `filter%5Bproject%5D%5Bid%5D=${platform.id}`);
    expect(inPlatform).toEqual(["in-project"]);
    const moved = await tfe<Document>(`/workspaces/${created.body.data.id}`, {
      method: "PATCH",
      token: org.ownerToken,
      body: workspaceDocument({}, { project: { data: { type: "projects", id: apps.id } } }),
    });
    expect(moved.status, JSON.stringify(moved.body)).toBe(200);
    expect(moved.body.data.relationships?.project?.data?.id).toBe(apps.id);
  });

  it("refuses another organization's project, changing nothing", async () => {
    const org = await seedOrg();
    const foreign = await createProject(await seedOrg(), "theirs");
    const ws = await createWorkspace(org);
    const relationship = { project: { data: { type: "projects", id: foreign.id } } };
    const before = await snapshotD1();
    const created = await tfe<ErrorsDocument>(`/organizations/${await orgName(org)}/workspaces`, {
      method: "POST",
      token: org.ownerToken,
      body: workspaceDocument({ name: "nope" }, relationship),
    });
    expect(created.status).toBe(400);
    expect(created.body.errors[0]?.detail).toContain("not found in this organization");
    const moved = await tfe<ErrorsDocument>(`/workspaces/${ws.id}`, {
      method: "PATCH",
      token: org.ownerToken,
      body: workspaceDocument({}, relationship),
    });
    expect(moved.status).toBe(400);
    expect(await snapshotD1()).toEqual(before);
  });
});

const tagPath = (id: string) => `/api/v2/workspaces/${id}/relationships/tags`;
for (const [method, level, status] of [
  ["GET", "read", 200],
  ["POST", "admin", 204],
  ["DELETE", "admin", 204],
] as const) {
  const body = method === "GET" ? undefined : JSON.stringify(tagsOf(["matrix"]));
  describeAuth(`${method} /api/v2/workspaces/{id}/relationships/tags`, {
    target: async (org) => ({
      method,
      path: tagPath((await createWorkspace(org)).id),
      body,
      headers: json,
    }),
    role: level === "read" ? "reader" : "admin",
  });
  describeAccess(`${method} /api/v2/workspaces/{id}/relationships/tags`, {
    target: async (org) => {
      const ws = await createWorkspace(org);
      return { method, path: tagPath(ws.id), body, headers: json, workspaceId: ws.id };
    },
    level,
    allowedStatus: status,
  });
}

describeAuth("GET /api/v2/organizations/{name}/tags", {
  target: async (org) => ({
    method: "GET",
    path: `/api/v2/organizations/${await orgName(org)}/tags`,
  }),
  role: "reader",
});
