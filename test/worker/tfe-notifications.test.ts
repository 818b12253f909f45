/**
 * Notification configurations through the TFE API, as go-tfe's `NotificationConfigurations`
 * sends them (the `tfe_notification_configuration` resource): the same configurations, secrets
 * and deliveries as /api/v1. Refusals change nothing; every route passes the auth matrices.
 */
import { describe, expect, it } from "vitest";
import { describeAccess, describeAuth } from "./helpers/auth-matrix.ts";
import { snapshotD1 } from "./helpers/d1-snapshot.ts";
import { seedOrg, type TestOrg } from "./helpers/fixtures.ts";
import {
  type Document,
  type ErrorsDocument,
  JSONAPI,
  type ListDocument,
  tfe,
} from "./helpers/tfe.ts";
import { createWorkspace } from "./helpers/workspaces.ts";

const json = { "content-type": JSONAPI };
const URL_OK = "https://hooks.example.com/outpost";
const ncDocument = (attributes: Record<string, unknown>) => ({
  data: { type: "notification-configurations", attributes },
});

async function createConfig(org: TestOrg, workspaceId: string) {
  const res = await tfe<Document>(`/workspaces/${workspaceId}/notification-configurations`, {
    method: "POST",
    token: org.ownerToken,
    body: ncDocument({
      name: "ops",
      "destination-type": "slack",
      url: URL_OK,
      enabled: true,
      triggers: ["run:errored", "run:needs_attention"],
    }),
  });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res;
}

describe("notification configurations", () => {
  it("creates one (its secret once), lists, reads, updates and deletes it", async () => {
    const org = await seedOrg();
    const ws = await createWorkspace(org);
    const created = await createConfig(org, ws.id);
    const id = created.body.data.id;
    expect(created.body.data).toMatchObject({
      type: "notification-configurations",
      attributes: {
        name: "ops",
        "destination-type": "slack",
        url: URL_OK,
        enabled: true,
        triggers: ["run:errored", "run:needs_attention"],
      },
      relationships: { subscribable: { data: { id: ws.id, type: "workspaces" } } },
    });
    expect(created.body.data.attributes.token).toMatch(/^whsec_/);
    const listed = await tfe<ListDocument>(`/workspaces/${ws.id}/notification-configurations`, {
      token: org.ownerToken,
    });
    expect(listed.body.data.map((n) => [n.id, n.attributes.token])).toEqual([[id, null]]);
    const updated = await tfe<Document>(`/notification-configurations/${id}`, {
      method: "PATCH",
      token: org.ownerToken,
      body: ncDocument({ enabled: false, triggers: ["run:completed"] }),
    });
    expect(updated.body.data.attributes).toMatchObject({
      enabled: false,
      triggers: ["run:completed"],
      name: "ops",
    });
    const read = await tfe<Document>(`/notification-configurations/${id}`, {
      token: org.ownerToken,
    });
    expect(read.body.data.attributes.enabled).toBe(false);
    const deleted = await tfe<null>(`/notification-configurations/${id}`, {
      method: "DELETE",
      token: org.ownerToken,
    });
    expect(deleted.status).toBe(204);
    expect(
      (await tfe(`/notification-configurations/${id}`, { token: org.ownerToken })).status,
    ).toBe(404);
  });

  it("refuses email, a chosen token, bad triggers and URLs, and another org's ids, changing nothing", async () => {
    const org = await seedOrg();
    const ws = await createWorkspace(org);
    const other = await seedOrg();
    const foreign = (await createConfig(other, (await createWorkspace(other)).id)).body.data.id;
    const path = `/workspaces/${ws.id}/notification-configurations`;
    const before = await snapshotD1();
    const refusals: [string, string, unknown, number][] = [
      ["POST", path, ncDocument({ name: "a", url: URL_OK, "destination-type": "email" }), 400],
      ["POST", path, ncDocument({ name: "a", url: URL_OK, token: "mine" }), 400],
      ["POST", path, ncDocument({ name: "a", url: URL_OK, triggers: ["run:exploded"] }), 400],
      ["POST", path, ncDocument({ name: "a", url: "ftp://example.com" }), 400],
      ["POST", path, ncDocument({ url: URL_OK }), 400],
      ["GET", `/notification-configurations/${foreign}`, undefined, 404],
      ["PATCH", `/notification-configurations/${foreign}`, ncDocument({ enabled: false }), 404],
      ["DELETE", `/notification-configurations/${foreign}`, undefined, 404],
    ];
    for (const [method, target, body, status] of refusals) {
      const res = await tfe<ErrorsDocument>(target, { method, token: org.ownerToken, body });
      expect(res.status, `${method} ${target} ${JSON.stringify(res.body)}`).toBe(status);
    }
    expect(await snapshotD1()).toEqual(before);
  });
});

for (const method of ["GET", "POST"] as const) {
  const body =
    method === "POST" ? JSON.stringify(ncDocument({ name: "matrix", url: URL_OK })) : undefined;
  const target = async (org: TestOrg) => {
    const ws = await createWorkspace(org);
    return {
      method,
      path: `/api/v2/workspaces/${ws.id}/notification-configurations`,
      body,
      headers: json,
      workspaceId: ws.id,
    };
  };
  describeAuth(`${method} /api/v2/workspaces/{id}/notification-configurations`, {
    target,
    role: "admin",
  });
  describeAccess(`${method} /api/v2/workspaces/{id}/notification-configurations`, {
    target,
    level: "admin",
    allowedStatus: method === "POST" ? 201 : 200,
  });
}

for (const [method, status] of [
  ["GET", 200],
  ["PATCH", 200],
  ["DELETE", 204],
] as const) {
  const target = async (org: TestOrg) => {
    const ws = await createWorkspace(org);
    const id = (await createConfig(org, ws.id)).body.data.id;
    return {
      method,
      path: `/api/v2/notification-configurations/${id}`,
      body: method === "PATCH" ? JSON.stringify(ncDocument({ enabled: false })) : undefined,
      headers: json,
      workspaceId: ws.id,
    };
  };
  describeAuth(`${method} /api/v2/notification-configurations/{id}`, { target, role: "admin" });
  describeAccess(`${method} /api/v2/notification-configurations/{id}`, {
    target,
    level: "admin",
    allowedStatus: status,
  });
}
