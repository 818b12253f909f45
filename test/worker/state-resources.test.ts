/**
 * `GET /api/v1/workspaces/{workspaceId}/state-versions/{stateVersionId}/resources`: the resource
 * instances a version holds, by address, for every role that reads the state's metadata.
 */
import { describe, expect, it } from "vitest";
import { type ErrorBody, requestJson } from "./helpers/api.ts";
import { describeAccess, describeAuth } from "./helpers/auth-matrix.ts";
import { seedOrg, type TestOrg } from "./helpers/fixtures.ts";
import { BackendClient, seedWorkspace, stateJson } from "./helpers/state-fixtures.ts";

type Resources = {
  stateVersionId: string;
  serial: number;
  resources: { address: string; mode: string; type: string; module: string | null }[];
};

const RESOURCES = [
  {
    mode: "managed",
    type: "terraform_data",
    name: "hello",
    provider: 'provider["terraform.io/builtin/terraform"]',
    instances: [{ schema_version: 0, attributes: { id: "x", input: "secret-ish" } }],
  },
  {
    module: "module.vpc",
    mode: "managed",
    type: "null_resource",
    name: "subnet",
    provider: 'provider["registry.terraform.io/hashicorp/null"]',
    instances: [
      { index_key: 0, attributes: { id: "1" } },
      { index_key: "b", attributes: { id: "2" } },
    ],
  },
  {
    mode: "data",
    type: "terraform_remote_state",
    name: "net",
    provider: 'provider["terraform.io/builtin/terraform"]',
    instances: [{ attributes: {} }],
  },
];

/** A local workspace with one state version holding {@link RESOURCES}; its id and version id. */
async function withState(
  org: TestOrg,
  body = stateJson({ serial: 1, lineage: "l", resources: RESOURCES }),
) {
  const ws = await seedWorkspace(org);
  const res = await new BackendClient(ws, org.tokens.member).put(body);
  expect(res.status).toBe(200);
  const { stateVersionId } = (await res.json()) as { stateVersionId: string };
  return { ws, stateVersionId };
}

describe("GET …/state-versions/{id}/resources", () => {
  it("lists every instance by its address, modules and data sources included, and no values", async () => {
    const org = await seedOrg();
    const { ws, stateVersionId } = await withState(org);
    const res = await requestJson<Resources>(
      `/api/v1/workspaces/${ws}/state-versions/${stateVersionId}/resources`,
      { token: org.tokens.reader },
    );
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.serial).toBe(1);
    expect(res.body.resources.map((r) => r.address)).toEqual([
      "terraform_data.hello",
      "module.vpc.null_resource.subnet[0]",
      'module.vpc.null_resource.subnet["b"]',
      "data.terraform_remote_state.net",
    ]);
    expect(res.body.resources[1]).toMatchObject({ module: "module.vpc", mode: "managed" });
    expect(JSON.stringify(res.body)).not.toContain("secret-ish");
  });

  it("lists a Pulumi checkpoint's resources by URN", async () => {
    const org = await seedOrg();
    const urn = "urn:pulumi:dev::demo::random:index/randomPet:RandomPet::pet";
    const checkpoint = JSON.stringify({
      version: 3,
      serial: 1,
      lineage: "l",
      checkpoint: { latest: { resources: [{ urn, type: "random:index/randomPet:RandomPet" }] } },
    });
    const { ws, stateVersionId } = await withState(org, checkpoint);
    const res = await requestJson<Resources>(
      `/api/v1/workspaces/${ws}/state-versions/${stateVersionId}/resources`,
      { token: org.tokens.reader },
    );
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.resources).toMatchObject([{ address: urn, name: "pet" }]);
  });

  it("says an encrypted state cannot be read (409), and an unknown version is 404", async () => {
    const org = await seedOrg();
    const envelope = JSON.stringify({
      serial: 1,
      lineage: "l",
      meta: {},
      encrypted_data: "AAAA",
      encryption_version: "v0",
    });
    const { ws, stateVersionId } = await withState(org, envelope);
    const encrypted = await requestJson<ErrorBody>(
      `/api/v1/workspaces/${ws}/state-versions/${stateVersionId}/resources`,
      { token: org.tokens.reader },
    );
    expect(encrypted.status).toBe(409);
    expect(encrypted.body.error.message).toContain("encrypted");
    const unknown = await requestJson<ErrorBody>(
      `/api/v1/workspaces/${ws}/state-versions/sv_${"a".repeat(26)}/resources`,
      { token: org.tokens.reader },
    );
    expect(unknown.status).toBe(404);
    const bad = await requestJson<ErrorBody>(
      `/api/v1/workspaces/${ws}/state-versions/nope/resources`,
      { token: org.tokens.reader },
    );
    expect(bad.status).toBe(400);
  });
});

describeAuth("GET /api/v1/workspaces/:id/state-versions/:svId/resources", {
  role: "reader",
  target: async (org) => {
    const { ws, stateVersionId } = await withState(org);
    return {
      method: "GET",
      path: `/api/v1/workspaces/${ws}/state-versions/${stateVersionId}/resources`,
    };
  },
});

describeAccess("GET /api/v1/workspaces/:id/state-versions/:svId/resources", {
  level: "read",
  allowedStatus: 200,
  target: async (org) => {
    const { ws, stateVersionId } = await withState(org);
    return {
      workspaceId: ws,
      method: "GET",
      path: `/api/v1/workspaces/${ws}/state-versions/${stateVersionId}/resources`,
    };
  },
});
