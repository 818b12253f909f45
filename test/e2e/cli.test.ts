/**
 * The `outpost` admin CLI as a user runs it (the built bin the package ships, as a child process)
 * against the real coordinator, with a real agent serving the runs it queues.
 */
import { mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CLI_EXIT } from "../../agent/src/cli/errors.ts";
import { AGENT_VERSION } from "../../agent/src/version.ts";
import { type IssuerKey, OidcIssuerServer, rsaKey, signWith } from "../node/helpers/oidc-issuer.ts";
import { ENGINE_VERSION, stateVersions } from "./helpers/e2e.ts";
import { type CliOptions, type CliResult, runCli } from "./helpers/processes.ts";
import { useWorld } from "./helpers/world.ts";

const world = useWorld({
  agents: [{ args: ["--cancel-grace", "5"] }],
  // Notifications deliver to this file's loopback receiver, as on a development deployment.
  vars: { NOTIFICATIONS_ALLOW_LOOPBACK: "true" },
});
let home: string;
const issuer = new OidcIssuerServer();
let issuerKey: IssuerKey;

beforeAll(async () => {
  [issuerKey] = await Promise.all([rsaKey("k8s-1"), issuer.start()]);
  issuer.publish("k8s", [issuerKey.publicJwk]);
  home = world.freshDir("cli-home");
});
afterAll(() => issuer.stop());

/** Runs the CLI in this file's home. */
function cli(args: string[], options: Omit<CliOptions, "home"> = {}): Promise<CliResult> {
  return runCli(args, { home, ...options });
}

function configDir(files: Record<string, string>): string {
  const dir = world.freshDir("cli-config");
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    writeFileSync(path.join(dir, name), text);
  }
  return dir;
}

const resource = (name: string, value: string) =>
  `resource "null_resource" "${name}" { value = "${value}" }\n`;

/** One line on stderr, nothing on stdout: how every CLI error must look. */
function expectOneLineError(result: CliResult, code: number, text: RegExp | string): void {
  expect(result.code).toBe(code);
  expect(result.stdout).toBe("");
  expect(result.stderr.trimEnd().split("\n")).toHaveLength(1);
  expect(result.stderr).toMatch(typeof text === "string" ? new RegExp(escapeRegExp(text)) : text);
}

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

