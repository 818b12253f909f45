import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { JobIsolation } from "../../agent/src/job/containment.ts";
import { startJob } from "../../agent/src/job/runner.ts";
import type { JobSettings, JobVariable, RunnerJob } from "../../agent/src/job/types.ts";
import { bubblewrapIsolation } from "./helpers/isolation.ts";
import { MirrorServer } from "./helpers/mirror.ts";
import { type TestSigner, testSigner, trustedKeyOf } from "./helpers/signing.ts";
import { StateServer } from "./helpers/state-server.ts";
import { buildTarGz, type TarEntry } from "./helpers/tarball.ts";
import { TestPort } from "./helpers/test-port.ts";

const RUN_TOKEN = "op_run_Zx9sEcReT-runtoken-0123456789abcdef";
const WS = "ws_runner";
const mirror = new MirrorServer();
const state = new StateServer({ [WS]: RUN_TOKEN, ws_other: RUN_TOKEN });
let base: string;
let settings: JobSettings;
let port: TestPort;
let runCounter = 0;
let sandboxed: JobIsolation;
let signer: TestSigner;

beforeAll(async () => {
  [signer] = await Promise.all([testSigner(), mirror.start(), state.start()]);
  mirror.signer = signer;
  mirror.publish("terraform", "1.9.5");
  base = mkdtempSync(path.join(tmpdir(), "outpost-runner-"));
  sandboxed = await bubblewrapIsolation({ agentHome: process.env.HOME ?? null });
});
afterAll(async () => {
  await Promise.all([mirror.stop(), state.stop()]);
  rmSync(base, { recursive: true, force: true });
});
beforeEach(() => {
  port = new TestPort();
  const hooksDir = mkdtempSync(path.join(base, "hooks-"));
  settings = {
    dataDir: path.join(base, "data"),
    hooksDir,
    hookTimeoutMs: 10_000,
    envForward: ["ALLOWED_*"],
    hostEnv: { ...process.env, ALLOWED_HOST_VAR: "forwarded", SECRET_HOST_VAR: "must-not-leak" },
    networkEnv: {},
    releaseMirror: mirror.url,
    engineKeyring: [trustedKeyOf(signer)],
    allowFileRepos: false,
    cancelGraceMs: 10_000,
    maxConfigurationBytes: 10 * 1024 * 1024,
    // The agent's default on Linux: every job process in a bubblewrap sandbox.
    isolation: sandboxed,
  };
});

function publishConfig(entries: TarEntry[]): { url: string; sha256: string } {
  const data = buildTarGz(entries);
  const url = `https://coordinator.test/config/${++runCounter}`;
  port.configurations.set(url, data);
  return { url, sha256: createHash("sha256").update(data).digest("hex") };
}

function assignment(overrides: Partial<RunnerJob> & { files?: Record<string, string> }): RunnerJob {
  const { files, ...rest } = overrides;
  const runId = `run_${runCounter + 1}`;
  return {
    jobId: `${runId}:plan`,
    runId,
    workspaceId: WS,
    workspaceName: "networking-prod",
    phase: "plan",
    operation: "plan",
    isSpeculative: false,
    engine: "terraform",
    engineVersion: "1.9.5",
    stackName: null,
    workingDirectory: "",
    variables: [],
    withheldVariables: [],
    source: {
      kind: "configuration",
      ...publishConfig(
        Object.entries(files ?? { "main.tf": "" }).map(([name, body]) => ({ name, body })),
      ),
    },
    runToken: RUN_TOKEN,
    stateAddress: state.stateAddress(WS),
    isFork: false,
    planSha256: null,
    ...rest,
  };
}

function hook(name: string, script: string): void {
  const file = path.join(settings.hooksDir, name);
  writeFileSync(file, `#!/bin/sh\n${script}\n`);
  chmodSync(file, 0o755);
}

const envVar = (key: string, value: string, sensitive = false): JobVariable => ({
  key,
  value,
  category: "env",
  isHcl: false,
  isSensitive: sensitive,
});
const tfVar = (key: string, value: string, extra: Partial<JobVariable> = {}): JobVariable => ({
  key,
  value,
  category: "terraform",
  isHcl: false,
  isSensitive: false,
  ...extra,
});

function jobDirs(): string[] {
  try {
    return readdirSync(path.join(settings.dataDir, "jobs"));
  } catch {
    return [];
  }
}

