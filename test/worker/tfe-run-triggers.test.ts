/**
 * Run triggers through the TFE API, as go-tfe's `RunTriggers` sends them (the
 * `tfe_run_trigger` resource): create from a source, list a target's inbound triggers, read and
 * delete. Refusals change nothing; every route passes the auth and team-access matrices.
 */
import { describe, expect, it } from "vitest";
import { describeAccess, describeAuth } from "./helpers/auth-matrix.ts";
import { snapshotD1 } from "./helpers/d1-snapshot.ts";
import { seedOrg, type TestOrg } from "./helpers/fixtures.ts";
import { grant, personWithAccess } from "./helpers/people.ts";
import {
  type Document,
  type ErrorsDocument,
  JSONAPI,
  type ListDocument,
  tfe,
} from "./helpers/tfe.ts";
import { createWorkspace } from "./helpers/workspaces.ts";

const json = { "content-type": JSONAPI };
const triggerDocument = (sourceId: string) => ({
  data: {
    type: "run-triggers",
    relationships: { sourceable: { data: { type: "workspaces", id: sourceId } } },
  },
});
const inbound = "filter%5Brun-trigger%5D%5Btype%5D=inbound";

async function createTrigger(org: TestOrg) {
  const [source, target] = [await createWorkspace(org), await createWorkspace(org)];
  const res = await tfe<Document>(`/workspaces/${target.id}/run-triggers`, {
    method: "POST",
    token: org.ownerToken,
    body: triggerDocument(source.id),
  });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return { source, target, trigger: res.body.data };
}

describe("run triggers", () => {
  it("creates, lists inbound, reads and deletes a trigger with TFC's attributes", async () => {
    const org = await seedOrg();
    const { source, target, trigger } = await createTrigger(org);
    expect(trigger).toMatchObject({
      type: "run-triggers",
      attributes: { "sourceable-name": source.name, "workspace-name": target.name },
      relationships: {
        sourceable: { data: { id: source.id, type: "workspaces" } },
        workspace: { data: { id: target.id, type: "workspaces" } },
      },
    });
    const listed = await tfe<ListDocument>(`/workspaces/${target.id}/run-triggers?${inbound}`, {
      token: org.tokens.reader,
    });
    expect(listed.body.data.map((t) => t.id)).toEqual([trigger.id]);
    const read = await tfe<Document>(`/run-triggers/${trigger.id}`, { token: org.tokens.reader });
    expect(read.body.data.attributes["sourceable-name"]).toBe(source.name);
    const deleted = await tfe<null>(`/run-triggers/${trigger.id}`, {
      method: "DELETE",
      token: org.ownerToken,
    });
    expect(deleted.status).toBe(204);
    expect((await tfe(`/run-triggers/${trigger.id}`, { token: org.ownerToken })).status).toBe(404);
  });

  it("refuses a duplicate, a cycle, another organization's source and outbound lists, changing nothing", async () => {
    const org = await seedOrg();
    const { source, target } = await createTrigger(org);
    const foreign = await createWorkspace(await seedOrg());
    const before = await snapshotD1();
    const refusals: [string, string, unknown, number][] = [
      ["POST", `/workspaces/${target.id}/run-triggers`, triggerDocument(source.id), 409],
      ["POST", `/workspaces/${source.id}/run-triggers`, triggerDocument(target.id), 409],
      ["POST", `/workspaces/${target.id}/run-triggers`, triggerDocument(foreign.id), 404],
      ["POST", `/workspaces/${target.id}/run-triggers`, { data: { type: "run-triggers" } }, 400],
      [
        "GET",
        `/workspaces/${source.id}/run-triggers?filter%5Brun-trigger%5D%5Btype%5D=outbound`,
        undefined,
        400,
      ],
      ["GET", `/workspaces/${source.id}/run-triggers`, undefined, 400],
    ];
    for (const [method, path, body, status] of refusals) {
      const res = await tfe<ErrorsDocument>(path, { method, token: org.ownerToken, body });
      expect(res.status, `${method} ${path} ${JSON.stringify(res.body)}`).toBe(status);
    }
    expect(await snapshotD1()).toEqual(before);
  });
});

describe("run triggers: team access", () => {
  it("needs admin on the target and read on the source, for a person and a team token", async () => {
    const org = await seedOrg();
    const [source, target] = [await createWorkspace(org), await createWorkspace(org)];
    const post = (token: string) =>
      tfe<ErrorsDocument>(`/workspaces/${target.id}/run-triggers`, {
        method: "POST",
        token,
        body: triggerDocument(source.id),
      });
    const writer = await personWithAccess(org, { id: target.id }, "write");
    const admin = await personWithAccess(org, { id: target.id }, "admin");
    const before = await snapshotD1();
    for (const token of [writer.user.token, writer.team.token]) {
      expect((await post(token)).status).toBe(403);
    }
    // Admin of the target, but the source is not theirs to see: not found.
    for (const token of [admin.user.token, admin.team.token]) {
      expect((await post(token)).status).toBe(404);
    }
    expect(await snapshotD1()).toEqual(before);
    await grant(org, source, admin.team, "read");
    expect((await post(admin.team.token)).status).toBe(201);
  });
});

describeAuth("POST /api/v2/workspaces/{id}/run-triggers", {
  target: async (org) => {
    const [source, target] = [await createWorkspace(org), await createWorkspace(org)];
    return {
      method: "POST",
      path: `/api/v2/workspaces/${target.id}/run-triggers`,
      body: JSON.stringify(triggerDocument(source.id)),
      headers: json,
    };
  },
  role: "admin",
});

describeAuth("GET /api/v2/workspaces/{id}/run-triggers", {
  target: async (org) => ({
    method: "GET",
    path: `/api/v2/workspaces/${(await createWorkspace(org)).id}/run-triggers?${inbound}`,
  }),
  role: "reader",
});

for (const [method, level, status] of [
  ["GET", "read", 200],
  ["DELETE", "admin", 204],
] as const) {
  const target = async (org: TestOrg) => {
    const { target: ws, trigger } = await createTrigger(org);
    return { method, path: `/api/v2/run-triggers/${trigger.id}`, workspaceId: ws.id };
  };
  describeAuth(`${method} /api/v2/run-triggers/{id}`, {
    target,
    role: level === "read" ? "reader" : "admin",
  });
  describeAccess(`${method} /api/v2/run-triggers/{id}`, { target, level, allowedStatus: status });
}
