/**
 * A job's workload identity: the JWT the coordinator signed for it goes into a file inside the
 * job's own directory (so a sandbox can show it to that job alone) and into
 * `OUTPOST_WORKLOAD_IDENTITY_TOKEN` (and Terraform Cloud's `TFC_WORKLOAD_IDENTITY_TOKEN`). When the
 * workspace names a cloud role, the variables each cloud's SDKs and Terraform providers read are
 * set so they trade the token for credentials themselves; nothing goes through Outpost.
 *
 * Workspace variables that configure this (env category): `OUTPOST_AWS_RUN_ROLE_ARN`,
 * `OUTPOST_GCP_WORKLOAD_PROVIDER_NAME` with optional `OUTPOST_GCP_RUN_SERVICE_ACCOUNT_EMAIL`,
 * `OUTPOST_AZURE_RUN_CLIENT_ID`; each `RUN` may be `PLAN` or `APPLY` for one phase only; and
 * Terraform Cloud's `TFC_<CLOUD>_PROVIDER_AUTH=true` with its `TFC_*` names.
 */
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { jobVariables } from "./environment.ts";

export { isIdentitySetting } from "./environment.ts";

import type { RunnerJob } from "./types.ts";

export const WORKLOAD_IDENTITY_FILE = "workload-identity.jwt";
export const GCP_CREDENTIALS_FILE = "gcp-credentials.json";

type Lookup = (name: string) => string | undefined;

/**
 * The phase's own setting, else the run-wide one (`OUTPOST_AWS_PLAN_ROLE_ARN`, then
 * `OUTPOST_AWS_RUN_ROLE_ARN`); a phase of null reads the one name (`…_WORKLOAD_PROVIDER_NAME`).
 */
function phased(get: Lookup, prefix: string, suffix: string, phase: "plan" | "apply" | null) {
  if (phase === null) {
    return get(`${prefix}_${suffix}`);
  }
  return get(`${prefix}_${phase.toUpperCase()}_${suffix}`) ?? get(`${prefix}_RUN_${suffix}`);
}

/** An Outpost setting, else Terraform Cloud's when its `TFC_<CLOUD>_PROVIDER_AUTH` is true. */
function cloudSetting(get: Lookup, cloud: string, suffix: string, phase: "plan" | "apply" | null) {
  const own = phased(get, `OUTPOST_${cloud}`, suffix, phase);
  if (own !== undefined || get(`TFC_${cloud}_PROVIDER_AUTH`)?.toLowerCase() !== "true") {
    return own;
  }
  return phased(get, `TFC_${cloud}`, suffix, phase);
}

/** GCP's workload identity federation credentials file with the token file as its source. */
export function gcpCredentials(input: {
  providerName: string;
  serviceAccountEmail: string | undefined;
  tokenFile: string;
}) {
  const provider = input.providerName.replace(/^\/\/iam\.googleapis\.com\//, "");
  return {
    type: "external_account",
    audience: `//iam.googleapis.com/${provider}`,
    subject_token_type: "urn:ietf:params:oauth:token-type:jwt",
    token_url: "https://sts.googleapis.com/v1/token",
    credential_source: { file: input.tokenFile, format: { type: "text" } },
    ...(input.serviceAccountEmail
      ? {
          service_account_impersonation_url: `https://iamcredentials.googleapis.com/v1/projects/-/serviceAccounts/${input.serviceAccountEmail}:generateAccessToken`,
        }
      : {}),
  };
}

/**
 * Writes the job's token file (and GCP's credentials file when asked for) under `root` and adds
 * the variables to `env`. Returns lines for the job log (which clouds were set up, or why a
 * cloud setting was ignored: no token, workload identity off, or a fork's job) and the token
 * file, null when none was written; the runner renews that file while the job runs.
 */
export async function prepareWorkloadIdentity(input: {
  root: string;
  job: RunnerJob;
  env: Record<string, string>;
}): Promise<{ lines: string[]; tokenFile: string | null }> {
  const { job: a, env } = input;
  const settings = new Map<string, string>();
  for (const v of jobVariables(a)) {
    if (v.category === "env") {
      settings.set(v.key, v.value);
    }
  }
  const get: Lookup = (name) => settings.get(name);
  const aws = cloudSetting(get, "AWS", "ROLE_ARN", a.phase);
  const gcp = cloudSetting(get, "GCP", "WORKLOAD_PROVIDER_NAME", null);
  const azure = cloudSetting(get, "AZURE", "CLIENT_ID", a.phase);
  const token = a.isFork ? null : (a.workloadIdentityToken ?? null);
  if (token === null) {
    const lines =
      aws || gcp || azure
        ? [
            "Outpost agent: cloud credentials are configured but this job has no workload identity token (turn on the workspace's workloadIdentity; a fork's job never gets one)",
          ]
        : [];
    return { lines, tokenFile: null };
  }
  const tokenFile = path.join(input.root, WORKLOAD_IDENTITY_FILE);
  await writeFile(tokenFile, token, { mode: 0o600 });
  Object.assign(env, {
    OUTPOST_WORKLOAD_IDENTITY_TOKEN: token,
    OUTPOST_WORKLOAD_IDENTITY_TOKEN_FILE: tokenFile,
    TFC_WORKLOAD_IDENTITY_TOKEN: token,
  });
  const lines = ["Outpost agent: workload identity token issued for this job"];
  if (aws) {
    Object.assign(env, {
      AWS_ROLE_ARN: aws,
      AWS_WEB_IDENTITY_TOKEN_FILE: tokenFile,
      AWS_ROLE_SESSION_NAME: `outpost-${a.runId}-${a.phase}`.slice(0, 64),
    });
    lines.push(`Outpost agent: AWS: assuming ${aws} with the workload identity token`);
  }
  if (gcp) {
    const file = path.join(input.root, GCP_CREDENTIALS_FILE);
    const email = cloudSetting(get, "GCP", "SERVICE_ACCOUNT_EMAIL", a.phase);
    const credentials = gcpCredentials({
      providerName: gcp,
      serviceAccountEmail: email,
      tokenFile,
    });
    await writeFile(file, JSON.stringify(credentials, null, 2), { mode: 0o600 });
    Object.assign(env, {
      GOOGLE_APPLICATION_CREDENTIALS: file,
      CLOUDSDK_AUTH_CREDENTIAL_FILE_OVERRIDE: file,
    });
    lines.push(`Outpost agent: GCP: federating through ${gcp}${email ? ` as ${email}` : ""}`);
  }
  if (azure) {
    Object.assign(env, {
      ARM_USE_OIDC: "true",
      ARM_CLIENT_ID: azure,
      ARM_OIDC_TOKEN_FILE_PATH: tokenFile,
      AZURE_CLIENT_ID: azure,
      AZURE_FEDERATED_TOKEN_FILE: tokenFile,
    });
    lines.push(
      `Outpost agent: Azure: logging in as client ${azure} with the workload identity token`,
    );
  }
  return { lines, tokenFile };
}