describe("job runner", () => {
  it("plans, uploads artifacts and summary, then applies the saved plan into the state backend", async () => {
    const main =
      'variable "region" {}\nvariable "db_password" {}\nvariable "tags" {}\n# standin:print var.db_password\n# standin:print var.tags\nresource "null_resource" "web" { value = var.region }\n';
    const plan = assignment({
      files: { "main.tf": main },
      variables: [
        tfVar("region", "eu-west-1"),
        tfVar("db_password", "Sup3r-S3cret-Value", { isSensitive: true }),
        tfVar("tags", '{ team = "net" }', { isHcl: true }),
        envVar(
          "STANDIN_PRINT_ENV",
          "ALLOWED_HOST_VAR,SECRET_HOST_VAR,HOME,TF_IN_AUTOMATION,TF_INPUT,OUTPOST_RUN_ID,OUTPOST_WORKSPACE_NAME,OUTPOST_JOB_ID,WS_ENV,TF_HTTP_PASSWORD",
        ),
        envVar("WS_ENV", "from-workspace"),
      ],
    });
    const planned = await startJob(plan, port.forJob(plan.jobId), settings).done;
    const planLog = port.log(plan.jobId);
    expect(planned, planLog).toMatchObject({
      outcome: "succeeded",
      exitCode: 0,
      planSummary: { adds: 1, changes: 0, destroys: 0, imports: 0, sames: 0, hasChanges: true },
    });
    expect(planned.logLength).toBe(Buffer.byteLength(planLog));
    expect(planLog).toContain("Downloading terraform 1.9.5");
    expect(planLog).toContain("Plan: 1 to add, 0 to change, 0 to destroy.");
    expect(planLog).toContain('var.db_password = "***"');
    expect(planLog).toContain('var.tags = "{ team = \\"net\\" }"');
    expect(planLog).not.toContain("Sup3r-S3cret-Value");
    expect(planLog).not.toContain(RUN_TOKEN);
    expect(planLog).toContain('env.TF_HTTP_PASSWORD = "***"');
    expect(planLog).toContain('env.ALLOWED_HOST_VAR = "forwarded"');
    expect(planLog).toContain("env.SECRET_HOST_VAR = null");
    expect(planLog).toContain('env.TF_IN_AUTOMATION = "1"');
    expect(planLog).toContain('env.TF_INPUT = "0"');
    expect(planLog).toContain(`env.OUTPOST_RUN_ID = "${plan.runId}"`);
    expect(planLog).toContain('env.OUTPOST_WORKSPACE_NAME = "networking-prod"');
    expect(planLog).toContain('env.WS_ENV = "from-workspace"');
    expect(planLog).toMatch(
      new RegExp(`env.HOME = "${settings.dataDir}/jobs/run_\\d+_plan-\\w+/home"`),
    );
    expect([...port.artifacts.keys()].sort()).toEqual(["lock-file", "plan-file", "plan-json"]);
    expect(port.artifacts.get("lock-file")?.toString()).toContain("hashicorp/null");
    expect(jobDirs()).toEqual([]);

    const apply = {
      ...plan,
      jobId: `${plan.runId}:apply`,
      phase: "apply" as const,
      planSha256: port.sha256("plan-file"),
    };
    const applied = await startJob(apply, port.forJob(apply.jobId), settings).done;
    const applyLog = port.log(apply.jobId);
    expect(applied, applyLog).toMatchObject({
      outcome: "succeeded",
      exitCode: 0,
      planSummary: null,
    });
    expect(applyLog).toContain(
      "Reusing previous version of hashicorp/null from the dependency lock file",
    );
    expect(applyLog).toContain("Apply complete! Resources: 1 added, 0 changed, 0 destroyed.");
    expect(state.currentState(WS)).toMatchObject({
      serial: 1,
      resources: [{ name: "web", instances: [{ attributes: { value: "eu-west-1" } }] }],
    });
    expect(jobDirs()).toEqual([]);

    const again = assignment({ files: { "main.tf": main }, variables: plan.variables.slice(0, 3) });
    const noChanges = await startJob(again, port.forJob(again.jobId), settings).done;
    expect(noChanges).toMatchObject({
      outcome: "succeeded",
      planSummary: { adds: 0, changes: 0, destroys: 0, hasChanges: false },
    });
    expect(port.log(again.jobId)).toContain("No changes.");
  });

  it("plans destroy and speculative plans without taking the state lock", async () => {
    const destroy = assignment({
      operation: "destroy",
      files: { "main.tf": 'resource "null_resource" "web" { value = "x" }\n' },
    });
    const result = await startJob(destroy, port.forJob(destroy.jobId), settings).done;
    expect(result.planSummary).toMatchObject({ destroys: 1, adds: 0 });
    state.requests.length = 0;
    const speculative = assignment({
      isSpeculative: true,
      files: { "main.tf": 'resource "x" "y" {}\n' },
    });
    expect(
      (await startJob(speculative, port.forJob(speculative.jobId), settings).done).outcome,
    ).toBe("succeeded");
    expect(state.requests.map((r) => r.method)).toEqual(["GET"]);
  });

  it("runs hooks in order, exports their variables to the next engine command, logs their output", async () => {
    hook(
      "pre-plan",
      'echo "pre-plan says hi in $OUTPOST_WORKSPACE_NAME"\necho "FROM_HOOK=hello world" >> "$OUTPOST_AGENT_ENV"\necho "# comment" >> "$OUTPOST_AGENT_ENV"\necho "PATH=/evil" >> "$OUTPOST_AGENT_ENV"',
    );
    hook("post-plan", 'echo "post-plan sees plan file: $(ls plan.tfplan)"');
    const job = assignment({
      files: { "main.tf": "" },
      variables: [envVar("STANDIN_PRINT_ENV", "FROM_HOOK")],
    });
    const result = await startJob(job, port.forJob(job.jobId), settings).done;
    const log = port.log(job.jobId);
    expect(result.outcome, log).toBe("succeeded");
    expect(log).toContain("Running pre-plan hook\npre-plan says hi in networking-prod");
    expect(log).toContain('env.FROM_HOOK = "hello world"');
    expect(log).toContain("ignored PATH exported by the pre-plan hook");
    expect(log).toContain("post-plan sees plan file: plan.tfplan");
    expect(log.indexOf("pre-plan says hi")).toBeLessThan(log.indexOf("$ terraform init"));
  });

  it("fails the job naming the hook when a hook exits non-zero or times out", async () => {
    hook("post-plan", "echo failing; exit 3");
    const failing = assignment({});
    const result = await startJob(failing, port.forJob(failing.jobId), settings).done;
    expect(result).toMatchObject({
      outcome: "failed",
      message: "hook post-plan failed: it exited with code 3",
    });
    expect(port.log(failing.jobId)).toContain("failing");

    rmSync(path.join(settings.hooksDir, "post-plan"));
    hook("pre-plan", "sleep 30");
    settings.hookTimeoutMs = 300;
    const slow = assignment({});
    const started = Date.now();
    expect(await startJob(slow, port.forJob(slow.jobId), settings).done).toMatchObject({
      outcome: "failed",
      message: "hook pre-plan timed out after 0.3s",
    });
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(jobDirs()).toEqual([]);
  });

  it("fails with the engine's exit code when the plan errors, and cleans up", async () => {
    const job = assignment({ files: { "main.tf": "# standin:fail-plan\n" } });
    const result = await startJob(job, port.forJob(job.jobId), settings).done;
    expect(result).toMatchObject({
      outcome: "failed",
      exitCode: 1,
      message: "terraform plan exited with code 1",
    });
    expect(port.log(job.jobId)).toContain("Error: Invalid reference");
    expect(jobDirs()).toEqual([]);
  });

  it("honours the working directory and refuses a hostile or tampered configuration", async () => {
    const nested = assignment({
      workingDirectory: "envs/prod",
      files: {
        "envs/prod/main.tf": 'resource "x" "nested" {}\n',
        "main.tf": "# standin:fail-plan\n",
      },
    });
    const ok = await startJob(nested, port.forJob(nested.jobId), settings).done;
    expect(ok.outcome, port.log(nested.jobId)).toBe("succeeded");

    const escaping = assignment({ workingDirectory: "../../.." });
    expect(await startJob(escaping, port.forJob(escaping.jobId), settings).done).toMatchObject({
      outcome: "failed",
      message: 'working directory "../../.." is outside the configuration',
    });

    const hostile = assignment({});
    hostile.source = {
      kind: "configuration",
      ...publishConfig([{ name: "../../../../outside.tf", body: "x" }]),
    };
    const refused = await startJob(hostile, port.forJob(hostile.jobId), settings).done;
    expect(refused).toMatchObject({ outcome: "failed" });
    expect(refused.message).toMatch(/points outside the configuration/);

    const tampered = assignment({});
    tampered.source = { kind: "configuration", url: hostile.source.url, sha256: "a".repeat(64) };
    expect((await startJob(tampered, port.forJob(tampered.jobId), settings).done).message).toMatch(
      /does not match/,
    );
    expect(jobDirs()).toEqual([]);
  });

  it("cancel during plan: the engine gets SIGINT, the job is reported canceled, the lock released", async () => {
    const job = assignment({
      files: { "main.tf": 'resource "x" "slow" {}\n' },
      variables: [envVar("STANDIN_PLAN_SLEEP_MS", "60000")],
    });
    const handle = startJob(job, port.forJob(job.jobId), settings);
    await expect
      .poll(() => port.log(job.jobId), { timeout: 20_000, interval: 50 })
      .toContain("standin: planning");
    handle.cancel({ force: false });
    const result = await handle.done;
    expect(result).toMatchObject({ outcome: "canceled", exitCode: 1 });
    expect(port.log(job.jobId)).toContain("Interrupt received.");
    expect(port.log(job.jobId)).toContain("the plan was canceled");
    expect(state.workspaces.get(WS)?.lock ?? null).toBeNull();
    expect(jobDirs()).toEqual([]);
  });

  it("force-cancel kills an engine that ignores SIGINT", async () => {
    const job = assignment({
      variables: [envVar("STANDIN_PLAN_SLEEP_MS", "60000"), envVar("STANDIN_IGNORE_SIGINT", "1")],
      isSpeculative: true,
    });
    const handle = startJob(job, port.forJob(job.jobId), settings);
    await expect
      .poll(() => port.log(job.jobId), { timeout: 20_000, interval: 50 })
      .toContain("standin: planning");
    handle.cancel({ force: false });
    await expect
      .poll(() => port.log(job.jobId), { timeout: 10_000, interval: 50 })
      .toContain("ignoring SIGINT");
    handle.cancel({ force: true });
    expect(await handle.done).toMatchObject({ outcome: "canceled", exitCode: null });
  });

  it("keeps the log exact when a log response is lost (resumes from the held length)", async () => {
    port.loseNextLogAnswer = 2;
    const job = assignment({});
    const result = await startJob(job, port.forJob(job.jobId), settings).done;
    const log = port.log(job.jobId);
    expect(result.outcome).toBe("succeeded");
    expect(log.match(/\$ terraform init/g)).toHaveLength(1);
    expect(result.logLength).toBe(Buffer.byteLength(log));
  });

  it("runs a VCS job from a cloned commit when file repositories are allowed", async () => {
    const repo = path.join(base, `repo-${runCounter}`);
    mkdirSync(repo);
    const git = (...args: string[]) =>
      execFileSync("git", args, {
        cwd: repo,
        env: {
          PATH: process.env.PATH,
          HOME: base,
          GIT_AUTHOR_NAME: "t",
          GIT_AUTHOR_EMAIL: "t@t",
          GIT_COMMITTER_NAME: "t",
          GIT_COMMITTER_EMAIL: "t@t",
        },
      })
        .toString()
        .trim();
    git("init", "-q");
    writeFileSync(path.join(repo, "main.tf"), 'resource "x" "from_git" {}\n');
    git("add", ".");
    git("commit", "-qm", "c");
    const job = assignment({
      source: { kind: "vcs", repoUrl: `file://${repo}`, commitSha: git("rev-parse", "HEAD") },
      isSpeculative: true,
    });
    const refused = await startJob(job, port.forJob(job.jobId), settings).done;
    expect(refused.message).toMatch(/--allow-file-repos/);
    settings.allowFileRepos = true;
    const result = await startJob(job, port.forJob(`${job.jobId}-2`), settings).done;
    expect(result, port.log(`${job.jobId}-2`)).toMatchObject({
      outcome: "succeeded",
      planSummary: { adds: 1 },
    });
  });
});

