/**
 * Projects through the TFE API, as `terraform init` uses them for the `cloud` block's `project`
 * (`internal/cloud/backend.go`: `Projects.List` with `filter[names]`, `Projects.Create` when
 * missing) and as the `tfe_project` resource manages them; then refusals and the auth matrix.
 */
import { describe, expect, it } from "vitest";
import { describeAuth, describeProjectAccess } from "./helpers/auth-matrix.ts";
import { snapshotD1 } from "./helpers/d1-snapshot.ts";
import { seedOrg } from "./helpers/fixtures.ts";
import { personWithProjectAccess } from "./helpers/people.ts";
import { createProject } from "./helpers/projects.ts";
import {
  type Document,
  type ErrorsDocument,
  JSONAPI,
  type ListDocument,
  orgName,
  tfe,
} from "./helpers/tfe.ts";
import { createWorkspace } from "./helpers/workspaces.ts";

const json = { "content-type": JSONAPI };
const projectDocument = (attributes: Record<string, unknown>) => ({
  data: { type: "projects", attributes },
});

describe("projects", () => {
  it("finds by name, creates, reads, updates and deletes a project with TFC's attributes", async () => {
    const org = await seedOrg();
    const name = await orgName(org);
    const missing = await tfe<ListDocument>(
      `/organizations/${name}/projects?filter%5Bnames%5D=platform`,
      { token: org.ownerToken },
    );
    expect(missing.body.data).toEqual([]);
    const created = await tfe<Document>(`/organizations/${name}/projects`, {
      method: "POST",
      token: org.ownerToken,
      body: projectDocument({ name: "platform", description: "shared infrastructure" }),
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.headers.get("content-type")).toBe(JSONAPI);
    const id = created.body.data.id;
    expect(created.body.data).toMatchObject({
      type: "projects",
      attributes: {
        name: "platform",
        description: "shared infrastructure",
        "workspace-count": 0,
        permissions: { "can-read": true, "can-update": true, "can-destroy": true },
      },
      relationships: { organization: { data: { id: name, type: "organizations" } } },
    });
    const found = await tfe<ListDocument>(
      `/organizations/${name}/projects?filter%5Bnames%5D=platform,other`,
      { token: org.tokens.reader },
    );
    expect(found.body.data.map((p) => p.id)).toEqual([id]);
    expect(found.body.data[0]?.attributes.permissions).toMatchObject({ "can-update": false });
    const all = await tfe<ListDocument>(`/organizations/${name}/projects?q=PLAT`, {
      token: org.tokens.reader,
    });
    expect(all.body.data.map((p) => p.attributes.name)).toEqual(["platform"]);

    const renamed = await tfe<Document>(`/projects/${id}`, {
      method: "PATCH",
      token: org.ownerToken,
      body: projectDocument({ name: "platform-core" }),
    });
    expect(renamed.body.data.attributes).toMatchObject({
      name: "platform-core",
      description: "shared infrastructure",
    });
    const ws = await createWorkspace(org, { projectId: id });
    const read = await tfe<Document>(`/projects/${id}`, { token: org.tokens.reader });
    expect(read.body.data.attributes["workspace-count"]).toBe(1);

    const held = await tfe<ErrorsDocument>(`/projects/${id}`, {
      method: "DELETE",
      token: org.ownerToken,
    });
    expect(held.status).toBe(409);
    expect(held.body.errors[0]?.detail).toContain("still holds 1 workspace");
    await tfe<null>(`/workspaces/${ws.id}`, { method: "DELETE", token: org.ownerToken });
    const deleted = await tfe<null>(`/projects/${id}`, {
      method: "DELETE",
      token: org.ownerToken,
    });
    expect(deleted.status).toBe(204);
    expect((await tfe(`/projects/${id}`, { token: org.ownerToken })).status).toBe(404);
  });

  it("lists only the projects a person may see", async () => {
    const org = await seedOrg();
    const seen = await createProject(org, "seen");
    await createProject(org, "hidden");
    const { user } = await personWithProjectAccess(org, { id: seen.id }, "read");
    const res = await tfe<ListDocument>(`/organizations/${await orgName(org)}/projects`, {
      token: user.token,
    });
    expect(res.body.data.map((p) => p.attributes.name)).toEqual(["seen"]);
  });

  it("refuses invalid documents, a taken name and the default project's deletion, changing nothing", async () => {
    const org = await seedOrg();
    const name = await orgName(org);
    const taken = await createProject(org, "taken");
    const other = await createProject(org, "other");
    const projects = await tfe<ListDocument>(`/organizations/${name}/projects`, {
      token: org.ownerToken,
    });
    const defaultId =
      projects.body.data.find((p) => p.attributes.name === "Default Project")?.id ?? "";
    const before = await snapshotD1();
    const refusals: [string, string, unknown, number][] = [
      ["POST", `/organizations/${name}/projects`, projectDocument({}), 400],
      ["POST", `/organizations/${name}/projects`, projectDocument({ name: "bad/name" }), 400],
      ["POST", `/organizations/${name}/projects`, { data: { type: "workspaces" } }, 400],
      ["POST", `/organizations/${name}/projects`, projectDocument({ name: "taken" }), 409],
      ["PATCH", `/projects/${other.id}`, projectDocument({ name: "taken" }), 409],
      ["PATCH", `/projects/${other.id}`, projectDocument({ description: "x".repeat(1001) }), 400],
      ["DELETE", `/projects/${defaultId}`, undefined, 409],
    ];
    for (const [method, path, body, status] of refusals) {
      const res = await tfe<ErrorsDocument>(path, { method, token: org.ownerToken, body });
      expect(res.status, `${method} ${path}`).toBe(status);
      expect(res.body.errors[0]?.detail).toEqual(expect.any(String));
    }
    expect(taken.id).toMatch(/^prj_/);
    expect(await snapshotD1()).toEqual(before);
  });
});

describeAuth("GET /api/v2/organizations/{name}/projects", {
  target: async (org) => ({
    method: "GET",
    path: `/api/v2/organizations/${await orgName(org)}/projects`,
  }),
  role: "reader",
});

describeAuth("POST /api/v2/organizations/{name}/projects", {
  target: async (org) => ({
    method: "POST",
    path: `/api/v2/organizations/${await orgName(org)}/projects`,
    body: JSON.stringify(projectDocument({ name: "from-matrix" })),
    headers: json,
  }),
  role: "admin",
});

for (const [method, level, status] of [
  ["GET", "read", 200],
  ["PATCH", "admin", 200],
  ["DELETE", "admin", 204],
] as const) {
  const body =
    method === "PATCH" ? JSON.stringify(projectDocument({ description: "matrix" })) : undefined;
  describeAuth(`${method} /api/v2/projects/{id}`, {
    target: async (org) => ({
      method,
      path: `/api/v2/projects/${(await createProject(org)).id}`,
      body,
      headers: json,
    }),
    role: level === "read" ? "reader" : "admin",
  });
  describeProjectAccess(`${method} /api/v2/projects/{id}`, {
    target: async (org) => {
      const project = await createProject(org);
      return {
        method,
        path: `/api/v2/projects/${project.id}`,
        body,
        headers: json,
        projectId: project.id,
      };
    },
    level,
    allowedStatus: status,
  });
}
