/**
 * A job's workload identity on the agent, through the real job runner, a real hook and the
 * stand-in engine: the token as a file inside the job's directory and as variables, masked in
 * the log; the AWS, GCP and Azure variables from Outpost's and Terraform Cloud's settings, per
 * phase; nothing for a fork's job; and the renewal schedule of OIDC-issued agent tokens.
 */
import { createHash } from "node:crypto";
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { toRunnerJob } from "../../agent/src/client/assignment.ts";
import { renewalDelayMs } from "../../agent/src/client/credentials.ts";
import type { JobIsolation } from "../../agent/src/job/containment.ts";
import { startJob } from "../../agent/src/job/runner.ts";
import type { JobSettings, JobVariable, RunnerJob } from "../../agent/src/job/types.ts";
import { gcpCredentials, WORKLOAD_IDENTITY_FILE } from "../../agent/src/job/workload-identity.ts";
import { bubblewrapIsolation } from "./helpers/isolation.ts";
import { MirrorServer } from "./helpers/mirror.ts";
import { type TestSigner, testSigner, trustedKeyOf } from "./helpers/signing.ts";
import { StateServer } from "./helpers/state-server.ts";
import { buildTarGz } from "./helpers/tarball.ts";
import { TestPort } from "./helpers/test-port.ts";

const RUN_TOKEN = "op_run_Wi9sEcReT-runtoken-0123456789abcdef";
const JWT =
  "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJvcmdhbml6YXRpb246YWNtZSJ9.c2lnbmF0dXJlLW9mLXRoZS10b2tlbg";
const WS = "ws_identity";
const mirror = new MirrorServer();
const state = new StateServer({ [WS]: RUN_TOKEN });
let base: string;
let settings: JobSettings;
let port: TestPort;
let counter = 0;
let sandboxed: JobIsolation;
let signer: TestSigner;

beforeAll(async () => {
  [signer] = await Promise.all([testSigner(), mirror.start(), state.start()]);
  mirror.signer = signer;
  mirror.publish("terraform", "1.9.5");
  base = mkdtempSync(path.join(tmpdir(), "outpost-identity-"));
  sandboxed = await bubblewrapIsolation({ agentHome: process.env.HOME ?? null });
});
afterAll(async () => {
  await Promise.all([mirror.stop(), state.stop()]);
  rmSync(base, { recursive: true, force: true });
});
beforeEach(() => {
  port = new TestPort();
  settings = {
    dataDir: path.join(base, "data"),
    hooksDir: mkdtempSync(path.join(base, "hooks-")),
    hookTimeoutMs: 10_000,
    envForward: [],
    hostEnv: { ...process.env },
    networkEnv: {},
    releaseMirror: mirror.url,
    engineKeyring: [trustedKeyOf(signer)],
    allowFileRepos: false,
    cancelGraceMs: 10_000,
    maxConfigurationBytes: 10 * 1024 * 1024,
    // Sandboxed as the agent's default on Linux: the token file must be visible to the job.
    isolation: sandboxed,
  };
  // Prints what a provider would read; the token's own text must come out masked.
  const hook = path.join(settings.hooksDir, "pre-plan");
  writeFileSync(
    hook,
    [
      "#!/bin/sh",
      'echo "token env: $OUTPOST_WORKLOAD_IDENTITY_TOKEN / $TFC_WORKLOAD_IDENTITY_TOKEN"',
      'echo "token file: $OUTPOST_WORKLOAD_IDENTITY_TOKEN_FILE"',
      '[ -f "$OUTPOST_WORKLOAD_IDENTITY_TOKEN_FILE" ] && [ "$(cat "$OUTPOST_WORKLOAD_IDENTITY_TOKEN_FILE")" = "$OUTPOST_WORKLOAD_IDENTITY_TOKEN" ] && echo "file holds the token"',
      'echo "mode: $(stat -c %a "$OUTPOST_WORKLOAD_IDENTITY_TOKEN_FILE" 2>/dev/null)"',
      'for v in AWS_ROLE_ARN AWS_WEB_IDENTITY_TOKEN_FILE AWS_ROLE_SESSION_NAME ARM_USE_OIDC ARM_CLIENT_ID ARM_OIDC_TOKEN_FILE_PATH AZURE_FEDERATED_TOKEN_FILE GOOGLE_APPLICATION_CREDENTIALS OUTPOST_AWS_RUN_ROLE_ARN; do echo "$v=$(printenv "$v" || echo unset)"; done',
      '[ -n "$GOOGLE_APPLICATION_CREDENTIALS" ] && cat "$GOOGLE_APPLICATION_CREDENTIALS"',
      "exit 0",
    ].join("\n"),
  );
  chmodSync(hook, 0o755);
});

