/**
 * Terraform's `cloud` block against a real coordinator, driven by the stand-in `terraform`
 * (test/fixtures/terraform-cloud*.mjs, which replays the real CLI's TFE API requests) as a person
 * runs it on a laptop, with a real agent serving the remote runs.
 */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { TerraformCloud } from "@skorfmann/terraform-cloud";
import type { AxiosError } from "axios";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type IssuerKey, OidcIssuerServer, rsaKey, signWith } from "../node/helpers/oidc-issuer.ts";
import { buildTarGz } from "../node/helpers/tarball.ts";
import { expectStatus, type Json, stateVersions } from "./helpers/e2e.ts";
import { Laptop, sequence } from "./helpers/terraform-cli.ts";
import { useWorld, type World } from "./helpers/world.ts";

// A person signs in through Cloudflare Access (a loopback certificate set): the world has no SSO,
// and `terraform login` needs a person at the token page.
const ACCESS_TEAM = "outpost-e2e.cloudflareaccess.com";
const ACCESS_AUD = "e".repeat(64);
const certs = new OidcIssuerServer();
let accessKey: IssuerKey;
beforeAll(async () => {
  await certs.start();
  accessKey = await rsaKey("access-1");
  certs.publish("access", [accessKey.publicJwk]);
});
afterAll(() => certs.stop());

const world = useWorld(() => ({
  agents: [{ args: ["--cancel-grace", "5"] }],
  vars: {
    OIDC_ALLOW_LOOPBACK_ISSUERS: "true",
    ACCESS_TEAM_DOMAIN: ACCESS_TEAM,
    ACCESS_AUD,
    ACCESS_CERTS_URL: `${certs.issuer("access")}/jwks`,
  },
}));
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
    expect(init.code, init.stderr).toBe(0);
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
    expect(again.code, again.stderr).toBe(0);
    expect(sequence(again.requests).filter((r) => !r.startsWith("GET"))).toEqual([]);
  });

  it("refuses an organization that is not the token's, and a laptop without a token", async () => {
    const l = laptop();
    l.write({ "main.tf": config('name = "x"', "").replace(`"${org}"`, '"someone-else"') });
    const other = await l.run(["init"]);
    expect(other.code, other.stderr).toBe(1);
    expect(other.stderr).toContain('Failed to read organization "someone-else"');
    const none = laptop(null);
    none.write({ "main.tf": config('name = "x"', "") });
    const missing = await none.run(["init"]);
    expect(missing.code, missing.stderr).toBe(1);
    expect(missing.stderr).toContain(`terraform login ${host}`);
  });
});

/**
 * What a person does in the browser `terraform login` opened: follows the token page URL behind
 * Access, and creates a personal token there (the page's form, with its CSRF field).
 */
async function tokenFromPage(pageUrl: string): Promise<string> {
  const assertion = await signWith(accessKey, {
    iss: `https://${ACCESS_TEAM}`,
    aud: ACCESS_AUD,
    sub: "access-ada",
    email: "ada@example.com",
    groups: ["laptop-people"],
  });
  const headers = { "cf-access-jwt-assertion": assertion };
  const opened = await fetch(pageUrl, { headers, redirect: "manual" });
  expect(opened.status).toBe(303);
  const page = new URL(opened.headers.get("location") ?? "", world.coordinator.url);
  const form = await fetch(page, { headers, redirect: "manual" });
  expect(form.status).toBe(200);
  const cookie = (form.headers.getSetCookie() ?? []).map((c) => c.split(";")[0]).join("; ");
  const csrf = /name="_csrf" value="([^"]+)"/.exec(await form.text())?.[1] ?? "";
  const created = await fetch(page, {
    method: "POST",
    headers: { ...headers, cookie, "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ _csrf: csrf }),
    redirect: "manual",
  });
  const html = await created.text();
  expect(created.status, html).toBe(201);
  const token = /id="terraform-token">\s*(op_user_[A-Za-z0-9_-]+)/.exec(html)?.[1];
  expect(token).toMatch(/^op_user_/);
  return token ?? "";
}