/** The agent's half of the least-privilege findings (2, 3 and 8), on the real runner. */
describe("job runner: least privilege", () => {
  it("a fork's job gets no host variables, no sensitive values and runs no hooks", async () => {
    hook("pre-plan", 'echo "HOOK_RAN=yes" >> "$OUTPOST_AGENT_ENV"; echo hook-ran');
    const job = assignment({
      isFork: true,
      isSpeculative: true,
      files: { "main.tf": 'resource "null_resource" "web" { value = "x" }\n' },
      variables: [
        envVar("STANDIN_PRINT_ENV", "ALLOWED_HOST_VAR,DB_TOKEN,PLAIN,HOOK_RAN"),
        envVar("DB_TOKEN", "sensitive-db-token-value", true),
        envVar("PLAIN", "plain-value"),
        tfVar("password", "sensitive-tf-value", { isSensitive: true }),
      ],
    });
    const result = await startJob(job, port.forJob(job.jobId), settings).done;
    const log = port.log(job.jobId);
    expect(result.outcome, log).toBe("succeeded");
    expect(log).toContain("env.ALLOWED_HOST_VAR = null");
    expect(log).toContain("env.DB_TOKEN = null");
    expect(log).toContain('env.PLAIN = "plain-value"');
    expect(log).toContain("env.HOOK_RAN = null");
    expect(log).toContain(
      "Skipping the pre-plan hook: hooks do not run for pull requests from forks",
    );
    expect(log).not.toContain("hook-ran");
  });

  it("the apply refuses a plan file whose SHA-256 is not the recorded one, before running anything", async () => {
    const main = 'resource "null_resource" "web" { value = "v1" }\n';
    const plan = assignment({ files: { "main.tf": main } });
    expect((await startJob(plan, port.forJob(plan.jobId), settings).done).outcome).toBe(
      "succeeded",
    );
    const served = port.sha256("plan-file");
    const apply = (planSha256: string | null) => ({
      ...plan,
      jobId: `${plan.runId}:apply`,
      phase: "apply" as const,
      planSha256,
    });
    const before = state.currentState(WS);
    const swapped = await startJob(apply("f".repeat(64)), port.forJob("swapped"), settings).done;
    expect(swapped).toMatchObject({ outcome: "failed" });
    expect(swapped.message).toBe(
      `the plan file's SHA-256 is ${served}, not ${"f".repeat(64)} as recorded when the plan finished; refusing to apply a plan that is not the one confirmed`,
    );
    expect(port.log("swapped")).not.toContain("$ terraform apply");
    const unrecorded = await startJob(apply(null), port.forJob("unrecorded"), settings).done;
    expect(unrecorded.message).toMatch(/no plan hash was recorded/);
    expect(state.currentState(WS)).toEqual(before);
    const verified = await startJob(apply(served), port.forJob("verified"), settings).done;
    expect(verified.outcome, port.log("verified")).toBe("succeeded");
    expect(port.log("verified")).toContain(`plan file verified (SHA-256 ${served})`);
  });

  it("masks what a hook exports as sensitive: in the hook's own output, its encodings and the engine's", async () => {
    const value = "hook-issued-credential-7Hq2";
    hook(
      "pre-plan",
      [
        `echo "fetched ${value}"`,
        `printf '%s' "${value}" | base64`,
        `echo "sensitive HOOK_CREDENTIAL=${value}" >> "$OUTPOST_AGENT_ENV"`,
        'echo "STANDIN_PRINT_ENV=HOOK_CREDENTIAL" >> "$OUTPOST_AGENT_ENV"',
      ].join("\n"),
    );
    const job = assignment({ files: { "main.tf": "" } });
    const result = await startJob(job, port.forJob(job.jobId), settings).done;
    const log = port.log(job.jobId);
    expect(result.outcome, log).toBe("succeeded");
    expect(log).toContain("fetched ***");
    expect(log).toContain('env.HOOK_CREDENTIAL = "***"');
    expect(log).not.toContain(value);
    expect(log).not.toContain(Buffer.from(value).toString("base64").slice(0, 20));
  });

  it("a hook that fails after marking a value sensitive still has it masked", async () => {
    const value = "half-issued-secret-Zx81";
    hook(
      "pre-plan",
      `echo "sensitive X=${value}" >> "$OUTPOST_AGENT_ENV"; echo "${value}"; exit 2`,
    );
    const job = assignment({});
    const result = await startJob(job, port.forJob(job.jobId), settings).done;
    expect(result).toMatchObject({
      outcome: "failed",
      message: "hook pre-plan failed: it exited with code 2",
    });
    expect(port.log(job.jobId)).not.toContain(value);
  });
});
