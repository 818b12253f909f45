import { readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { httpBackend, runStandin, tempConfig } from "./helpers/standin.ts";
import { StateServer } from "./helpers/state-server.ts";

const TOKEN = "op_run_test-token-0123456789";
const server = new StateServer({ ws_a: TOKEN, ws_b: TOKEN, ws_c: TOKEN, ws_d: TOKEN });
const creds = { TF_HTTP_USERNAME: "outpost", TF_HTTP_PASSWORD: TOKEN };
const dirs: string[] = [];

beforeAll(() => server.start());
afterAll(async () => {
  await server.stop();
  for (const d of dirs) {
    rmSync(d, { recursive: true, force: true });
  }
});

function workspace(ws: string, main: string): string {
  const dir = tempConfig({
    "main.tf": main,
    "outpost_override.tf": httpBackend(server.stateAddress(ws)),
  });
  dirs.push(dir);
  return dir;
}

describe("stand-in terraform", () => {
  it("reports its version like terraform", async () => {
    const dir = workspace("ws_a", "");
    expect((await runStandin(dir, ["version"])).output).toMatch(/^Terraform v1\.9\.5\non linux_/);
    const json = JSON.parse((await runStandin(dir, ["version", "-json"])).output);
    expect(json.terraform_version).toBe("1.9.5");
  });

  it("plans, shows and applies through the http backend with locks, ?ID= and Content-MD5", async () => {
    const dir = workspace("ws_a", 'resource "null_resource" "a" { value = "one" }\n');
    const init = await runStandin(dir, ["init", "-input=false"], creds);
    expect(init.code).toBe(0);
    expect(readFileSync(path.join(dir, ".terraform.lock.hcl"), "utf8")).toContain("hashicorp/null");
    // The password came from the environment and is not recorded by init.
    expect(readFileSync(path.join(dir, ".terraform/terraform.tfstate"), "utf8")).not.toContain(
      TOKEN,
    );

    const plan = await runStandin(
      dir,
      ["plan", "-out=p.tfplan", "-input=false", "-detailed-exitcode"],
      creds,
    );
    expect(plan).toMatchObject({ code: 2 });
    expect(plan.output).toContain("Plan: 1 to add, 0 to change, 0 to destroy.");
    const shown = JSON.parse((await runStandin(dir, ["show", "-json", "p.tfplan"], creds)).output);
    expect(shown.resource_changes[0]).toMatchObject({
      address: "null_resource.a",
      change: { actions: ["create"] },
    });

    server.requests.length = 0;
    const apply = await runStandin(dir, ["apply", "p.tfplan"], creds);
    expect(apply.output).toContain("Apply complete! Resources: 1 added, 0 changed, 0 destroyed.");
    expect(apply.code).toBe(0);
    expect(server.requests.map((r) => r.method)).toEqual(["LOCK", "GET", "POST", "UNLOCK"]);
    const lockId = JSON.parse(server.requests[0]?.body ?? "{}").ID;
    expect(server.requests[2]).toMatchObject({ lockId, username: "outpost" });
    expect(server.requests[2]?.contentMd5).toMatch(/^[A-Za-z0-9+/]{22}==$/);
    expect(server.currentState("ws_a")).toMatchObject({
      version: 4,
      serial: 1,
      resources: [
        { type: "null_resource", name: "a", instances: [{ attributes: { value: "one" } }] },
      ],
    });
    expect(server.workspaces.get("ws_a")?.lock).toBeNull();

    const again = await runStandin(dir, ["plan", "-input=false", "-detailed-exitcode"], creds);
    expect(again.code).toBe(0);
    expect(again.output).toContain("No changes.");
    // The saved plan was made against serial 0: applying it again is refused as stale.
    const stale = await runStandin(dir, ["apply", "p.tfplan"], creds);
    expect(stale.code).toBe(1);
    expect(stale.output).toContain("Saved plan is stale");
  });

  it("finds drift like terraform: -refresh-only -detailed-exitcode exits 2, show -json lists resource_drift", async () => {
    const dir = workspace("ws_d", 'resource "null_resource" "a" { value = "one" }\n');
    await runStandin(dir, ["init", "-input=false"], creds);
    await runStandin(dir, ["plan", "-out=p.tfplan", "-input=false"], creds);
    expect((await runStandin(dir, ["apply", "p.tfplan"], creds)).code).toBe(0);
    const refreshOnly = [
      "plan",
      "-refresh-only",
      "-detailed-exitcode",
      "-out=r.tfplan",
      "-input=false",
    ];

    const clean = await runStandin(dir, refreshOnly, creds);
    expect(clean.code).toBe(0);
    expect(clean.output).toContain(
      "No changes. Your infrastructure still matches the configuration.",
    );
    const cleanDoc = JSON.parse(
      (await runStandin(dir, ["show", "-json", "r.tfplan"], creds)).output,
    );
    expect(cleanDoc).toMatchObject({ resource_changes: [], resource_drift: [] });

    const drifted = { ...creds, STANDIN_DRIFT: "null_resource.a=two" };
    const found = await runStandin(dir, refreshOnly, drifted);
    expect(found.code).toBe(2);
    expect(found.output).toContain("Note: Objects have changed outside of Terraform");
    expect(found.output).toContain("# null_resource.a has changed");
    expect(found.output).toContain("This is a refresh-only plan");
    const doc = JSON.parse((await runStandin(dir, ["show", "-json", "r.tfplan"], drifted)).output);
    expect(doc.resource_changes).toEqual([]);
    expect(doc.resource_drift).toEqual([
      expect.objectContaining({
        address: "null_resource.a",
        change: expect.objectContaining({
          actions: ["update"],
          before: expect.objectContaining({ value: "one" }),
          after: expect.objectContaining({ value: "two" }),
        }),
      }),
    ]);
    // The plan wrote nothing; a normal plan against the drifted object wants it back.
    expect(server.currentState("ws_d")).toMatchObject({ serial: 1 });
    const normal = await runStandin(dir, ["plan", "-input=false", "-detailed-exitcode"], drifted);
    expect(normal.code).toBe(2);
    expect(normal.output).toContain("Plan: 0 to add, 1 to change, 0 to destroy.");
    // Applying the refresh-only plan records the drift in the state and changes nothing else.
    expect((await runStandin(dir, ["apply", "r.tfplan"], drifted)).code).toBe(0);
    expect(server.currentState("ws_d")).toMatchObject({
      serial: 2,
      resources: [{ instances: [{ attributes: { value: "two" } }] }],
    });
    const refused = await runStandin(dir, ["plan", "-refresh-only", "-destroy"], creds);
    expect(refused.code).toBe(1);
    expect(refused.output).toContain("Incompatible plan options");
  });

  it("writes intermediate snapshots with increasing serials, and plans destroy", async () => {
    const dir = workspace(
      "ws_b",
      'resource "x" "a" { value = "1" }\nresource "x" "b" { value = "2" }\nresource "x" "c" { value = "3" }\n',
    );
    await runStandin(dir, ["init"], creds);
    await runStandin(dir, ["plan", "-out=p"], creds);
    server.requests.length = 0;
    expect((await runStandin(dir, ["apply", "p"], creds)).code).toBe(0);
    const serials = server.requests
      .filter((r) => r.method === "POST")
      .map((r) => JSON.parse(r.body).serial);
    expect(serials).toEqual([1, 2, 3]);
    const destroy = await runStandin(
      dir,
      ["plan", "-destroy", "-out=d", "-detailed-exitcode"],
      creds,
    );
    expect(destroy.output).toContain("Plan: 0 to add, 0 to change, 3 to destroy.");
    expect((await runStandin(dir, ["apply", "d"], creds)).code).toBe(0);
    expect(server.currentState("ws_b")).toMatchObject({ serial: 6, resources: [] });
  });

  it("exits 1 on a plan error, a missing variable, a wrong token and a held lock", async () => {
    const failing = workspace("ws_c", '# standin:fail-plan\nresource "x" "a" {}\n');
    await runStandin(failing, ["init"], creds);
    expect((await runStandin(failing, ["plan", "-detailed-exitcode"], creds)).code).toBe(1);

    const needsVar = workspace("ws_c", 'variable "region" {}\n');
    await runStandin(needsVar, ["init"], creds);
    const missing = await runStandin(needsVar, ["plan", "-input=false"], creds);
    expect(missing.code).toBe(1);
    expect(missing.output).toContain('input variable "region" is not set');

    const badToken = await runStandin(needsVar, ["plan"], {
      ...creds,
      TF_HTTP_PASSWORD: "nope",
      TF_VAR_region: "x",
    });
    expect(badToken.code).toBe(1);
    expect(badToken.output).toContain("invalid auth");

    server.workspaces.set("ws_d", {
      state: null,
      serial: 0,
      lineage: null,
      lock: JSON.stringify({ ID: "other", Operation: "OperationTypeApply", Who: "bob@laptop" }),
    });
    const locked = workspace("ws_d", 'resource "x" "a" {}\n');
    await runStandin(locked, ["init"], creds);
    const blocked = await runStandin(locked, ["plan"], creds);
    expect(blocked.code).toBe(1);
    expect(blocked.output).toContain("Error acquiring the state lock");
    expect(blocked.output).toContain("bob@laptop");
    expect((await runStandin(locked, ["plan", "-lock=false"], creds)).code).toBe(0);
  });

  it("retries 5xx like the real client", async () => {
    const dir = workspace("ws_c", 'resource "x" "z" {}\n');
    await runStandin(dir, ["init"], creds);
    server.failNext = { count: 2, status: 503 };
    const plan = await runStandin(dir, ["plan", "-detailed-exitcode"], creds);
    expect(plan.code).toBe(2);
    server.failNext = { count: 3, status: 500 };
    const gaveUp = await runStandin(dir, ["plan"], creds);
    expect(gaveUp.code).toBe(1);
  });

  it("reads variables from auto tfvars (JSON and HCL) and prints those a fixture asks for", async () => {
    const dir = workspace(
      "ws_c",
      'variable "a" {}\nvariable "b" {}\nvariable "c" {}\n# standin:print var.a\n# standin:print var.b\n# standin:print var.c\n',
    );
    dirs.push(dir);
    await runStandin(dir, ["init"], creds);
    writeFileSync(path.join(dir, "outpost.auto.tfvars.json"), JSON.stringify({ a: "from-json" }));
    writeFileSync(path.join(dir, "outpost.auto.tfvars"), 'b = ["x", "y"]\nc = "a string"\n');
    const plan = await runStandin(dir, ["plan"], creds);
    expect(plan.output).toContain('var.a = "from-json"');
    expect(plan.output).toContain('var.b = "[\\"x\\", \\"y\\"]"');
    // An HCL string literal is the string, without its quotes.
    expect(plan.output).toContain('var.c = "a string"');
  });
});