describe("terraform login", () => {
  it("opens the token page, stores the person's pasted token, and init and plan use it", async () => {
    await expectStatus(
      world.api("POST", "/api/v1/teams", {
        name: "laptop-people",
        idpGroups: ["laptop-people"],
        organizationRole: "admin",
      }),
      201,
    );
    const l = laptop(null);
    let opened = "";
    let agreed = false;
    let pasted: Promise<void> | undefined;
    const login = await l.run(["login", host], {
      timeoutMs: 30_000,
      onStdout: (text, child) => {
        if (!agreed && text.includes("Only 'yes' will be accepted to confirm.")) {
          agreed = true;
          child.stdin?.write("yes\n");
        }
        const url = /Open the following URL[^\n]*\n\s+(\S+)/.exec(text)?.[1];
        if (url && pasted === undefined && text.includes(`Token for ${host}:`)) {
          opened = url;
          // The stand-in prints https://HOST/…; the world's coordinator speaks http.
          const page = url.replace(/^https:/, "http:");
          pasted = tokenFromPage(page).then(
            (token) => void child.stdin?.end(`${token}\n`),
            (error: unknown) => {
              child.stdin?.end("\n");
              throw error;
            },
          );
        }
      },
    });
    expect(login.code, login.stderr + login.stdout).toBe(0);
    await pasted;
    expect(new URL(opened).pathname + new URL(opened).search).toBe(
      "/app/settings/tokens?source=terraform-login",
    );
    expect(login.stdout).toContain("Retrieved token for user ada@example.com");
    expect(login.stdout).toContain(`Success! Logged in to Terraform Enterprise (${host})`);
    expect(sequence(login.requests)).toEqual([
      "GET /.well-known/terraform.json",
      "GET /api/v2/ping",
      "GET /api/v2/account/details",
    ]);
    const stored = JSON.parse(readFileSync(l.credentialsFile, "utf8")) as {
      credentials: Record<string, { token: string }>;
    };
    expect(stored.credentials[host]?.token).toMatch(/^op_user_/);

    // The stored credentials, no TF_TOKEN_ variable: init creates the workspace, plan runs.
    l.write({ "main.tf": config('name = "laptop-login"', resource("a", "1")) });
    const init = await l.run(["init"]);
    expect(init.code, init.stderr).toBe(0);
    const plan = await l.run(["plan"], { timeoutMs: 120_000 });
    expect(plan.code, plan.stderr).toBe(0);
    expect(plan.stdout).toContain("Plan: 1 to add");
  });
});