describe("outpost CLI", () => {
  it("refuses to work before login, and login saves the token in a 0600 file", async () => {
    expectOneLineError(await cli(["workspaces", "list"]), CLI_EXIT.usage, "not logged in");
    expectOneLineError(
      await cli(["login", "--address", world.coordinator.url], {
        stdin: `op_org_${"A".repeat(43)}\n`,
      }),
      CLI_EXIT.requestFailed,
      "unknown token",
    );
    const login = await cli(["login", "--address", `${world.coordinator.url}/`], {
      stdin: `${world.ownerToken}\n`,
    });
    expect(login.code).toBe(0);
    expect(login.stderr).toContain("Logged in to");
    const file = path.join(home, ".config", "outpost", "config.json");
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(path.dirname(file)).mode & 0o777).toBe(0o700);
    expect(JSON.parse(readFileSync(file, "utf8"))).toEqual({
      address: world.coordinator.url,
      token: world.ownerToken,
    });
    const who = await cli(["whoami"]);
    expect(who.code).toBe(0);
    expect(who.stdout).toContain("as owner");
  });

  it("manages pools, agent tokens, workspaces and variables", async () => {
    const pool = await cli(["pools", "create", "cli-pool", "--description", "from the CLI"]);
    expect(pool.code).toBe(0);
    const poolId = pool.stdout.trim();
    expect(poolId).toMatch(/^pool_/);
    const token = await cli(["agent-tokens", "create", poolId, "--description", "ci"]);
    expect(token.code).toBe(0);
    expect(token.stdout.trim()).toMatch(/^op_agent_/);
    const tokens = await cli(["agent-tokens", "list", poolId, "--json"]);
    const [listed] = JSON.parse(tokens.stdout) as Array<{ id: string }>;
    expect(listed?.id).toMatch(/^atok_/);
    expect((await cli(["agent-tokens", "revoke", poolId, String(listed?.id)])).code).toBe(0);
    // By the pool's name and the token's description, as the list shows them.
    expect(
      (await cli(["agent-tokens", "create", "cli-pool", "--description", "rack 9"])).code,
    ).toBe(0);
    const byName = await cli(["agent-tokens", "revoke", "cli-pool", "rack 9"]);
    expect(byName.code, byName.stderr).toBe(0);
    const update = await cli(["pools", "update", poolId, "--unknown-after", "60"]);
    expect(update.code).toBe(0);
    const shown = await cli(["pools", "show", poolId]);
    expect(shown.stdout).toContain("unknown after 60s");
    expect((await cli(["pools", "list"])).stdout).toContain("cli-pool");

    // The pool by its name (the world's pool is "e2e"); an unknown name is refused in words.
    expectOneLineError(
      await cli(["workspaces", "create", "cli-ws", "--pool", "dc3", "--engine-version", "1.9.5"]),
      CLI_EXIT.requestFailed,
      "no agent pool named dc3 in this organization",
    );
    const ws = await cli([
      "workspaces",
      "create",
      "cli-ws",
      "--pool",
      "e2e",
      "--execution-mode",
      "agent",
      "--engine-version",
      ENGINE_VERSION,
    ]);
    expect(ws.code).toBe(0);
    expect(ws.stdout.trim()).toMatch(/^ws_/);
    expect((await cli(["workspaces", "show", "cli-ws"])).stdout).toContain(`on ${world.poolId}`);
    const set = await cli(["vars", "set", "cli-ws", "word", "-", "--sensitive"], {
      stdin: "swordfish-secret\n",
    });
    expect(set.code).toBe(0);
    expect((await cli(["vars", "set", "cli-ws", "TF_LOG", "info", "--env"])).code).toBe(0);
    expect(
      (await cli(["vars", "set", "cli-ws", "AWS_REGION", "eu-west-1", "--category", "env"])).code,
    ).toBe(0);
    expectOneLineError(
      await cli(["vars", "set", "cli-ws", "X", "1", "--category", "secret"]),
      CLI_EXIT.usage,
      "--category must be env or terraform",
    );
    const vars = await cli(["vars", "list", "cli-ws"]);
    expect(vars.stdout).toMatch(/word\s+terraform\s+\(sensitive\)/);
    expect(vars.stdout).toMatch(/TF_LOG\s+env\s+info/);
    expect(vars.stdout).toMatch(/AWS_REGION\s+env\s+eu-west-1/);
    expect(vars.stdout).not.toContain("swordfish");
    expect((await cli(["vars", "delete", "cli-ws", "TF_LOG"])).code).toBe(0);
    expect((await cli(["workspaces", "lock", "cli-ws", "--reason", "maintenance"])).code).toBe(0);
    expect((await cli(["workspaces", "show", "cli-ws"])).stdout).toContain("maintenance");
    expect((await cli(["workspaces", "unlock", "cli-ws"])).code).toBe(0);
    expect((await cli(["workspaces", "list"])).stdout).toContain("cli-ws");
    expectOneLineError(
      await cli(["pools", "delete", world.poolId]),
      CLI_EXIT.requestFailed,
      "cli-ws",
    );
    expect((await cli(["pools", "delete", poolId])).code).toBe(0);

    const pulumi = await cli([
      "workspaces",
      "create",
      "cli-pulumi",
      "--engine",
      "pulumi",
      "--engine-version",
      "^3.150",
      "--stack-name",
      "dev",
    ]);
    expect(pulumi.code, pulumi.stderr).toBe(0);
    expect(
      JSON.parse((await cli(["workspaces", "show", "cli-pulumi", "--json"])).stdout),
    ).toMatchObject({ engine: "pulumi", stackName: "dev" });
    const help = await cli(["workspaces", "create", "--help"]);
    expect(help.stdout).toContain("terraform, tofu or pulumi");
    expect(help.stdout).toContain("--stack-name");
    expect((await cli(["--help"])).stdout).toContain("Terraform, OpenTofu and Pulumi");
  });

  it("manages projects and variable sets; a workspace's effective variables name their source", async () => {
    const project = await cli(["projects", "create", "cli-network", "--description", "dc1"]);
    expect(project.code, project.stderr).toBe(0);
    expect(project.stdout.trim()).toMatch(/^prj_/);
    const ws = await cli([
      "workspaces",
      "create",
      "cli-proj-ws",
      "--project",
      "cli-network",
      "--pool",
      world.poolId,
      "--engine-version",
      ENGINE_VERSION,
    ]);
    expect(ws.code, ws.stderr).toBe(0);
    expect((await cli(["workspaces", "show", "cli-proj-ws"])).stdout).toContain(
      `project: ${project.stdout.trim()}`,
    );
    const inProject = await cli(["workspaces", "list", "--project", "cli-network"]);
    expect(inProject.stdout).toContain("cli-proj-ws");
    expect(inProject.stdout).not.toContain("cli-ws\n");
    expect((await cli(["projects", "list"])).stdout).toMatch(/cli-network\s+1\s+dc1/);
    expect((await cli(["projects", "show", "cli-network"])).stdout).toContain("cli-proj-ws");

    const created = await cli(["varsets", "create", "cli-creds", "--priority"]);
    expect(created.code, created.stderr).toBe(0);
    expect(created.stdout.trim()).toMatch(/^varset_/);
    const secret = await cli(
      ["varsets", "set", "cli-creds", "CLOUD_TOKEN", "-", "--env", "--sensitive"],
      {
        stdin: "cli-cloud-secret\n",
      },
    );
    expect(secret.code, secret.stderr).toBe(0);
    expect((await cli(["varsets", "set", "cli-creds", "region", "eu-1"])).code).toBe(0);
    expect(
      (await cli(["varsets", "set", "cli-creds", "TF_IN_AUTOMATION", "1", "--category", "env"]))
        .code,
    ).toBe(0);
    expectOneLineError(
      await cli(["varsets", "set", "cli-creds", "X", "1", "--env", "--category", "terraform"]),
      CLI_EXIT.usage,
      "contradict each other",
    );
    expectOneLineError(
      await cli(["varsets", "apply", "cli-creds"]),
      CLI_EXIT.usage,
      "exactly one of --project or --workspace",
    );
    const applied = await cli(["varsets", "apply", "cli-creds", "--project", "cli-network"]);
    expect(applied.code, applied.stderr).toBe(0);
    expect(applied.stderr).toContain("applies to project cli-network");
    expect((await cli(["vars", "set", "cli-proj-ws", "region", "own-region"])).code).toBe(0);

    const shown = await cli(["varsets", "show", "cli-creds"]);
    expect(shown.stdout).toMatch(/CLOUD_TOKEN\s+env\s+\(sensitive\)/);
    expect(shown.stdout).not.toContain("cli-cloud-secret");
    expect(shown.stdout).toMatch(/TF_IN_AUTOMATION\s+env\s+1/);
    const effective = await cli(["vars", "effective", "cli-proj-ws"]);
    expect(effective.stdout).toMatch(/region\s+terraform\s+eu-1\s+priority set cli-creds/);
    expect(effective.stdout).toMatch(/CLOUD_TOKEN\s+env\s+\(sensitive\)\s+priority set cli-creds/);

    const other = await cli(["varsets", "apply", "cli-creds", "--workspace", "cli-proj-ws"]);
    expect(other.code, other.stderr).toBe(0);
    expect((await cli(["varsets", "list"])).stdout).toMatch(
      /cli-creds\s+true\s+3\s+project cli-network, workspace cli-proj-ws/,
    );
    expect(
      (await cli(["varsets", "unapply", "cli-creds", "--workspace", "cli-proj-ws"])).code,
    ).toBe(0);
    expectOneLineError(
      await cli(["projects", "delete", "cli-network"]),
      CLI_EXIT.requestFailed,
      "still holds 1 workspace",
    );
    expect((await cli(["workspaces", "delete", "cli-proj-ws"])).code).toBe(0);
    expect((await cli(["projects", "delete", "cli-network"])).code).toBe(0);
    expect((await cli(["varsets", "delete", "cli-creds"])).code).toBe(0);
    // Some thirty CLI processes, each a Node start: slow on a loaded machine.
  }, 180_000);

  it("sets a pool's autoscaling settings and shows its autoscaling signal", async () => {
    const created = await cli([
      "pools",
      "create",
      "scaled-pool",
      "--min-agents",
      "1",
      "--max-agents",
      "4",
      "--jobs-per-agent",
      "2",
    ]);
    expect(created.code, created.stderr).toBe(0);
    const poolId = created.stdout.trim();
    expect((await cli(["pools", "show", poolId])).stdout).toContain(
      "autoscaling: 1 to 4 agents, 2 jobs per agent",
    );
    expect((await cli(["pools", "update", poolId, "--max-agents", "6"])).code).toBe(0);
    expect(JSON.parse((await cli(["pools", "show", poolId, "--json"])).stdout)).toMatchObject({
      minAgents: 1,
      maxAgents: 6,
      jobsPerAgent: 2,
    });
    expectOneLineError(
      await cli(["pools", "update", poolId, "--max-agents", "four"]),
      CLI_EXIT.usage,
      "--max-agents must be a whole number",
    );
    expectOneLineError(
      await cli(["pools", "update", poolId, "--min-agents", "7"]),
      CLI_EXIT.requestFailed,
      "minAgents (7) must not be above maxAgents (6)",
    );
    const signal = await cli(["pools", "autoscaling", poolId]);
    expect(signal.code, signal.stderr).toBe(0);
    expect(signal.stdout).toBe(
      "desired agents: 1 (between 1 and 6)\njobs: 0 queued, 0 running\nagents: 0 idle, 0 busy\n",
    );
    expect(JSON.parse((await cli(["pools", "autoscaling", poolId, "--json"])).stdout)).toEqual({
      desiredAgents: 1,
      queuedJobs: 0,
      runningJobs: 0,
      idleAgents: 0,
      busyAgents: 0,
      minAgents: 1,
      maxAgents: 6,
    });
    expect((await cli(["pools", "delete", poolId])).code).toBe(0);
  });

  it("manages OIDC trusts, token lifetimes and workload identity", async () => {
    const pool = await cli(["pools", "create", "oidc-pool", "--max-token-expiration", "900"]);
    expect(pool.code).toBe(0);
    const poolId = pool.stdout.trim();
    expect((await cli(["pools", "show", poolId])).stdout).toContain("live at most 900s");
    const added = await cli([
      "oidc-trusts",
      "add",
      poolId,
      "--issuer",
      "https://token.actions.githubusercontent.com",
      "--audience",
      "outpost",
      "--claim",
      "repository=acme/*",
      "--claim",
      "job_workflow_ref=acme/infra/.github/workflows/agent.yml@refs/heads/main",
      "--description",
      "CI runners",
    ]);
    expect(added.code).toBe(0);
    const trustId = added.stdout.trim();
    expect(trustId).toMatch(/^otr_/);
    const listed = await cli(["oidc-trusts", "list", poolId]);
    expect(listed.stdout).toMatch(
      /otr_\S+\s+https:\/\/token\.actions\.githubusercontent\.com\s+outpost\s+repository=acme\/\* job_workflow_ref=acme\/infra\/\.github\/workflows\/agent\.yml@refs\/heads\/main\s+CI runners/,
    );
    const [trust] = JSON.parse((await cli(["oidc-trusts", "list", poolId, "--json"])).stdout) as {
      claims: Record<string, string>;
    }[];
    expect(trust?.claims).toEqual({
      repository: "acme/*",
      job_workflow_ref: "acme/infra/.github/workflows/agent.yml@refs/heads/main",
    });
    expectOneLineError(
      await cli(["oidc-trusts", "add", poolId, "--issuer", "https://x.test", "--audience", "a"]),
      CLI_EXIT.usage,
      "--claim",
    );
    expectOneLineError(
      await cli([
        ...["oidc-trusts", "add", poolId, "--issuer", "https://x.test", "--audience", "a"],
        ...["--claim", "sub"],
      ]),
      CLI_EXIT.usage,
      "NAME=PATTERN",
    );
    expectOneLineError(
      await cli([
        ...["oidc-trusts", "add", poolId, "--issuer", "http://example.com", "--audience", "a"],
        ...["--claim", "sub=x"],
      ]),
      CLI_EXIT.requestFailed,
      "https",
    );
    // An agent logs in through a loopback issuer: its token is listed as issued by OIDC.
    const k8s = issuer.issuer("k8s");
    const loopback = await cli([
      ...["oidc-trusts", "add", poolId, "--issuer", k8s, "--audience", "outpost"],
      ...["--claim", "sub=system:serviceaccount:ci:*"],
    ]);
    expect(loopback.code).toBe(0);
    const exchanged = await fetch(`${world.coordinator.url}/agent/v1/oidc/exchange`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        poolId,
        oidcToken: await signWith(issuerKey, {
          iss: k8s,
          aud: "outpost",
          sub: "system:serviceaccount:ci:agent-9",
        }),
        tokenExpirationSeconds: 3600,
      }),
    });
    expect(exchanged.status).toBe(200);
    const { expiresAt } = (await exchanged.json()) as { expiresAt: string };
    const tokens = await cli(["agent-tokens", "list", poolId]);
    expect(tokens.stdout).toMatch(
      new RegExp(
        `OIDC system:serviceaccount:ci:agent-9\\s+\\S+\\s+-\\s+${escapeRegExp(expiresAt)}`,
      ),
    );
    expect(tokens.stdout).toContain(expiresAt);
    const removed = await cli(["oidc-trusts", "remove", poolId, loopback.stdout.trim()]);
    expect(removed.code).toBe(0);
    expect(removed.stderr).toContain("revoked 1 agent token(s)");
    expect((await cli(["agent-tokens", "list", poolId, "--json"])).stdout.trim()).toBe("[]");
    expect((await cli(["oidc-trusts", "remove", poolId, trustId])).code).toBe(0);
    expect((await cli(["oidc-trusts", "list", poolId, "--json"])).stdout.trim()).toBe("[]");
    expect((await cli(["pools", "delete", poolId])).code).toBe(0);

    const ws = await cli([
      ...["workspaces", "create", "oidc-ws", "--engine-version", ENGINE_VERSION],
      ...["--workload-identity", "--workload-identity-audience", "sts.amazonaws.com"],
    ]);
    expect(ws.code).toBe(0);
    expect((await cli(["workspaces", "show", "oidc-ws"])).stdout).toContain(
      "workload identity: on, audience sts.amazonaws.com",
    );
    const off = await cli([
      ...["workspaces", "update", "oidc-ws", "--no-workload-identity"],
      ...["--workload-identity-audience", ""],
    ]);
    expect(off.stdout).toContain("workload identity: off");
    const shown = JSON.parse((await cli(["workspaces", "show", "oidc-ws", "--json"])).stdout);
    expect(shown).toMatchObject({ workloadIdentity: false, workloadIdentityAudience: null });
    expect((await cli(["workspaces", "delete", "oidc-ws"])).code).toBe(0);
  });

  it("run --auto-approve packs honouring .terraformignore, follows plan and apply, exits 0", async () => {
    const dir = configDir({
      "main.tf": `variable "word" {}\n# standin:print var.word\n${resource("a", "1")}`,
      "ignored.tf": resource("ignored", "must not be uploaded"),
      ".terraformignore": "ignored.tf\n",
      ".git/config": "[core]\n",
      ".terraform/terraform.tfstate": "{}",
    });
    const result = await cli(["run", dir, "-w", "cli-ws", "--auto-approve"]);
    expect(result.stderr).toMatch(/Run run_\w+ applied/);
    expect(result.code).toBe(CLI_EXIT.ok);
    expect(result.stdout).toContain("Plan: 1 to add, 0 to change, 0 to destroy.");
    expect(result.stdout).toContain('var.word = "***"');
    expect(result.stdout).toContain("Apply complete! Resources: 1 added");
    expect(result.stdout.indexOf("Plan: 1 to add")).toBeLessThan(
      result.stdout.indexOf("Apply complete"),
    );
    expect(result.stdout).not.toContain("swordfish");
    const wsId = JSON.parse((await cli(["workspaces", "show", "cli-ws", "--json"])).stdout).id;
    expect(await stateVersions(world, wsId)).toHaveLength(1);
  });

  it("a plan waiting for confirmation exits 0; confirm --follow applies it", async () => {
    const dir = configDir({ "main.tf": resource("a", "2") });
    const planned = await cli(["run", dir, "-w", "cli-ws"]);
    expect(planned.code).toBe(CLI_EXIT.ok);
    const runId = /waits for confirmation: outpost confirm (run_\w+)/.exec(planned.stderr)?.[1];
    expect(runId).toBeDefined();
    const confirmed = await cli(["confirm", String(runId), "--follow"]);
    expect(confirmed.code).toBe(CLI_EXIT.ok);
    expect(confirmed.stdout).toContain("Apply complete! Resources: 0 added, 1 changed");
    const logs = await cli(["logs", String(runId), "--phase", "apply", "--follow"]);
    expect(logs.code).toBe(CLI_EXIT.ok);
    expect(logs.stdout).toBe(confirmed.stdout);
    expect((await cli(["logs", String(runId)])).stdout).toContain("Plan: 0 to add, 1 to change");
    expectOneLineError(await cli(["discard", String(runId)]), CLI_EXIT.requestFailed, "applied");
  });

  it("exit codes: 1 when the run errors, 0 for a speculative plan, 3 when canceled with Ctrl-C", async () => {
    const failing = await cli([
      "run",
      configDir({ "main.tf": "# standin:fail-plan\n" }),
      "-w",
      "cli-ws",
    ]);
    expect(failing.code).toBe(CLI_EXIT.runErrored);
    expect(failing.stdout).toContain("Error: Invalid reference");
    expect(failing.stderr).toMatch(/errored: terraform plan exited with code 1/);

    const speculative = await cli([
      "run",
      configDir({ "main.tf": resource("a", "9") }),
      "-w",
      "cli-ws",
      "--plan-only",
    ]);
    expect(speculative.code).toBe(CLI_EXIT.ok);
    expect(speculative.stderr).toContain("(speculative)");

    expect(
      (await cli(["vars", "set", "cli-ws", "STANDIN_PLAN_SLEEP_MS", "120000", "--env"])).code,
    ).toBe(0);
    let interrupted = false;
    const canceled = await cli(
      ["run", configDir({ "main.tf": resource("a", "3") }), "-w", "cli-ws"],
      {
        onStdout: (text, child) => {
          if (!interrupted && text.includes("standin: planning")) {
            interrupted = true;
            child.kill("SIGINT");
          }
        },
      },
    );
    expect(interrupted).toBe(true);
    expect(canceled.stderr).toContain("Canceling run");
    expect(canceled.code).toBe(CLI_EXIT.runCanceled);
    expect(canceled.stdout).toContain("Interrupt received.");
    expect((await cli(["vars", "delete", "cli-ws", "STANDIN_PLAN_SLEEP_MS"])).code).toBe(0);
  });

  // Two applies through the CLI and the agent: past the 60 s default on a loaded two-core host.
  it("workspaces default to the newest mirror version; state and outputs; runs show names the agent", async () => {
    const created = await cli(["workspaces", "create", "cli-state", "--pool", world.poolId]);
    expect(created.code).toBe(CLI_EXIT.ok);
    expect(created.stderr).toBe("Created workspace cli-state (agent, terraform latest)\n");
    const outputsTf = (url: string, secret: string) =>
      `output "url" { value = "${url}" }\noutput "secret" {\n  value = "${secret}"\n  sensitive = true\n}\n`;
    const first = await cli([
      "run",
      configDir({ "main.tf": resource("a", "1") + outputsTf("https://one.internal", "s3cret-1") }),
      "-w",
      "cli-state",
      "--auto-approve",
    ]);
    expect(first.code, first.stderr).toBe(CLI_EXIT.ok);
    const runId = /Queued run (run_\w+): (\S+)/.exec(first.stderr);
    expect(runId?.[2]).toBe(`${world.coordinator.url}/ui/runs/${runId?.[1]}`);
    const lines = first.stdout.split("\n");
    expect(lines[0]).toMatch(
      /^Outpost agent (\S+ \()?agt_\w+\)? v\S+ in pool pool_\w+, isolation (bwrap|none): plan job run_\w+:plan for run/,
    );
    expect(first.stdout).toContain('Resolving terraform "latest" against');
    expect(first.stdout).toContain(
      `Using terraform ${ENGINE_VERSION} (newest for "latest" in ${world.mirror.url}/terraform/index.json)`,
    );
    const second = await cli([
      "run",
      configDir({ "main.tf": resource("a", "2") + outputsTf("https://two.internal", "s3cret-2") }),
      "-w",
      "cli-state",
      "--auto-approve",
    ]);
    expect(second.code, second.stderr).toBe(CLI_EXIT.ok);

    const shown = await cli(["runs", "show", String(runId?.[1])]);
    expect(shown.code).toBe(CLI_EXIT.ok);
    // Aligned: every value starts in the same column.
    const columns = shown.stdout
      .trimEnd()
      .split("\n")
      .map((line) => /^\S[^:]*:\s+/.exec(line)?.[0].length);
    expect(new Set(columns).size).toBe(1);
    expect(shown.stdout).toMatch(/^Run:\s+run_\w+$/m);
    expect(shown.stdout).toMatch(/^Status:\s+applied$/m);
    expect(shown.stdout).toMatch(/^Plan:\s+1 to add, 0 to change, 0 to destroy$/m);
    expect(shown.stdout).toMatch(
      new RegExp(
        `^Plan agent:\\s+(\\S+ \\()?agt_\\w+\\)? v\\S+, pool ${world.poolId}, isolation (bwrap|none), engine ${escapeRegExp(ENGINE_VERSION)}$`,
        "m",
      ),
    );
    expect(shown.stdout).toMatch(new RegExp(`^URL:\\s+${escapeRegExp(String(runId?.[2]))}$`, "m"));
    const asJson = JSON.parse((await cli(["runs", "show", String(runId?.[1]), "--json"])).stdout);
    expect(asJson.jobs.map((j: { engineVersion: string }) => j.engineVersion)).toEqual([
      ENGINE_VERSION,
      ENGINE_VERSION,
    ]);

    // Every run of the organization, without naming a workspace, filtered and as JSON.
    const all = await cli(["runs", "list"]);
    expect(all.code, all.stderr).toBe(CLI_EXIT.ok);
    expect(all.stdout.split("\n")[0]).toMatch(
      /^ID\s+WORKSPACE\s+STATUS\s+OPERATION\s+SOURCE\s+AGENTS/,
    );
    expect(all.stdout).toContain(String(runId?.[1]));
    const applied = JSON.parse(
      (await cli(["runs", "list", "--status", "applied", "--pool", world.poolId, "--json"])).stdout,
    ) as { id: string; status: string; source: string }[];
    expect(applied.map((r) => r.id)).toContain(String(runId?.[1]));
    expect(new Set(applied.map((r) => r.status))).toEqual(new Set(["applied"]));
    const ofWorkspace = JSON.parse((await cli(["runs", "list", "cli-state", "--json"])).stdout) as {
      id: string;
    }[];
    expect(ofWorkspace.map((r) => r.id)).toContain(String(runId?.[1]));
    // cli-state went to the default project; a project without runs lists none.
    const ofProject = JSON.parse(
      (await cli(["runs", "list", "--project", "Default Project", "--json"])).stdout,
    ) as { id: string }[];
    expect(ofProject.map((r) => r.id)).toContain(String(runId?.[1]));
    expect((await cli(["projects", "create", "cli-empty"])).code).toBe(CLI_EXIT.ok);
    const empty = await cli(["runs", "list", "--project", "cli-empty", "--json"]);
    expect(empty.code, empty.stderr).toBe(CLI_EXIT.ok);
    expect(JSON.parse(empty.stdout)).toEqual([]);
    expectOneLineError(await cli(["runs", "list", "--limit", "0"]), CLI_EXIT.usage, "--limit");

    const outputs = await cli(["outputs", "cli-state"]);
    // As terraform output prints them.
    expect(outputs.stdout).toBe('secret = <sensitive>\nurl = "https://two.internal"\n');
    const outputsJson = JSON.parse((await cli(["outputs", "cli-state", "--json"])).stdout);
    expect(outputsJson.secret).toEqual({ value: null, type: "string", sensitive: true });
    expect((await cli(["outputs", "cli-state", "--reveal"])).stdout).toContain("s3cret-2");

    // Resources by address, as terraform state list and state show print them.
    const resources = await cli(["state", "list", "cli-state"]);
    expect(resources).toMatchObject({ code: CLI_EXIT.ok, stdout: "null_resource.a\n" });
    const shownResource = await cli(["state", "show", "cli-state", "null_resource.a"]);
    expect(shownResource.code, shownResource.stderr).toBe(CLI_EXIT.ok);
    expect(shownResource.stdout).toMatch(
      /^# null_resource\.a:\nresource "null_resource" "a" \{\n {4}id {4}= "[^"]+"\n {4}value = "2"\n\}\n$/,
    );
    expectOneLineError(
      await cli(["state", "show", "cli-state", "terraform_data.hello"]),
      CLI_EXIT.usage,
      "no resource terraform_data.hello in the state of cli-state (see outpost state list cli-state)",
    );
    const list = await cli(["state", "versions", "cli-state"]);
    expect(list.stdout.split("\n")[0]).toMatch(/^SERIAL\s+ID\s+LINEAGE\s+WRITTEN\s+BY\s+SIZE$/);
    expect(list.stdout).toMatch(/current/);
    // WRITTEN BY names who confirmed the run (the saved owner token, by its description), and the run.
    const firstSerial =
      /^(\d+)\s+sv_\w+\s+\w+\s+\S+\s+owner token created with the organization \(run_\w+\)/m.exec(
        list.stdout.split("\n").slice(-2)[0] ?? "",
      );
    expect(firstSerial?.[1]).toBe("1");
    const old = await cli(["state", "version", "cli-state", "1"]);
    expect(old.stdout).toMatch(/^Serial: +1$/m);
    expect(old.stdout).toContain("url     https://one.internal");
    expect(old.stdout).toContain("secret  (sensitive)");
    expect(old.stdout).not.toContain("s3cret");
    const pulled = JSON.parse((await cli(["state", "pull", "cli-state"])).stdout);
    expect(pulled.outputs.url.value).toBe("https://two.internal");
    expectOneLineError(
      await cli(["state", "rollback", "cli-state", "1"]),
      CLI_EXIT.usage,
      "add --yes",
    );
    const rolled = await cli(["state", "rollback", "cli-state", "1", "--yes"]);
    expect(rolled.code).toBe(CLI_EXIT.ok);
    expect(rolled.stderr).toMatch(
      /^Rolled back to serial 1: the current state is now serial \d+ \(sv_\w+\)$/m,
    );
    expect((await cli(["outputs", "cli-state"])).stdout).toContain("https://one.internal");
  }, 120_000);

  it("manages notifications: the secret shown once, verify signed deliveries, enable and disable", async () => {
    // A loopback receiver that answers 500 to its first request, then 200.
    const received: { headers: Record<string, string>; body: string }[] = [];
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (chunk: Buffer) => chunks.push(chunk));
      req.on("end", () => {
        received.push({
          headers: req.headers as Record<string, string>,
          body: Buffer.concat(chunks).toString("utf8"),
        });
        res.writeHead(received.length === 1 ? 500 : 200).end();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
      expect((await cli(["workspaces", "create", "cli-notify", "--pool", world.poolId])).code).toBe(
        CLI_EXIT.ok,
      );
      const created = await cli([
        "notifications",
        "create",
        "cli-notify",
        "--name",
        "ops",
        "--url",
        url,
        "--triggers",
        "run:errored,assessment:drifted",
      ]);
      expect(created.code, created.stderr).toBe(CLI_EXIT.ok);
      const secret = created.stdout.trim();
      expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]+=*$/);
      const id = /Created notification (nc_\w+)/.exec(created.stderr)?.[1] ?? "";
      expect(id).toMatch(/^nc_/);

      const listed = await cli(["notifications", "list", "cli-notify"]);
      expect(listed.stdout.split("\n")[0]).toMatch(/^ID\s+NAME\s+TYPE\s+ENABLED\s+URL\s+TRIGGERS/);
      expect(listed.stdout).toMatch(
        new RegExp(`${id}\\s+ops\\s+generic\\s+yes\\s+\\S+\\s+run:errored,assessment:drifted`),
      );
      expect(listed.stdout).not.toContain("whsec_");

      // The receiver's 500 first: verify says so and exits 1; then a delivered one, signed.
      const refused = await cli(["notifications", "verify", id]);
      expect(refused.code).toBe(CLI_EXIT.runErrored);
      expect(refused.stdout).toMatch(/^failed \(500\)/);
      const delivered = await cli(["notifications", "verify", id]);
      expect(delivered.code, delivered.stderr).toBe(CLI_EXIT.ok);
      expect(delivered.stdout).toBe("delivered (200)\n");
      const [, last] = received;
      expect(last).toBeDefined();
      const payload = new Webhook(secret).verify(last?.body ?? "", last?.headers ?? {}) as {
        type: string;
      };
      expect(payload.type).toBe("verification");
      const history = await cli(["notifications", "deliveries", id, "--json"]);
      expect(
        (JSON.parse(history.stdout) as { status: string }[]).map((d) => d.status).sort(),
      ).toEqual(["delivered", "failed"]);

      const disabled = await cli(["notifications", "update", id, "--disable", "--json"]);
      expect(JSON.parse(disabled.stdout)).toMatchObject({ id, enabled: false });
      expectOneLineError(
        await cli(["notifications", "update", id, "--enable", "--disable"]),
        CLI_EXIT.usage,
        "--enable and --disable",
      );
      const rotated = await cli(["notifications", "rotate-secret", id]);
      expect(rotated.stdout.trim()).toMatch(/^whsec_/);
      expect(rotated.stdout.trim()).not.toBe(secret);
      expectOneLineError(
        await cli([
          "notifications",
          "create",
          "cli-notify",
          "--name",
          "x",
          "--url",
          "http://hooks.example.com/x",
        ]),
        CLI_EXIT.requestFailed,
        "https",
      );
      expect((await cli(["notifications", "delete", id])).code).toBe(CLI_EXIT.ok);
      expect((await cli(["notifications", "list", "cli-notify", "--json"])).stdout.trim()).toBe(
        "[]",
      );
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it("says where a refused token came from", async () => {
    const bad = `op_org_${"B".repeat(43)}`;
    expectOneLineError(
      await cli(["whoami"], { env: { OUTPOST_TOKEN: bad } }),
      CLI_EXIT.requestFailed,
      "the token comes from OUTPOST_TOKEN",
    );
  });

  it("refuses plain http to a host that is not loopback unless --insecure-http allows it", async () => {
    const lan = { OUTPOST_ADDRESS: "http://outpost.invalid", OUTPOST_TOKEN: world.ownerToken };
    const refusal =
      "http://outpost.invalid is plain http to a host that is not loopback: tokens, secrets and agent updates would cross the network unencrypted, and anyone on the way could answer in the coordinator's place; use https, or allow it with outpost login --insecure-http (or OUTPOST_INSECURE_HTTP=1) on a network you trust";
    expectOneLineError(await cli(["whoami"], { env: lan }), CLI_EXIT.usage, refusal);
    expectOneLineError(
      await cli(["login", "--address", "http://outpost.invalid"], { stdin: world.ownerToken }),
      CLI_EXIT.usage,
      refusal,
    );
    // Allowed, it goes on to the network (where this name does not resolve).
    const reach = "cannot reach http://outpost.invalid";
    expectOneLineError(
      await cli(["whoami"], { env: { ...lan, OUTPOST_INSECURE_HTTP: "1" } }),
      CLI_EXIT.requestFailed,
      reach,
    );
    expectOneLineError(
      await cli(["login", "--address", "http://outpost.invalid", "--insecure-http"], {
        stdin: world.ownerToken,
      }),
      CLI_EXIT.requestFailed,
      reach,
    );
    const saved = configDir({
      "outpost/config.json": JSON.stringify({
        address: "http://outpost.invalid",
        token: world.ownerToken,
        insecureHttp: true,
      }),
    });
    expectOneLineError(
      await cli(["whoami"], { env: { XDG_CONFIG_HOME: saved } }),
      CLI_EXIT.requestFailed,
      reach,
    );
  });

  it("prints usage and request errors as one line with distinct exit codes", async () => {
    expectOneLineError(await cli(["frobnicate"]), CLI_EXIT.usage, "unknown command 'frobnicate'");
    expectOneLineError(
      await cli(["workspace", "list"]),
      CLI_EXIT.usage,
      "unknown command 'workspace' (Did you mean workspaces?)",
    );
    expectOneLineError(
      await cli(["vars", "set", "cli-ws"]),
      CLI_EXIT.usage,
      "missing required argument 'KEY'",
    );
    expectOneLineError(await cli(["run", "."]), CLI_EXIT.usage, "missing --workspace");
    expectOneLineError(await cli(["workspaces", "list", "--colour"]), CLI_EXIT.usage, "--colour");
    expectOneLineError(
      await cli(["run", configDir({ "README.md": "no terraform here" }), "-w", "cli-ws"]),
      CLI_EXIT.usage,
      "no .tf files",
    );
    expectOneLineError(
      await cli(["workspaces", "show", "does-not-exist"]),
      CLI_EXIT.requestFailed,
      "no workspace named does-not-exist in this organization",
    );
    expectOneLineError(
      await cli(["whoami"], { env: { OUTPOST_ADDRESS: "http://127.0.0.1:9" } }),
      CLI_EXIT.requestFailed,
      "cannot reach http://127.0.0.1:9",
    );
    // An address with the API's path is refused as the agent refuses it, with the fix.
    expectOneLineError(
      await cli(["whoami"], { env: { OUTPOST_ADDRESS: `${world.coordinator.url}/api/v1` } }),
      CLI_EXIT.usage,
      `${world.coordinator.url}/api/v1 has a path (/api/v1): give the coordinator's base URL, ${world.coordinator.url}`,
    );
    expectOneLineError(
      await cli(["login", "--address", `${world.coordinator.url}/api/v1`], {
        stdin: world.ownerToken,
      }),
      CLI_EXIT.usage,
      "has a path (/api/v1)",
    );
    const help = await cli(["run", "--help"]);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/^Usage: outpost run \[options\] \[DIR\]/);
    expect(help.stdout).toContain("--plan-only");
    const version = await cli(["--version"]);
    expect(version).toMatchObject({ code: 0, stdout: `${AGENT_VERSION}\n` });
    const bare = await cli([]);
    expect(bare.code).toBe(CLI_EXIT.usage);
    expect(bare.stderr).toContain("Usage: outpost [options] [command]");
  });
});
