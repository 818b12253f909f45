/**
 * The engine drivers: each operation's commands, table-driven per driver, and what adding an
 * engine takes: a driver in the list the runner is given. A fourth engine, "shellform" (a
 * shell script on PATH), plans and applies through the real runner, installer and resolver
 * with no change anywhere else; without its driver the job fails saying so.
 */
import { createHash } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import type { RunOperation } from "@outpost/protocol";
import { afterAll, beforeEach, describe, expect, it } from "vitest";
import type { EngineDriver } from "../../agent/src/engines/driver.ts";
import { DRIVERS, driverFor } from "../../agent/src/engines/drivers.ts";
import { EngineInstallError } from "../../agent/src/engines/release.ts";
import { startJob } from "../../agent/src/job/runner.ts";
import type { JobSettings, RunnerJob } from "../../agent/src/job/types.ts";
import { NO_ISOLATION } from "./helpers/isolation.ts";
import { buildTarGz } from "./helpers/tarball.ts";
import { TestPort } from "./helpers/test-port.ts";

const base = mkdtempSync(path.join(tmpdir(), "outpost-drivers-"));
afterAll(() => rmSync(base, { recursive: true, force: true }));

function job(overrides: Partial<RunnerJob> = {}): RunnerJob {
  return {
    jobId: "run_1:plan",
    runId: "run_1",
    workspaceId: "ws_1",
    workspaceName: "core",
    phase: "plan",
    operation: "apply",
    isSpeculative: false,
    isFork: false,
    planSha256: null,
    engine: "terraform",
    engineVersion: "latest",
    stackName: "org/dev",
    workingDirectory: "",
    variables: [],
    withheldVariables: [],
    source: { kind: "configuration", url: "u", sha256: "s" },
    runToken: "op_run_t",
    stateAddress: "https://o/state/v1/ws_1",
    ...overrides,
  };
}

function commands(engine: string, operation: RunOperation, extra: Partial<RunnerJob> = {}) {
  const driver = driverFor(engine);
  if (driver === null) {
    throw new Error(`no driver for ${engine}`);
  }
  const subject = job({ engine, operation, ...extra });
  const phases = driver.commands[operation];
  return { plan: phases.plan(subject, "PLAN"), apply: phases.apply(subject, "PLAN") };
}

const TF_PLAN = ["plan", "-out=PLAN", "-input=false", "-detailed-exitcode", "-no-color"];
const TF_APPLY = ["apply", "-input=false", "-no-color", "PLAN"];
const PULUMI_SKIP = ["-s", "dev", "--yes", "--skip-preview"];

describe("each operation's commands", () => {
  it.each<[string, RunOperation, Partial<RunnerJob>, { plan: string[]; apply: string[] }]>([
    ["terraform", "apply", {}, { plan: TF_PLAN, apply: TF_APPLY }],
    [
      "tofu",
      "plan",
      { isSpeculative: true },
      { plan: [...TF_PLAN, "-lock=false"], apply: TF_APPLY },
    ],
    ["terraform", "destroy", {}, { plan: [...TF_PLAN, "-destroy"], apply: TF_APPLY }],
    ["tofu", "refresh", {}, { plan: [...TF_PLAN, "-refresh-only"], apply: TF_APPLY }],
    [
      "terraform",
      "destroy",
      {
        planOptions: {
          targetAddrs: ["null_resource.a", 'module.m.aws_instance.b["k"]'],
          replaceAddrs: ["null_resource.c"],
          refresh: false,
        },
        isSpeculative: true,
      },
      {
        // One argument each: an address never reaches a shell or splits into flags.
        plan: [
          ...TF_PLAN,
          "-destroy",
          "-target=null_resource.a",
          '-target=module.m.aws_instance.b["k"]',
          "-replace=null_resource.c",
          "-refresh=false",
          "-lock=false",
        ],
        apply: TF_APPLY,
      },
    ],
    [
      "pulumi",
      "apply",
      {},
      {
        plan: ["preview", "--json", "--save-plan", "PLAN", "-s", "dev"],
        apply: ["up", "--plan", "PLAN", ...PULUMI_SKIP],
      },
    ],
    [
      "pulumi",
      "destroy",
      {},
      {
        plan: ["destroy", "--preview-only", "--json", "-s", "dev"],
        apply: ["destroy", ...PULUMI_SKIP],
      },
    ],
    [
      "pulumi",
      "refresh",
      {},
      {
        plan: ["refresh", "--preview-only", "--json", "-s", "dev"],
        apply: ["refresh", ...PULUMI_SKIP],
      },
    ],
  ])("%s %s", (engine, operation, extra, expected) => {
    expect(commands(engine, operation, extra)).toEqual(expected);
  });

  it("names a Pulumi stack as given when the workspace has its own backend", () => {
    const own = {
      variables: [
        {
          key: "PULUMI_BACKEND_URL",
          value: "s3://b",
          category: "env" as const,
          isHcl: false,
          isSensitive: false,
        },
      ],
    };
    expect(commands("pulumi", "destroy", own).apply).toEqual([
      "destroy",
      "-s",
      "org/dev",
      "--yes",
      "--skip-preview",
    ]);
  });

  it("finds the driver of every engine the protocol names, and none for others", () => {
    expect(driverFor("terraform")).toBe(driverFor("tofu"));
    expect(driverFor("pulumi")?.engines).toEqual(["pulumi"]);
    expect(driverFor("shellform")).toBeNull();
  });
});