describe("workspaces selected by tags", () => {
  it("creates the first tagged workspace at init, then lists, creates and selects among them", async () => {
    const l = laptop();
    l.write({ "main.tf": config('tags = ["laptop-app"]', resource("a", "1")) });
    const init = await l.run(["init"], { stdin: "laptop-app-dev\n" });
    expect(init.code, init.stderr).toBe(0);
    expect(init.stdout).toContain("There are no workspaces with the configured tags (laptop-app)");
    const initSeq = sequence(init.requests);
    expect(initSeq).toContain(
      `GET /api/v2/organizations/${org}/workspaces?search%5Btags%5D=laptop-app`,
    );
    expect(initSeq).toContain(`POST /api/v2/organizations/${org}/workspaces`);
    const created = init.requests.find((r) => r.method === "POST" && r.url.endsWith("/workspaces"));
    expect(JSON.parse(created?.body ?? "{}").data.relationships.tags.data).toEqual([
      { type: "tags", attributes: { name: "laptop-app" } },
    ]);
    const dev = await tfeApi(world, "GET", `/organizations/${org}/workspaces/laptop-app-dev`);
    expect((dev.body.data as { attributes: Json }).attributes["tag-names"]).toEqual(["laptop-app"]);

    const made = await l.run(["workspace", "new", "laptop-app-prod"]);
    expect(made.code, made.stderr).toBe(0);
    expect(made.stdout).toContain('Created and switched to workspace "laptop-app-prod"!');
    // A workspace without the tag is not one of them.
    await agentWorkspace("laptop-untagged");
    const list = await l.run(["workspace", "list"]);
    expect(list.code, list.stderr).toBe(0);
    expect(list.stdout).toBe("  laptop-app-dev\n* laptop-app-prod\n");
    const select = await l.run(["workspace", "select", "laptop-app-dev"]);
    expect(select.code, select.stderr).toBe(0);
    expect((await l.run(["workspace", "list"])).stdout).toBe(
      "* laptop-app-dev\n  laptop-app-prod\n",
    );
    const missing = await l.run(["workspace", "select", "laptop-untagged"]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('Workspace "laptop-untagged" doesn\'t exist.');
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
    expect(first.code, first.stderr).toBe(0);
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
    expect(second.code, second.stderr).toBe(0);
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
    expect(refused.code, refused.stderr).toBe(1);
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

/** An agent workspace on the world's pool, created as the `tfe` provider would. */
async function agentWorkspace(name: string, env: Record<string, string> = {}): Promise<string> {
  const created = await tfeApi(world, "POST", `/organizations/${org}/workspaces`, {
    data: {
      type: "workspaces",
      attributes: {
        name,
        "execution-mode": "agent",
        "agent-pool-id": world.poolId,
        "terraform-version": "1.9.5",
      },
    },
  });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  const id = String((created.body.data as Json).id);
  for (const [key, value] of Object.entries(env)) {
    const v = await tfeApi(world, "POST", `/workspaces/${id}/vars`, {
      data: { type: "vars", attributes: { key, value, category: "env" } },
    });
    expect(v.status).toBe(201);
  }
  return id;
}

/** The run the stand-in created (its id from the POST /runs answer is not traced: the trace). */
function runIdOf(stdout: string): string {
  const m = /\/runs\/(\S+)\n/.exec(stdout);
  if (!m?.[1]) {
    throw new Error(`no run URL in:\n${stdout}`);
  }
  return m[1];
}

async function runAttributes(runId: string): Promise<Json> {
  const r = await tfeApi(world, "GET", `/runs/${runId}`);
  expect(r.status).toBe(200);
  return (r.body.data as { attributes: Json }).attributes;
}

describe("remote execution on the agent", () => {
  const variables = 'variable "greeting" {}\n# standin:print var.greeting\n';

  it("plans speculatively with -var, streaming the plan log to its end", async () => {
    const wsId = await agentWorkspace("laptop-remote-plan");
    const l = laptop();
    l.write({
      "main.tf": config('name = "laptop-remote-plan"', variables + resource("a", "one")),
    });
    expect((await l.run(["init"])).code).toBe(0);
    const plan = await l.run(["plan", "-var", "greeting=hello from the laptop"]);
    expect(plan.stderr).toBe("");
    expect(plan.code, plan.stderr).toBe(0);
    expect(plan.stdout).toContain("Running plan in Outpost.");
    // Run variables are sealed like sensitive ones, so the log masks them; a string literal
    // reaches the job decoded, so its bare value is masked (the stand-in prints it quoted).
    expect(plan.stdout).toContain('var.greeting = "***"');
    expect(plan.stdout).not.toContain("hello from the laptop");
    expect(plan.stdout).toContain("Plan: 1 to add, 0 to change, 0 to destroy.");
    const seq = sequence(plan.requests);
    const wsPath = `/api/v2/organizations/${org}/workspaces/laptop-remote-plan`;
    expect(seq.slice(0, 6)).toEqual([
      "GET /.well-known/terraform.json",
      "GET /api/v2/ping",
      `GET /api/v2/organizations/${org}/entitlement-set`,
      `GET ${wsPath}`,
      expect.stringMatching(/^POST \/api\/v2\/workspaces\/\S+\/configuration-versions$/),
      expect.stringMatching(/^PUT /),
    ]);
    const cv = plan.requests.find((r) => r.url.endsWith("/configuration-versions"));
    expect(JSON.parse(cv?.body ?? "{}").data.attributes).toEqual({
      "auto-queue-runs": false,
      provisional: false,
      speculative: true,
    });
    const created = plan.requests.find(
      (r) => r.method === "POST" && r.url.endsWith("/api/v2/runs"),
    );
    expect(JSON.parse(created?.body ?? "{}").data.attributes.variables).toEqual([
      { key: "greeting", value: '"hello from the laptop"' },
    ]);
    // The log is read through its log-read URL with offsets, without the token.
    const logReads = plan.requests.filter((r) => /[?&]limit=65536&offset=\d+$/.test(r.url));
    expect(logReads.length).toBeGreaterThan(0);
    expect(logReads.every((r) => r.headers.Authorization === undefined)).toBe(true);
    const run = await runAttributes(runIdOf(plan.stdout));
    expect(run.status).toBe("planned_and_finished");
    expect(run["plan-only"]).toBe(true);

    // The exact value reaches the engine: applied into the state.
    l.write({
      "main.tf": config(
        'name = "laptop-remote-plan"',
        'variable "greeting" {}\nresource "null_resource" "a" { value = var.greeting }\n',
      ),
    });
    const apply = await l.run(["apply", "-auto-approve", "-var=greeting=hello from the laptop"]);
    expect(apply.code, apply.stderr).toBe(0);
    const current = await tfeApi(world, "GET", `/workspaces/${wsId}/current-state-version`);
    const url = String(
      (current.body.data as { attributes: Json }).attributes["hosted-state-download-url"],
    );
    const state = (await (
      await fetch(url, { headers: { authorization: `Bearer ${world.ownerToken}` } })
    ).json()) as { resources: { instances: { attributes: Json }[] }[] };
    expect(state.resources[0]?.instances[0]?.attributes.value).toBe("hello from the laptop");
  });

  it("applies with -auto-approve, after a yes at the prompt, and destroys", async () => {
    const wsId = await agentWorkspace("laptop-remote-apply");
    const l = laptop();
    l.write({ "main.tf": config('name = "laptop-remote-apply"', resource("a", "one")) });
    expect((await l.run(["init"])).code).toBe(0);

    const auto = await l.run(["apply", "-auto-approve"]);
    expect(auto.stderr).toBe("");
    expect(auto.code, auto.stderr).toBe(0);
    expect(auto.stdout).toContain("Apply complete! Resources: 1 added, 0 changed, 0 destroyed.");
    expect(sequence(auto.requests)).not.toContainEqual(expect.stringMatching(/actions\/apply$/));

    l.write({ "main.tf": config('name = "laptop-remote-apply"', resource("a", "two")) });
    const asked = await l.run(["apply"], { stdin: "yes\n" });
    expect(asked.stderr).toBe("");
    expect(asked.code, asked.stderr).toBe(0);
    expect(asked.stdout).toContain(
      'Do you want to perform these actions in workspace "laptop-remote-apply"?',
    );
    expect(asked.stdout).toContain("Resources: 0 added, 1 changed, 0 destroyed.");
    expect(sequence(asked.requests)).toContainEqual(
      expect.stringMatching(/^POST \/api\/v2\/runs\/\S+\/actions\/apply$/),
    );

    const destroy = await l.run(["apply", "-destroy", "-auto-approve"]);
    expect(destroy.code, destroy.stderr).toBe(0);
    expect(destroy.stdout).toContain("Resources: 0 added, 0 changed, 1 destroyed.");
    const destroyRun = await runAttributes(runIdOf(destroy.stdout));
    expect(destroyRun["is-destroy"]).toBe(true);
    expect(destroyRun.status).toBe("applied");
    const current = await tfeApi(world, "GET", `/workspaces/${wsId}/current-state-version`);
    expect(current.status).toBe(200);
  });

  it("passes -refresh-only, -target and -replace through to the run", async () => {
    await agentWorkspace("laptop-remote-options", {
      STANDIN_DRIFT: "null_resource.a=changed-outside",
    });
    const l = laptop();
    l.write({
      "main.tf": config(
        'name = "laptop-remote-options"',
        resource("a", "one") + resource("b", "one"),
      ),
    });
    expect((await l.run(["init"])).code).toBe(0);
    expect((await l.run(["apply", "-auto-approve"])).code).toBe(0);

    const refresh = await l.run(["apply", "-refresh-only", "-auto-approve"]);
    expect(refresh.code, refresh.stderr).toBe(0);
    expect(refresh.stdout).toContain("Objects have changed outside of Terraform");
    expect((await runAttributes(runIdOf(refresh.stdout)))["refresh-only"]).toBe(true);

    l.write({
      "main.tf": config(
        'name = "laptop-remote-options"',
        resource("a", "two") + resource("b", "two"),
      ),
    });
    const targeted = await l.run([
      "apply",
      "-auto-approve",
      "-target=null_resource.a",
      "-replace",
      "null_resource.b",
    ]);
    expect(targeted.code, targeted.stderr).toBe(0);
    const run = await runAttributes(runIdOf(targeted.stdout));
    expect(run["target-addrs"]).toEqual(["null_resource.a"]);
    expect(run["replace-addrs"]).toEqual(["null_resource.b"]);
    expect(targeted.stdout).toContain("null_resource.a: Modifying...");
    expect(targeted.stdout).not.toContain("null_resource.b:");
  });

  it("cancels the remote run on Ctrl-C once the person confirms (the CLI never force-cancels)", async () => {
    await agentWorkspace("laptop-remote-cancel", { STANDIN_PLAN_SLEEP_MS: "60000" });
    const l = laptop();
    l.write({ "main.tf": config('name = "laptop-remote-cancel"', resource("a", "one")) });
    expect((await l.run(["init"])).code).toBe(0);
    let interrupted = false;
    let answered = false;
    const apply = await l.run(["apply"], {
      onStdout: (text, child) => {
        if (!interrupted && text.includes("standin: planning")) {
          interrupted = true;
          child.kill("SIGINT");
        }
        if (!answered && text.includes("Do you want to cancel the remote operation?")) {
          answered = true;
          child.stdin?.end("yes\n");
        }
      },
    });
    expect(apply.stdout).toContain("Interrupt received.");
    expect(apply.stdout).toContain("The remote operation was successfully cancelled.");
    expect(apply.code, apply.stderr).toBe(1);
    const actions = sequence(apply.requests).filter((r) => r.includes("/actions/"));
    expect(actions).toEqual([
      expect.stringMatching(/^POST \/api\/v2\/runs\/\S+\/actions\/cancel$/),
    ]);
    const runId = runIdOf(apply.stdout);
    await expect
      .poll(async () => (await runAttributes(runId)).status, { timeout: 30_000 })
      .toBe("canceled");
  });
});

/**
 * The published `@skorfmann/terraform-cloud` client. Its constructor takes a hostname and always
 * builds `https://HOST/api/v2`; the axios instance it keeps (`client`) is public, and setting that
 * instance's `defaults.baseURL` is the supported way to reach an http loopback coordinator (an
 * https deployment needs only `new TerraformCloud(token, "outpost.example.com")`). The client
 * sends request bodies as given (its types spell attributes in camelCase, which Terraform Cloud
 * would ignore), so these calls use Terraform Cloud's own attribute names; answers come back with
 * camelCased keys (its response interceptor).
 */
describe("@skorfmann/terraform-cloud against the coordinator", () => {
  function client(): TerraformCloud {
    const tfc = new TerraformCloud(world.ownerToken, host);
    tfc.client.defaults.baseURL = `${world.coordinator.url}/api/v2`;
    // A refusal names the request and the errors document in the test's failure.
    tfc.client.interceptors.response.use(undefined, (error: AxiosError) => {
      error.message += ` (${error.config.method} ${error.config.url}: ${JSON.stringify(error.response?.data)})`;
      throw error;
    });
    return tfc;
  }

  it("creates, reads, updates and deletes a workspace, and keeps its state versions", async () => {
    const tfc = client();
    const created = await tfc.Workspaces.create(org, {
      data: {
        type: "workspaces",
        attributes: { name: "client-ws", "execution-mode": "local" } as never,
      },
    });
    expect(created.attributes.name).toBe("client-ws");
    expect(created.attributes.executionMode).toBe("local");
    expect((await tfc.Workspaces.showByName(org, "client-ws")).id).toBe(created.id);
    expect((await tfc.Workspaces.show(created.id)).attributes.name).toBe("client-ws");
    const updated = await tfc.Workspaces.update(org, "client-ws", {
      data: { type: "workspaces", attributes: { "auto-apply": true } as never },
    });
    expect(updated.attributes.autoApply).toBe(true);

    const state = JSON.stringify({
      version: 4,
      terraform_version: "1.9.5",
      serial: 1,
      lineage: "3f0c1e0a-client-lineage",
      outputs: { greeting: { value: "hi", type: "string" } },
      resources: [],
    });
    const sv = await tfc.StateVersions.create(created.id, {
      data: {
        type: "state-versions",
        attributes: {
          serial: 1,
          lineage: "3f0c1e0a-client-lineage",
          md5: createHash("md5").update(state).digest("hex"),
          state: Buffer.from(state).toString("base64"),
        },
      },
    } as never);
    expect(sv.attributes.serial).toBe(1);
    // `current` hands back the whole document (it skips the client's unwrapping of `data`).
    const current = (await tfc.StateVersions.current(created.id)) as unknown as {
      data: { id: string };
    };
    expect(current.data.id).toBe(sv.id);
    const shown = await tfc.StateVersions.show(sv.id);
    const downloaded = (await tfc.client.get(shown.attributes.hostedStateDownloadUrl)) as unknown;
    expect(downloaded).toMatchObject({ serial: 1, lineage: "3f0c1e0a-client-lineage" });

    await tfc.Workspaces.deleteByName(org, "client-ws");
    await expect(tfc.Workspaces.showByName(org, "client-ws")).rejects.toMatchObject({
      response: { status: 404 },
    });
  });

  it("uploads a configuration, plans, applies, reads the apply log and cancels a run", async () => {
    const tfc = client();
    const ws = await tfc.Workspaces.create(org, {
      data: {
        type: "workspaces",
        attributes: {
          name: "client-runs",
          "execution-mode": "agent",
          "agent-pool-id": world.poolId,
          "terraform-version": "1.9.5",
        } as never,
      },
    });
    // Without a body the client sends the type `configuration-version` (singular): refused.
    await expect(tfc.ConfigurationVersion.create(ws.id)).rejects.toMatchObject({
      response: { status: 400 },
    });
    const cv = await tfc.ConfigurationVersion.create(ws.id, {
      data: { type: "configuration-versions", attributes: { "auto-queue-runs": false } as never },
    } as never);
    expect(cv.attributes.status).toBe("pending");
    await tfc.ConfigurationVersion.upload(
      cv.attributes.uploadUrl,
      buildTarGz([{ name: "main.tf", body: resource("a", "from-the-client") }]),
    );
    await expect
      .poll(async () => (await tfc.ConfigurationVersion.show(cv.id)).attributes.status)
      .toBe("uploaded");

    const runRequest = (message: string) =>
      ({
        data: {
          type: "runs",
          attributes: { message },
          relationships: {
            workspace: { data: { type: "workspaces", id: ws.id } },
            "configuration-version": { data: { type: "configuration-versions", id: cv.id } },
          },
        },
      }) as never;
    const run = await tfc.Runs.create(runRequest("from the client"));
    await expect
      .poll(async () => (await tfc.Runs.show(run.id)).attributes.status, { timeout: 60_000 })
      .toBe("planned");
    const plan = await tfc.Plans.show(run.relationships.plan.data.id);
    expect(plan.attributes).toMatchObject({ status: "finished", resourceAdditions: 1 });
    await tfc.Runs.action("apply", run.id, { comment: "ship it" });
    await expect
      .poll(async () => (await tfc.Runs.show(run.id)).attributes.status, { timeout: 60_000 })
      .toBe("applied");
    const applyLog = await tfc.Applies.logs(run.relationships.apply.data.id);
    expect(String(applyLog)).toContain("null_resource.a: Creation complete");
    const current = (await tfc.StateVersions.current(ws.id)) as unknown as {
      data: { attributes: { serial: number } };
    };
    expect(current.data.attributes.serial).toBeGreaterThan(0);

    // A later plan runs long; the README's cancel body ({ data: { comment } }) stops it.
    const v = await tfeApi(world, "POST", `/workspaces/${ws.id}/vars`, {
      data: {
        type: "vars",
        attributes: { key: "STANDIN_PLAN_SLEEP_MS", value: "60000", category: "env" },
      },
    });
    expect(v.status).toBe(201);
    const second = await tfc.Runs.create(runRequest("to cancel"));
    await expect
      .poll(async () => (await tfc.Runs.show(second.id)).attributes.status, { timeout: 30_000 })
      .toBe("planning");
    await tfc.Runs.action("cancel", second.id, { data: { comment: "not now" } } as never);
    await expect
      .poll(async () => (await tfc.Runs.show(second.id)).attributes.status, { timeout: 30_000 })
      .toBe("canceled");
  });
});