const env = (key: string, value: string): JobVariable => ({
  key,
  value,
  category: "env",
  isHcl: false,
  isSensitive: false,
});

function job(overrides: Partial<RunnerJob>): RunnerJob {
  const data = buildTarGz([{ name: "main.tf", body: "" }]);
  const url = `https://coordinator.test/config/${++counter}`;
  port.configurations.set(url, data);
  const runId = `run_identity${counter}`;
  return {
    jobId: `${runId}:plan`,
    runId,
    workspaceId: WS,
    workspaceName: "identity",
    phase: "plan",
    operation: "plan",
    isSpeculative: false,
    isFork: false,
    planSha256: null,
    engine: "terraform",
    engineVersion: "1.9.5",
    workingDirectory: "",
    variables: [],
    withheldVariables: [],
    source: { kind: "configuration", url, sha256: createHash("sha256").update(data).digest("hex") },
    runToken: RUN_TOKEN,
    stateAddress: state.stateAddress(WS),
    workloadIdentityToken: JWT,
    stackName: null,
    ...overrides,
  };
}

async function run(a: RunnerJob): Promise<string> {
  const result = await startJob(a, port.forJob(a.jobId), settings).done;
  const log = port.log(a.jobId);
  expect(result.outcome, log).toBe("succeeded");
  return log;
}