/**
 * A fourth engine, all of it: where its releases are (none here: it is on PATH), how it says
 * its version, its phases and its summary.
 */
const shellformDriver: EngineDriver = {
  engines: ["shellform"],
  release: () => ({
    engine: "shellform",
    constraints: "semver",
    binaryIn: (dir) => path.join(dir, "shellform"),
    locate: (version, _platform, mirror) => ({
      archiveName: `shellform-${version}.tar.gz`,
      archiveUrl: `${mirror}/shellform/${version}/shellform-${version}.tar.gz`,
      sumsUrl: `${mirror}/shellform/${version}/SHA256SUMS`,
      signatureUrl: `${mirror}/shellform/${version}/SHA256SUMS.sig`,
    }),
    unpack: () => Promise.reject(new EngineInstallError("shellform is installed by hand")),
    indexUrl: () => null,
    versionsOf: () => [],
    probe: {
      args: ["--version"],
      parse: (out) => /^shellform (\S+)$/.exec(out.trim())?.[1] ?? null,
    },
    signingKey: null,
  }),
  environment: (j) => ({ SHELLFORM_WORKSPACE: j.workspaceName }),
  refusal: (j) => (j.operation === "refresh" ? "shellform cannot refresh" : null),
  commands: {
    plan: { plan: (_j, file) => ["plan", file], apply: (_j, file) => ["apply", file] },
    apply: { plan: (_j, file) => ["plan", file], apply: (_j, file) => ["apply", file] },
    destroy: { plan: (_j, file) => ["plan", file, "--destroy"], apply: (_j, f) => ["apply", f] },
    refresh: { plan: () => [], apply: () => [] },
  },
  async plan(s) {
    await s.hook("pre-plan");
    const file = path.join(s.root, "scratch", "shellform.plan");
    await s.run(shellformDriver.commands[s.job.operation].plan(s.job, file), "plan");
    await s.retry(() => s.port.uploadArtifact("plan-file", file));
    return readFile(file, "utf8");
  },
  async apply(s) {
    const file = path.join(s.root, "scratch", "shellform.plan");
    await s.verifiedPlan("plan-file", file);
    await s.run(shellformDriver.commands[s.job.operation].apply(s.job, file), "apply");
  },
  summarize: (document) => {
    const counts = JSON.parse(document) as { add: number; destroy: number };
    const hasChanges = counts.add + counts.destroy > 0;
    return { adds: counts.add, changes: 0, destroys: counts.destroy, imports: 0, hasChanges };
  },
  reasonIn: (output) => /^shellform: (.+)$/m.exec(output)?.[1] ?? null,
};

const SHELLFORM = `#!/bin/sh
case "$1" in
  --version) echo "shellform 0.3.1" ;;
  plan)
    [ "$(cat main.sf)" = "broken" ] && { echo "shellform: main.sf does not parse"; exit 1; }
    if [ "$3" = "--destroy" ]; then echo '{"add":0,"destroy":1}' > "$2"; else echo '{"add":2,"destroy":0}' > "$2"; fi
    echo "planned for $SHELLFORM_WORKSPACE" ;;
  apply) echo "applied $(cat "$2")" ;;
esac
`;

