/**
 * The pieces of a Pulumi job, on real temp dirs: the passphrase rule (incl. forks and the
 * workspace's own backend), the engine environment, the DIY backend layout a checkpoint is
 * restored into and the serial/lineage it is uploaded with, and the preview's summary.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { pulumiEnvironment, pulumiRefusal } from "../../agent/src/engines/pulumi.ts";
import { describePreview, summarizePreview } from "../../agent/src/engines/pulumi-preview.ts";
import {
  checkpointForUpload,
  readProjectName,
  restoreCheckpoint,
  stackFile,
} from "../../agent/src/engines/pulumi-state.ts";
import type { JobVariable, RunnerJob, WithheldVariable } from "../../agent/src/job/types.ts";

const dir = mkdtempSync(path.join(tmpdir(), "outpost-pulumi-job-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const env = (key: string, value: string, sensitive = false): JobVariable => ({
  key,
  value,
  category: "env",
  isHcl: false,
  isSensitive: sensitive,
});

function job(
  variables: JobVariable[],
  fork = false,
  withheldVariables: WithheldVariable[] = [],
): RunnerJob {
  return {
    jobId: "run_1:plan",
    runId: "run_1",
    workspaceId: "ws_1",
    workspaceName: "stack",
    phase: "plan",
    operation: "apply",
    isSpeculative: false,
    isFork: fork,
    planSha256: null,
    engine: "pulumi",
    engineVersion: "^3.150",
    stackName: "dev",
    workingDirectory: "",
    variables,
    withheldVariables,
    source: { kind: "configuration", url: "http://x", sha256: "0".repeat(64) },
    runToken: "op_run_x",
    stateAddress: "http://127.0.0.1/state/v1/ws_1",
  };
}

describe("the passphrase rule", () => {
  it.each([
    [
      "a sensitive PULUMI_CONFIG_PASSPHRASE",
      [env("PULUMI_CONFIG_PASSPHRASE", "p", true)],
      false,
      null,
    ],
    [
      "a passphrase file on the host",
      [env("PULUMI_CONFIG_PASSPHRASE_FILE", "/etc/p")],
      false,
      null,
    ],
    ["the workspace's own backend", [env("PULUMI_BACKEND_URL", "s3://b")], false, null],
    ["nothing", [], false, /add PULUMI_CONFIG_PASSPHRASE as a sensitive env variable/],
    ["a visible passphrase", [env("PULUMI_CONFIG_PASSPHRASE", "p")], false, /must be a sensitive/],
    [
      "a fork (its secrets withheld)",
      [env("PULUMI_CONFIG_PASSPHRASE", "p", true)],
      true,
      /from a fork/,
    ],
  ])("with %s", (_name, variables, fork, expected) => {
    const problem = pulumiRefusal(job(variables, fork));
    if (expected === null) {
      expect(problem).toBeNull();
    } else {
      expect(problem).toMatch(expected);
    }
  });
});

describe("a fork's job on a workspace whose own backend is a sensitive variable", () => {
  const backend = (sensitive: boolean) => env("PULUMI_BACKEND_URL", "s3://b", sensitive);
  const refusal =
    /^the workspace names its own backend in PULUMI_BACKEND_URL, a sensitive variable, and a pull request from a fork gets no sensitive variables: its preview cannot reach the stack's backend\. Make PULUMI_BACKEND_URL a plain variable .* or set the workspace's forkPullRequests to refuse$/;

  it("is refused naming why, not with the passphrase's reason", () => {
    const withheld = [{ key: "PULUMI_BACKEND_URL", category: "env" as const }];
    expect(pulumiRefusal(job([], true, withheld))).toMatch(refusal);
    // Also when the coordinator sent it anyway: a fork's job never uses a sensitive value.
    expect(pulumiRefusal(job([backend(true)], true))).toMatch(refusal);
  });

  it("runs as before when the backend URL is plain, or the job is not a fork's", () => {
    expect(pulumiRefusal(job([backend(false)], true))).toBeNull();
    expect(pulumiRefusal(job([backend(true)], false))).toBeNull();
    // A withheld terraform-category variable of that name is stack config, not the backend.
    const config = [{ key: "PULUMI_BACKEND_URL", category: "terraform" as const }];
    expect(pulumiRefusal(job([], true, config))).toMatch(/from a fork gets no sensitive/);
  });
});

describe("the engine environment", () => {
  it("points the DIY backend into the job dir, and leaves a named backend alone", () => {
    const own = pulumiEnvironment(job([]), "/jobs/j1");
    expect(own).toMatchObject({
      PULUMI_SKIP_UPDATE_CHECK: "true",
      PULUMI_HOME: "/jobs/j1/home/.pulumi",
      PULUMI_BACKEND_URL: "file:///jobs/j1/pulumi-state",
      PULUMI_FALLBACK_TO_STATE_SECRETS_MANAGER: "true",
      USER: "outpost",
    });
    const theirs = pulumiEnvironment(job([env("PULUMI_BACKEND_URL", "s3://b")]), "/jobs/j1");
    expect(theirs.PULUMI_BACKEND_URL).toBeUndefined();
  });
});

describe("the checkpoint between Outpost and the DIY backend", () => {
  it("reads the project name, or says where Pulumi.yaml is missing", async () => {
    const project = mkdtempSync(path.join(dir, "project-"));
    await expect(readProjectName(project)).rejects.toThrow(/no Pulumi.yaml/);
    writeFileSync(path.join(project, "Pulumi.yaml"), "name: demo\nruntime: yaml\n");
    expect(await readProjectName(project)).toBe("demo");
    writeFileSync(path.join(project, "Pulumi.yaml"), "name: ../x\n");
    await expect(readProjectName(project)).rejects.toThrow(/no valid project name/);
  });

  it("lays out meta.yaml and the stack file, and carries serial and lineage forward", async () => {
    const backend = mkdtempSync(path.join(dir, "backend-"));
    const empty = await restoreCheckpoint({
      backendDir: backend,
      project: "demo",
      stack: "dev",
      checkpoint: null,
    });
    expect(empty).toBeNull();
    expect(readFileSync(path.join(backend, ".pulumi", "meta.yaml"), "utf8")).toBe("version: 1\n");
    const file = stackFile(backend, "demo", "dev");
    expect(file).toBe(path.join(backend, ".pulumi/stacks/demo/dev.json"));
    expect(existsSync(file)).toBe(false);

    writeFileSync(file, JSON.stringify({ version: 3, checkpoint: { latest: { resources: [] } } }));
    const first = JSON.parse(String(await checkpointForUpload(file, null)));
    expect(first).toMatchObject({ version: 3, serial: 1, lineage: expect.any(String) });

    const history = await restoreCheckpoint({
      backendDir: backend,
      project: "demo",
      stack: "dev",
      checkpoint: Buffer.from(JSON.stringify(first)),
    });
    expect(history).toEqual({ serial: 1, lineage: first.lineage });
    const second = JSON.parse(String(await checkpointForUpload(file, history)));
    expect(second).toMatchObject({ serial: 2, lineage: first.lineage });
  });

  it("refuses a Terraform state as a checkpoint", async () => {
    const backend = mkdtempSync(path.join(dir, "backend-"));
    const terraform = Buffer.from(
      JSON.stringify({ version: 4, serial: 3, lineage: "l", resources: [] }),
    );
    await expect(
      restoreCheckpoint({
        backendDir: backend,
        project: "demo",
        stack: "dev",
        checkpoint: terraform,
      }),
    ).rejects.toThrow(/not a Pulumi checkpoint/);
  });
});

describe("the preview's summary", () => {
  const preview = JSON.stringify({
    steps: [
      { op: "create", urn: "urn:pulumi:dev::demo::t::a" },
      { op: "same", urn: "urn:pulumi:dev::demo::t::b" },
      { op: "replace", urn: "urn:pulumi:dev::demo::t::c" },
    ],
    diagnostics: [{ severity: "warning", message: "deprecated\n" }],
    changeSummary: { create: 1, same: 2, replace: 1, delete: 0 },
  });

  it("counts from changeSummary", () => {
    expect(summarizePreview(preview)).toEqual({
      adds: 1,
      changes: 0,
      destroys: 0,
      imports: 0,
      replaces: 1,
      sames: 2,
      hasChanges: true,
    });
    expect(summarizePreview(JSON.stringify({ changeSummary: { same: 3 } }))).toMatchObject({
      hasChanges: false,
      sames: 3,
    });
    expect(() => summarizePreview("null")).toThrow(/no JSON document/);
  });

  it("names a refresh preview's drifted resources: every step that is not same", () => {
    const refresh = JSON.stringify({
      steps: [
        { op: "update", urn: "urn:pulumi:dev::demo::t::a" },
        { op: "same", urn: "urn:pulumi:dev::demo::t::b" },
        { op: "delete", urn: "urn:pulumi:dev::demo::t::c" },
      ],
      changeSummary: { update: 1, same: 1, delete: 1 },
    });
    expect(summarizePreview(refresh, true)).toMatchObject({
      hasChanges: true,
      driftedResources: ["urn:pulumi:dev::demo::t::a", "urn:pulumi:dev::demo::t::c"],
    });
    expect(summarizePreview(refresh)).not.toHaveProperty("driftedResources");
  });

  it("describes the steps that do something, the diagnostics and the counts", () => {
    expect(describePreview(preview)).toEqual([
      "    + urn:pulumi:dev::demo::t::a (create)",
      "    +- urn:pulumi:dev::demo::t::c (replace)",
      "    warning: deprecated",
      "Resources: 1 to create, 0 to update, 0 to delete, 1 to replace, 2 unchanged",
    ]);
  });
});
