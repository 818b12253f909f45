/**
 * Terraform's `cloud` block against a real coordinator, driven by the stand-in `terraform`
 * (test/fixtures/terraform-cloud*.mjs, which replays the real CLI's TFE API requests) as a person
 * runs it on a laptop, with a real agent serving the remote runs.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { expectStatus, type Json, stateVersions } from "./helpers/e2e.ts";
import { Laptop, sequence } from "./helpers/terraform-cli.ts";
import { useWorld, type World } from "./helpers/world.ts";

const world = useWorld({ agents: [{ args: ["--cancel-grace", "5"] }] });
let host: string;
let laptops = 0;

beforeAll(() => {
  host = new URL(world.coordinator.url).host;
});

/** A laptop holding the owner's token for the coordinator. */
function laptop(token: string | null = world.ownerToken): Laptop {
  laptops += 1;
  const l = new Laptop(world.freshDir(`laptop-${laptops}`), host);
  if (token !== null) {
    l.saveToken(token);
  }
  return l;
}

/** A call to `/api/v2` with a JSON:API body, as go-tfe sends it. */
async function tfeApi(
  w: World,
  method: string,
  route: string,
  body?: unknown,
): Promise<{ status: number; body: Json }> {
  const res = await fetch(`${w.coordinator.url}/api/v2${route}`, {
    method,
    headers: {
      authorization: `Bearer ${w.ownerToken}`,
      accept: "application/vnd.api+json",
      ...(body === undefined ? {} : { "content-type": "application/vnd.api+json" }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as Json) : {} };
}

const cloudBlock = (workspaces: string) =>
  `terraform {\n  cloud {\n    hostname     = "HOST"\n    organization = "ORG"\n    workspaces {\n      ${workspaces}\n    }\n  }\n}\n`;

/** The world's organization (scripts/local-coordinator.ts bootstraps "e2e"). */
const org = "e2e";

function config(workspaces: string, resources: string): string {
  return cloudBlock(workspaces).replace("HOST", host).replace("ORG", org) + resources;
}

const resource = (name: string, value: string) =>
  `resource "null_resource" "${name}" { value = "${value}" }\n`;

describe("terraform init with the cloud block", () => {
  it("discovers the host, checks the organization and creates the named workspace on first use", async () => {
    const l = laptop();
    l.write({ "main.tf": config('name = "laptop-init"', resource("a", "1")) });
    const init = await l.run(["init"]);
    expect(init.stderr).toBe("");
    expect(init.code).toBe(0);
    expect(init.stdout).toContain("HCP Terraform has been successfully initialized!");
    expect(sequence(init.requests)).toEqual([
      "GET /.well-known/terraform.json",
      "GET /api/v2/ping",
      `GET /api/v2/organizations/${org}/entitlement-set`,
      `GET /api/v2/organizations/${org}/workspaces/laptop-init`,
      `POST /api/v2/organizations/${org}/workspaces`,
      expect.stringMatching(/^PATCH \/api\/v2\/workspaces\/\S+$/),
    ]);
    const ws = await tfeApi(world, "GET", `/organizations/${org}/workspaces/laptop-init`);
    expect(ws.status).toBe(200);
    expect((ws.body.data as Json & { attributes: Json }).attributes["terraform-version"]).toBe(
      "1.9.5",
    );
    // A second init finds it and creates nothing.
    const again = await l.run(["init"]);
    expect(again.code).toBe(0);
    expect(sequence(again.requests).filter((r) => !r.startsWith("GET"))).toEqual([]);
  });

  it("refuses an organization that is not the token's, and a laptop without a token", async () => {
    const l = laptop();
    l.write({ "main.tf": config('name = "x"', "").replace(`"${org}"`, '"someone-else"') });
    const other = await l.run(["init"]);
    expect(other.code).toBe(1);
    expect(other.stderr).toContain('Failed to read organization "someone-else"');
    const none = laptop(null);
    none.write({ "main.tf": config('name = "x"', "") });
    const missing = await none.run(["init"]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain(`terraform login ${host}`);
  });
});

describe("local execution: state in Outpost through state versions", () => {
  it("applies on the laptop with the workspace locked, and keeps every version", async () => {
    const l = laptop();
    l.write({ "main.tf": config('name = "laptop-local"', resource("a", "one")) });
    expect((await l.run(["init"])).code).toBe(0);
    const ws = await tfeApi(world, "GET", `/organizations/${org}/workspaces/laptop-local`);
    const wsId = String((ws.body.data as Json).id);
    const patched = await tfeApi(world, "PATCH", `/workspaces/${wsId}`, {
      data: { type: "workspaces", attributes: { "execution-mode": "local" } },
    });
    expect(patched.status).toBe(200);

    const first = await l.run(["apply"], { stdin: "yes\n" });
    expect(first.stderr).toBe("");
    expect(first.code).toBe(0);
    expect(first.stdout).toContain(
      'Do you want to perform these actions in workspace "laptop-local"?',
    );
    expect(first.stdout).toContain("Apply complete! Resources: 1 added, 0 changed, 0 destroyed.");
    const writes = sequence(first.requests).filter((r) => !r.startsWith("GET /.well-known"));
    expect(writes).toEqual([
      "GET /api/v2/ping",
      `GET /api/v2/organizations/${org}/entitlement-set`,
      `GET /api/v2/organizations/${org}/workspaces/laptop-local`,
      `GET /api/v2/organizations/${org}/workspaces/laptop-local`,
      `POST /api/v2/workspaces/${wsId}/actions/lock`,
      `GET /api/v2/workspaces/${wsId}/current-state-version`,
      `POST /api/v2/workspaces/${wsId}/state-versions`,
      expect.stringMatching(/^PUT \/api\/v2\/state-versions\/\S+\/upload\?secret=/),
      expect.stringMatching(/^PUT \/api\/v2\/state-versions\/\S+\/json-upload\?secret=/),
      `POST /api/v2/workspaces/${wsId}/actions/unlock`,
    ]);
    // The uploads carry no token: the URL's secret is the credential.
    const uploads = first.requests.filter((r) => r.method === "PUT");
    expect(uploads.every((r) => r.headers.Authorization === undefined)).toBe(true);

    l.write({ "main.tf": config('name = "laptop-local"', resource("a", "two")) });
    const second = await l.run(["apply", "-auto-approve"]);
    expect(second.code).toBe(0);
    expect(second.stdout).toContain("Resources: 0 added, 1 changed, 0 destroyed.");
    expect(sequence(second.requests)).toContainEqual(
      expect.stringMatching(/^GET \/api\/v2\/state-versions\/\S+\/download$/),
    );
    const v1Id = await v1WorkspaceId("laptop-local");
    const versions = await stateVersions(world, v1Id);
    expect(versions.map((v) => v.serial)).toEqual([2, 1]);

    // Someone else's lock refuses the apply, and the state stays as it was.
    const locked = await tfeApi(world, "POST", `/workspaces/${wsId}/actions/lock`, {
      data: { attributes: { reason: "maintenance" } },
    });
    expect(locked.status).toBe(200);
    const other = laptop(await secondToken());
    other.write({ "main.tf": config('name = "laptop-local"', resource("a", "three")) });
    expect((await other.run(["init"])).code).toBe(0);
    const refused = await other.run(["apply", "-auto-approve"]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain("Error acquiring the state lock");
    expect((await stateVersions(world, v1Id)).length).toBe(2);
    expect((await tfeApi(world, "POST", `/workspaces/${wsId}/actions/unlock`)).status).toBe(200);
  });
});

async function v1WorkspaceId(name: string): Promise<string> {
  const list = await world.api("GET", "/api/v1/workspaces");
  const found = (list.body.workspaces as Json[]).find((w) => w.name === name);
  return String(found?.id);
}

/** Another organization token (a second person's laptop). */
async function secondToken(): Promise<string> {
  const created = await expectStatus(
    world.api("POST", "/api/v1/tokens", { role: "member", description: "second laptop" }),
    201,
  );
  return String(created.token);
}