describe("a fourth engine is one driver in the list", () => {
  let port: TestPort;
  let settings: JobSettings;
  let runs = 0;

  beforeEach(() => {
    port = new TestPort();
    const bin = mkdtempSync(path.join(base, "bin-"));
    writeFileSync(path.join(bin, "shellform"), SHELLFORM, { mode: 0o755 });
    settings = {
      dataDir: path.join(base, "data"),
      hooksDir: mkdtempSync(path.join(base, "hooks-")),
      hookTimeoutMs: 10_000,
      envForward: [],
      hostEnv: { PATH: `${bin}${path.delimiter}${process.env.PATH ?? ""}` },
      networkEnv: {},
      releaseMirror: null,
      allowFileRepos: false,
      cancelGraceMs: 10_000,
      maxConfigurationBytes: 1024 * 1024,
      isolation: NO_ISOLATION,
      drivers: [...DRIVERS, shellformDriver],
    };
  });

  function shellformJob(main: string, overrides: Partial<RunnerJob> = {}): RunnerJob {
    const data = buildTarGz([{ name: "main.sf", body: main }]);
    const url = `https://coordinator.test/config/shellform-${++runs}`;
    port.configurations.set(url, data);
    const sha256 = createHash("sha256").update(data).digest("hex");
    const runId = `run_sf${runs}`;
    return job({
      jobId: `${runId}:plan`,
      runId,
      engine: "shellform",
      engineVersion: "^0.3",
      source: { kind: "configuration", url, sha256 },
      ...overrides,
    });
  }

  it("plans and applies through the runner, the resolver and the installer", async () => {
    const plan = shellformJob("resource");
    const planned = await startJob(plan, port.forJob(plan.jobId), settings).done;
    const log = port.log(plan.jobId);
    expect(planned, log).toMatchObject({
      outcome: "succeeded",
      engineVersion: "0.3.1",
      planSummary: { adds: 2, destroys: 0, hasChanges: true },
    });
    expect(log).toContain(
      'Resolving shellform "^0.3" against the engines on this agent (its cache and PATH): shellform publishes no release index',
    );
    expect(log).toContain("Using shellform 0.3.1 found at");
    expect(log).toContain("planned for core");

    const apply = { ...plan, jobId: `${plan.runId}:apply`, phase: "apply" as const };
    const applied = await startJob(
      { ...apply, engineVersion: "0.3.1", planSha256: port.sha256("plan-file") },
      port.forJob(apply.jobId),
      settings,
    ).done;
    expect(applied.outcome, port.log(apply.jobId)).toBe("succeeded");
    expect(port.log(apply.jobId)).toContain('applied {"add":2,"destroy":0}');
  });

  it("runs each operation's command, its refusals and its reasons", async () => {
    const destroy = shellformJob("resource", { operation: "destroy" });
    expect(
      (await startJob(destroy, port.forJob(destroy.jobId), settings).done).planSummary,
    ).toEqual({ adds: 0, changes: 0, destroys: 1, imports: 0, hasChanges: true });
    const refresh = shellformJob("resource", { operation: "refresh" });
    expect(await startJob(refresh, port.forJob(refresh.jobId), settings).done).toMatchObject({
      outcome: "failed",
      message: "shellform cannot refresh",
    });
    const broken = shellformJob("broken");
    expect(await startJob(broken, port.forJob(broken.jobId), settings).done).toMatchObject({
      outcome: "failed",
      exitCode: 1,
      message: "shellform plan exited with code 1: main.sf does not parse",
    });
  });

  it("fails a job whose engine no driver in the list runs, saying so", async () => {
    const plan = shellformJob("resource");
    const result = await startJob(plan, port.forJob(plan.jobId), { ...settings, drivers: DRIVERS })
      .done;
    expect(result).toMatchObject({
      outcome: "failed",
      message: 'this agent has no driver for engine "shellform"; upgrade it',
    });
  });
});
