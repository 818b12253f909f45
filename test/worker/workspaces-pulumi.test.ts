/**
 * Pulumi workspaces through the real routes: engine, stack name and version range rules, the
 * engine that cannot change once there is state, the stack's own backend shown on the
 * workspace, and a refresh run whose job spec carries the stack.
 */
import { describe, expect, it } from "vitest";
import { type ErrorBody, requestJson } from "./helpers/api.ts";
import { seedOrg } from "./helpers/fixtures.ts";
import { BackendClient } from "./helpers/state-fixtures.ts";
import { createWorkspace, type WorkspaceBody } from "./helpers/workspaces.ts";

const pulumi = { engine: "pulumi", engineVersion: "^3.150", stackName: "dev" };

function checkpoint(serial: number): string {
  return JSON.stringify({
    version: 3,
    checkpoint: { stack: "organization/demo/dev", latest: { resources: [] } },
    serial,
    lineage: "9f0c7a52-5b6f-4a57-8d4c-2b8e4f1f7c11",
  });
}

describe("Pulumi workspaces", () => {
  it("creates one with a stack and a version range, and says Outpost keeps the state", async () => {
    const org = await seedOrg();
    const ws = await createWorkspace(org, pulumi);
    expect(ws).toMatchObject({ ...pulumi, stateBackend: "outpost" });
    const terraform = await createWorkspace(org);
    expect(terraform).toMatchObject({ engine: "terraform", stackName: null });
  });

  it.each([
    [
      { engine: "pulumi", engineVersion: "3.150.0" },
      "stackName",
      'engine "pulumi" needs a stackName',
    ],
    [{ ...pulumi, stackName: "-dev" }, "stackName", "a stack name may only contain"],
    [{ ...pulumi, stackName: "a/b/c/d" }, "stackName", "a stack name may only contain"],
    [{ ...pulumi, stackName: "x".repeat(101) }, "stackName", "a stack name may only contain"],
    [{ ...pulumi, engineVersion: "^banana" }, "engineVersion", "semver range"],
    [{ engineVersion: "^1.9", stackName: null }, "engineVersion", "use latest, an exact version"],
    [{ engineVersion: "1.9.5", stackName: "dev" }, "stackName", 'for engine "pulumi" only'],
  ])("refuses %j with a 400 naming %s", async (body, field, message) => {
    const org = await seedOrg();
    const res = await requestJson<ErrorBody>("/api/v1/workspaces", {
      method: "POST",
      token: org.ownerToken,
      body: { name: "bad", ...body },
    });
    expect(res.status).toBe(400);
    expect(JSON.stringify(res.body.error)).toContain(field);
    expect(res.body.error.message).toContain(message);
  });

  it("accepts qualified stack names, latest, and ranges", async () => {
    const org = await seedOrg();
    for (const [stackName, engineVersion] of [
      ["acme/demo/prod", "latest"],
      ["acme/prod.eu-1", ">=3.100 <4"],
      ["dev", "~3.150.1"],
    ]) {
      expect(await createWorkspace(org, { ...pulumi, stackName, engineVersion })).toMatchObject({
        stackName,
        engineVersion,
      });
    }
  });

  it("refuses to switch engine or stack once the workspace has state (409), not before", async () => {
    const org = await seedOrg();
    const ws = await createWorkspace(org, pulumi);
    const patch = (body: Record<string, unknown>) =>
      requestJson<WorkspaceBody & ErrorBody>(`/api/v1/workspaces/${ws.id}`, {
        method: "PATCH",
        token: org.ownerToken,
        body,
      });
    expect((await patch({ stackName: "prod" })).status).toBe(200);
    const client = new BackendClient(ws.id, org.ownerToken);
    expect((await client.put(checkpoint(1))).status).toBe(200);

    const toTerraform = await patch({ engine: "terraform", engineVersion: "1.9.5" });
    expect(toTerraform.status).toBe(409);
    expect(toTerraform.body.error.message).toContain("pulumi state, which terraform cannot read");
    const otherStack = await patch({ stackName: "staging" });
    expect(otherStack.status).toBe(409);
    expect(otherStack.body.error.message).toContain("holds the checkpoint of stack prod");
    expect((await patch({ engineVersion: "3.151.0" })).status).toBe(200);

    const tf = await createWorkspace(org);
    const tfState = new BackendClient(tf.id, org.ownerToken);
    expect((await tfState.put(checkpoint(1))).status).toBe(200);
    const toTofu = await requestJson<WorkspaceBody>(`/api/v1/workspaces/${tf.id}`, {
      method: "PATCH",
      token: org.ownerToken,
      body: { engine: "tofu" },
    });
    // Terraform and OpenTofu read the same state: that migration stays open.
    expect(toTofu.status).toBe(200);
  });

  it("shows a workspace's own backend once PULUMI_BACKEND_URL is a variable, and back", async () => {
    const org = await seedOrg();
    const ws = await createWorkspace(org, pulumi);
    const variable = `/api/v1/workspaces/${ws.id}/vars/PULUMI_BACKEND_URL`;
    const put = await requestJson(variable, {
      method: "PUT",
      token: org.ownerToken,
      body: { value: "s3://bucket/stacks", category: "env" },
    });
    expect(put.status).toBe(201);
    const read = () =>
      requestJson<WorkspaceBody>(`/api/v1/workspaces/${ws.id}`, { token: org.ownerToken });
    expect((await read()).body.stateBackend).toBe("workspace");
    const del = await requestJson(`${variable}?category=env`, {
      method: "DELETE",
      token: org.ownerToken,
    });
    expect(del.status).toBe(200);
    expect((await read()).body.stateBackend).toBe("outpost");
  });

  it("rejects a run operation that does not exist", async () => {
    const org = await seedOrg();
    const ws = await createWorkspace(org, pulumi);
    const refused = await requestJson<ErrorBody>(`/api/v1/workspaces/${ws.id}/runs`, {
      method: "POST",
      token: org.ownerToken,
      body: { operation: "import" },
    });
    expect(refused.status).toBe(400);
  });
});
