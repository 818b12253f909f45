import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import {
  writeBackendOverride,
  writeTerraformVariables,
} from "../../agent/src/engines/terraform-files.ts";
import { summarizePlan } from "../../agent/src/engines/terraform-plan.ts";
import { buildJobEnvironment, isForwarded, jobVariables } from "../../agent/src/job/environment.ts";
import { runHook } from "../../agent/src/job/hooks.ts";
import type { RunnerJob } from "../../agent/src/job/types.ts";
import { createLogger } from "../../agent/src/logger.ts";

const dir = mkdtempSync(path.join(tmpdir(), "outpost-pieces-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const assignment: RunnerJob = {
  jobId: "run_1:plan",
  runId: "run_1",
  workspaceId: "ws_1",
  workspaceName: "core",
  phase: "plan",
  operation: "plan",
  isSpeculative: false,
  engine: "terraform",
  engineVersion: "1.9.5",
  stackName: null,
  workingDirectory: "",
  variables: [
    { key: "AWS_REGION", value: "eu-west-1", category: "env", isHcl: false, isSensitive: false },
    { key: "PATH", value: "/evil", category: "env", isHcl: false, isSensitive: false },
    { key: "OUTPOST_RUN_ID", value: "forged", category: "env", isHcl: false, isSensitive: false },
    { key: "bad-name", value: "x", category: "env", isHcl: false, isSensitive: false },
    { key: "region", value: "x", category: "terraform", isHcl: false, isSensitive: false },
  ],
  withheldVariables: [],
  source: { kind: "configuration", url: "u", sha256: "s" },
  runToken: "op_run_secret",
  stateAddress: "https://outpost.example.com/state/v1/ws_1",
  isFork: false,
  planSha256: null,
};

describe("buildJobEnvironment", () => {
  it("starts from nothing: only allowlisted host variables, workspace env vars and the agent's own", () => {
    const { env, skipped } = buildJobEnvironment({
      job: assignment,
      hostEnv: {
        PATH: "/usr/bin",
        HOME: "/root",
        AWS_PROFILE: "host",
        VAULT_TOKEN: "host-secret",
        HTTPS_PROXY: "http://proxy",
      },
      allowlist: ["AWS_*", "HTTPS_PROXY"],
      jobRoot: "/data/jobs/j1",
      engineDir: "/data/engines/terraform/1.9.5",
    });
    expect(env).toEqual({
      AWS_PROFILE: "host",
      HTTPS_PROXY: "http://proxy",
      AWS_REGION: "eu-west-1",
      PATH: "/data/engines/terraform/1.9.5:/usr/bin",
      HOME: "/data/jobs/j1/home",
      TMPDIR: "/data/jobs/j1/tmp",
      TF_IN_AUTOMATION: "1",
      TF_INPUT: "0",
      OUTPOST_RUN_ID: "run_1",
      OUTPOST_JOB_ID: "run_1:plan",
      OUTPOST_JOB_PHASE: "plan",
      OUTPOST_RUN_OPERATION: "plan",
      OUTPOST_WORKSPACE_ID: "ws_1",
      OUTPOST_WORKSPACE_NAME: "core",
    });
    expect(skipped).toEqual(["PATH", "OUTPOST_RUN_ID", "bad-name"]);
  });

  it("matches allowlist entries exactly or by PREFIX*", () => {
    expect(isForwarded("AWS_REGION", ["AWS_*"])).toBe(true);
    expect(isForwarded("AWSX", ["AWS_*"])).toBe(false);
    expect(isForwarded("NO_PROXY", ["NO_PROXY"])).toBe(true);
    expect(isForwarded("NO_PROXY_2", ["NO_PROXY"])).toBe(false);
  });
});

describe("generated files", () => {
  it("writes the backend override without any credential and tfvars by kind", async () => {
    const work = path.join(dir, "files");
    mkdirSync(work);
    await writeBackendOverride(work, "https://outpost.example.com/state/v1/ws_1");
    const override = readFileSync(path.join(work, "outpost_override.tf"), "utf8");
    expect(override).toContain('backend "http"');
    expect(override).toContain('address        = "https://outpost.example.com/state/v1/ws_1"');
    expect(override).toContain('lock_address   = "https://outpost.example.com/state/v1/ws_1"');
    expect(override).not.toMatch(/password|username/);
    // Retries that outlast a coordinator restart: 1+2+4+8+16+7*30 = 241 s of waiting.
    expect(override).toContain("retry_max      = 12");
    expect(override).toContain("retry_wait_min = 1");
    expect(override).toContain("retry_wait_max = 30");

    await writeTerraformVariables(work, [
      {
        key: "name",
        value: 'quote " and back\\slash',
        category: "terraform",
        isHcl: false,
        isSensitive: false,
      },
      { key: "ports", value: "[80, 443]", category: "terraform", isHcl: true, isSensitive: false },
      { key: "ENV_ONLY", value: "x", category: "env", isHcl: false, isSensitive: false },
    ]);
    expect(JSON.parse(readFileSync(path.join(work, "outpost.auto.tfvars.json"), "utf8"))).toEqual({
      name: 'quote " and back\\slash',
    });
    expect(readFileSync(path.join(work, "outpost.auto.tfvars"), "utf8")).toBe(
      "ports = [80, 443]\n",
    );
    await expect(
      writeTerraformVariables(work, [
        { key: "x = 1\ny", value: "1", category: "terraform", isHcl: true, isSensitive: false },
      ]),
    ).rejects.toThrow(/not a valid identifier/);
  });
});

describe("a fork's job", () => {
  const fork: RunnerJob = {
    ...assignment,
    isFork: true,
    variables: [
      { key: "PLAIN", value: "p", category: "env", isHcl: false, isSensitive: false },
      { key: "DB_TOKEN", value: "s3cret", category: "env", isHcl: false, isSensitive: true },
      { key: "pw", value: "s3cret", category: "terraform", isHcl: false, isSensitive: true },
    ],
  };

  it("gets no host variable, whatever the allowlist, and no sensitive value", () => {
    const { env } = buildJobEnvironment({
      job: fork,
      hostEnv: { PATH: "/usr/bin", AWS_SECRET_ACCESS_KEY: "host", HTTPS_PROXY: "http://p" },
      allowlist: ["AWS_*", "HTTPS_PROXY"],
      jobRoot: "/j",
      engineDir: "/e",
    });
    expect(env.AWS_SECRET_ACCESS_KEY).toBeUndefined();
    expect(env.HTTPS_PROXY).toBeUndefined();
    expect(env.DB_TOKEN).toBeUndefined();
    expect(env.PLAIN).toBe("p");
    expect(jobVariables(fork).map((v) => v.key)).toEqual(["PLAIN"]);
    expect(jobVariables({ ...fork, isFork: false }).map((v) => v.key)).toEqual([
      "PLAIN",
      "DB_TOKEN",
      "pw",
    ]);
  });

  it("gets the agent's CA settings but not its proxy (a proxy URL may hold credentials)", () => {
    const networkEnv = {
      HTTPS_PROXY: "http://user:pw@proxy:3128",
      no_proxy: "internal",
      SSL_CERT_FILE: "/data/ca-certificates.pem",
      GIT_SSL_CAINFO: "/data/ca-certificates.pem",
    };
    const base = { hostEnv: { PATH: "/usr/bin" }, allowlist: [], jobRoot: "/j", engineDir: "/e" };
    const forked = buildJobEnvironment({ ...base, job: fork, networkEnv }).env;
    expect(forked.HTTPS_PROXY).toBeUndefined();
    expect(forked.no_proxy).toBeUndefined();
    expect(forked).toMatchObject({
      SSL_CERT_FILE: "/data/ca-certificates.pem",
      GIT_SSL_CAINFO: "/data/ca-certificates.pem",
    });
    const own = buildJobEnvironment({ ...base, job: { ...fork, isFork: false }, networkEnv });
    expect(own.env).toMatchObject(networkEnv);
  });

  it("runs no hook", async () => {
    const hooksDir = path.join(dir, "fork-hooks");
    mkdirSync(hooksDir, { recursive: true });
    const marker = path.join(dir, "fork-hook-ran");
    writeFileSync(path.join(hooksDir, "pre-plan"), `#!/bin/sh\ntouch ${marker}\n`);
    chmodSync(path.join(hooksDir, "pre-plan"), 0o755);
    const output: string[] = [];
    const result = await runHook({
      name: "pre-plan",
      hooksDir,
      timeoutMs: 5000,
      cwd: dir,
      env: {},
      scratchDir: dir,
      isFork: true,
      onOutput: (c) => output.push(c.toString()),
    });
    expect(result).toEqual({ exports: {}, sensitive: [] });
    expect(output.join("")).toContain("hooks do not run for pull requests from forks");
    expect(existsSync(marker)).toBe(false);
  });
});

describe("runHook", () => {
  const hooksDir = path.join(dir, "hooks");
  mkdirSync(hooksDir, { recursive: true });
  const run = (name: "pre-plan" | "post-plan", output: string[] = []) =>
    runHook({
      name,
      hooksDir,
      timeoutMs: 5000,
      cwd: dir,
      env: { PATH: "/usr/bin:/bin", ONLY: "this" },
      scratchDir: dir,
      isFork: false,
      onOutput: (c) => {
        output.push(c.toString());
      },
    });

  it("exports `sensitive KEY=value` lines and reports their values as sensitive", async () => {
    const file = path.join(hooksDir, "post-plan");
    writeFileSync(
      file,
      '#!/bin/sh\necho "A=1" >> "$OUTPOST_AGENT_ENV"\necho "sensitive B=two words" >> "$OUTPOST_AGENT_ENV"\n',
    );
    chmodSync(file, 0o755);
    expect(await run("post-plan")).toEqual({
      exports: { A: "1", B: "two words" },
      sensitive: ["two words"],
    });
    rmSync(file);
  });

  it("does nothing when the hook does not exist", async () => {
    expect(await run("pre-plan")).toEqual({ exports: {}, sensitive: [] });
  });

  it("runs Terraform Cloud agent's hook names as aliases, and refuses both names at once", async () => {
    const alias = path.join(hooksDir, "terraform-pre-plan");
    writeFileSync(alias, '#!/bin/sh\necho "FROM=$OUTPOST_HOOK" >> "$OUTPOST_AGENT_ENV"\n');
    chmodSync(alias, 0o755);
    const output: string[] = [];
    expect(await run("pre-plan", output)).toEqual({
      exports: { FROM: "pre-plan" },
      sensitive: [],
    });
    expect(output.join("")).toContain("Running pre-plan hook");
    const own = path.join(hooksDir, "pre-plan");
    writeFileSync(own, "#!/bin/sh\n");
    chmodSync(own, 0o755);
    await expect(run("pre-plan")).rejects.toThrow(
      /hooks pre-plan and terraform-pre-plan both exist in .*: they are the same hook; keep one/,
    );
    rmSync(alias);
    rmSync(own);
  });

  it("refuses a hook file that is not executable", async () => {
    writeFileSync(path.join(hooksDir, "post-plan"), "#!/bin/sh\n");
    chmodSync(path.join(hooksDir, "post-plan"), 0o644);
    await expect(run("post-plan")).rejects.toThrow(/hook post-plan .* is not an executable file/);
  });

  it("sees only the job environment and fails on a malformed export line", async () => {
    const file = path.join(hooksDir, "pre-plan");
    writeFileSync(
      file,
      '#!/bin/sh\nenv | sort\necho "A=1" >> "$OUTPOST_AGENT_ENV"\necho "not an assignment" >> "$OUTPOST_AGENT_ENV"\n',
    );
    chmodSync(file, 0o755);
    const output: string[] = [];
    await expect(run("pre-plan", output)).rejects.toThrow(
      "hook pre-plan wrote an invalid line 2 to $OUTPOST_AGENT_ENV (expected KEY=value or sensitive KEY=value)",
    );
    const seen = output.join("");
    expect(seen).toContain("ONLY=this");
    expect(seen).toContain("OUTPOST_HOOK=pre-plan");
    expect(seen).not.toContain("VITEST");
  });
});

describe("summarizePlan", () => {
  it("counts like terraform's Plan line, including replacements, imports and output changes", () => {
    const rc = (actions: string[], importing?: object, mode = "managed") => ({
      mode,
      change: { actions, importing },
    });
    expect(
      summarizePlan(
        JSON.stringify({
          resource_changes: [
            rc(["create"]),
            rc(["update"]),
            rc(["delete"]),
            rc(["delete", "create"]),
            rc(["create", "delete"]),
            rc(["no-op"], { id: "i-123" }),
            rc(["no-op"]),
            rc(["read"], undefined, "data"),
            rc(["no-op"], undefined, "data"),
          ],
        }),
      ),
    ).toEqual({ adds: 3, changes: 1, destroys: 3, imports: 1, sames: 2, hasChanges: true });
    expect(summarizePlan(JSON.stringify({ resource_changes: [rc(["no-op"])] })).hasChanges).toBe(
      false,
    );
    expect(
      summarizePlan(JSON.stringify({ output_changes: { ip: { actions: ["update"] } } })),
    ).toEqual({ adds: 0, changes: 0, destroys: 0, imports: 0, sames: 0, hasChanges: true });
    expect(() => summarizePlan("not json")).toThrow();
  });

  it("names the drifted addresses of a refresh-only plan, which has changes only when drift was found", () => {
    const drift = (address: string, actions: string[]) => ({ address, change: { actions } });
    const doc = JSON.stringify({
      resource_changes: [],
      resource_drift: [drift("null_resource.a", ["update"]), drift("aws_s3_bucket.b", ["delete"])],
    });
    expect(summarizePlan(doc, { refreshOnly: true })).toEqual({
      adds: 0,
      changes: 0,
      destroys: 0,
      imports: 0,
      sames: 0,
      hasChanges: true,
      driftedResources: ["null_resource.a", "aws_s3_bucket.b"],
    });
    // Drift alone does not make a normal plan one with changes, and it is not reported there.
    expect(summarizePlan(doc)).toEqual({
      adds: 0,
      changes: 0,
      destroys: 0,
      imports: 0,
      sames: 0,
      hasChanges: false,
    });
    const clean = JSON.stringify({ resource_drift: [drift("null_resource.a", ["no-op"])] });
    expect(summarizePlan(clean, { refreshOnly: true })).toMatchObject({
      hasChanges: false,
      driftedResources: [],
    });
  });
});

describe("createLogger", () => {
  it("writes readable lines or JSON lines, and redacts token fields", () => {
    const lines: string[] = [];
    const text = createLogger({
      level: "info",
      json: false,
      destination: { write: (l) => lines.push(l) },
    });
    text.debug("hidden");
    text.info({ jobId: "run_1:plan", token: "op_agent_x" }, "job started");
    // A string cause (what every failed request logs) right after the message, on one line.
    text.warn(
      { err: "cannot reach http://c (connection refused)", retryInMs: 5 },
      "register failed",
    );
    text.error({ err: new Error("disk full") }, "could not report the job");
    expect(lines).toEqual([
      expect.stringMatching(
        /^\[\d{4}-\d{2}-\d{2}T[\d:.]+Z\] INFO: job started \{"jobId":"run_1:plan","token":"\*\*\*"\}\n$/,
      ),
      expect.stringMatching(
        /\] WARN: register failed: cannot reach http:\/\/c \(connection refused\) \{"retryInMs":5\}\n$/,
      ),
      expect.stringMatching(/\] ERROR: could not report the job: disk full\n$/),
    ]);

    const json: string[] = [];
    const j = createLogger({
      level: "debug",
      json: true,
      destination: { write: (l) => json.push(l) },
    });
    j.debug({ n: 1 }, "dbg");
    expect(JSON.parse(json[0] ?? "")).toMatchObject({ level: 20, msg: "dbg", n: 1 });
  });
});