describe("workload identity in a job", () => {
  it("hands the token as a 0600 file in the job's directory and as variables, masked in the log", async () => {
    const log = await run(job({}));
    expect(log).toContain("workload identity token issued for this job");
    expect(log).toContain("token env: *** / ***");
    expect(log).toContain("file holds the token");
    expect(log).toContain("mode: 600");
    expect(log).toMatch(
      new RegExp(`token file: ${settings.dataDir}/jobs/[^/]+/${WORKLOAD_IDENTITY_FILE}`),
    );
    expect(log).not.toContain(JWT);
    expect(log).not.toContain(JWT.split(".")[2]);
    expect(log).toContain("AWS_ROLE_ARN=unset");
  });

  it("sets AWS's web identity variables from OUTPOST_AWS_RUN_ROLE_ARN, a phase's own role first", async () => {
    const role = "arn:aws:iam::123456789012:role/outpost-plan";
    const log = await run(
      job({
        variables: [
          env("OUTPOST_AWS_RUN_ROLE_ARN", "arn:aws:iam::123456789012:role/outpost"),
          env("OUTPOST_AWS_PLAN_ROLE_ARN", role),
        ],
      }),
    );
    expect(log).toContain(`AWS_ROLE_ARN=${role}`);
    expect(log).toMatch(/AWS_WEB_IDENTITY_TOKEN_FILE=\/.*\/workload-identity\.jwt/);
    expect(log).toMatch(/AWS_ROLE_SESSION_NAME=outpost-run_identity\d+-plan/);
    // The setting is read by the agent, neither passed on nor reported as ignored.
    expect(log).toContain("OUTPOST_AWS_RUN_ROLE_ARN=unset");
    expect(log).not.toContain("ignored workspace variable OUTPOST_AWS");
  });

  it("takes Terraform Cloud's TFC_AWS_PROVIDER_AUTH and TFC_AWS_RUN_ROLE_ARN", async () => {
    const role = "arn:aws:iam::123456789012:role/tfc";
    const log = await run(
      job({
        variables: [env("TFC_AWS_PROVIDER_AUTH", "true"), env("TFC_AWS_RUN_ROLE_ARN", role)],
      }),
    );
    expect(log).toContain(`AWS_ROLE_ARN=${role}`);
    const off = await run(job({ variables: [env("TFC_AWS_RUN_ROLE_ARN", role)] }));
    expect(off).toContain("AWS_ROLE_ARN=unset");
  });

  it("writes GCP's external_account credentials and sets Azure's OIDC variables", async () => {
    const provider = "projects/123/locations/global/workloadIdentityPools/outpost/providers/agents";
    const log = await run(
      job({
        variables: [
          env("OUTPOST_GCP_WORKLOAD_PROVIDER_NAME", provider),
          env("OUTPOST_GCP_RUN_SERVICE_ACCOUNT_EMAIL", "tf@acme.iam.gserviceaccount.com"),
          env("OUTPOST_AZURE_RUN_CLIENT_ID", "00000000-0000-0000-0000-0000000000aa"),
        ],
      }),
    );
    expect(log).toContain('"type": "external_account"');
    expect(log).toContain(`"audience": "//iam.googleapis.com/${provider}"`);
    expect(log).toMatch(/"file": "\/.*\/workload-identity\.jwt"/);
    expect(log).toContain("serviceAccounts/tf@acme.iam.gserviceaccount.com:generateAccessToken");
    expect(log).toMatch(/GOOGLE_APPLICATION_CREDENTIALS=\/.*\/gcp-credentials\.json/);
    expect(log).toContain("ARM_USE_OIDC=true");
    expect(log).toContain("ARM_CLIENT_ID=00000000-0000-0000-0000-0000000000aa");
    expect(log).toMatch(/ARM_OIDC_TOKEN_FILE_PATH=\/.*\/workload-identity\.jwt/);
    expect(log).toMatch(/AZURE_FEDERATED_TOKEN_FILE=\/.*\/workload-identity\.jwt/);
  });

  it("gives a fork's job nothing, even should a token arrive, and says why a role is unused", async () => {
    const fork = job({
      isFork: true,
      variables: [env("OUTPOST_AWS_RUN_ROLE_ARN", "arn:aws:iam::1:role/x")],
    });
    // A fork's job runs no hooks: look at the log and the job directory instead.
    const result = await startJob(fork, port.forJob(fork.jobId), settings).done;
    const log = port.log(fork.jobId);
    expect(result.outcome, log).toBe("succeeded");
    expect(log).toContain("this job has no workload identity token");
    expect(log).not.toContain("workload identity token issued");
  });

  it("fails a job whose workspace expects an identity the coordinator could not issue", () => {
    const mapped = toRunnerJob(
      {
        jobId: `run_${"a".repeat(26)}:plan`,
        leaseId: `lease_${"a".repeat(26)}`,
        runId: `run_${"a".repeat(26)}`,
        workspaceId: WS,
        phase: "plan",
        startBy: new Date().toISOString(),
        runToken: RUN_TOKEN,
        spec: {},
        workloadIdentity: { error: "PUBLIC_URL is not set" },
      },
      "https://outpost.example.com",
    );
    expect(mapped.ok).toBe(false);
  });

  it("builds GCP credentials from a provider name with or without the //iam prefix", () => {
    const a = gcpCredentials({
      providerName: "projects/1/x",
      serviceAccountEmail: undefined,
      tokenFile: "/t",
    });
    const b = gcpCredentials({
      providerName: "//iam.googleapis.com/projects/1/x",
      serviceAccountEmail: undefined,
      tokenFile: "/t",
    });
    expect(a).toEqual(b);
    expect(a).not.toHaveProperty("service_account_impersonation_url");
  });
});

describe("renewal schedule of OIDC-issued agent tokens", () => {
  it("renews when a fifth of the lifetime is left, at most five minutes before expiry", () => {
    expect(renewalDelayMs(0, 10_000)).toBe(8_000);
    expect(renewalDelayMs(0, 3_600_000)).toBe(3_300_000);
    expect(renewalDelayMs(0, 86_400_000)).toBe(86_100_000);
    expect(renewalDelayMs(5_000, 1_000)).toBe(0);
  });
});
