import { writeFile } from "node:fs/promises";
import path from "node:path";
import type { JobVariable } from "@outpost/protocol";

export const BACKEND_OVERRIDE_FILE = "outpost_override.tf";
export const TFVARS_JSON_FILE = "outpost.auto.tfvars.json";
export const TFVARS_HCL_FILE = "outpost.auto.tfvars";

const TF_IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_-]*$/;

/** An HCL quoted string: JSON escaping plus escaped template sequences (`${`, `%{`). */
function hclString(value: string): string {
  return JSON.stringify(value).replaceAll("${", "$${").replaceAll("%{", "%%{");
}

/**
 * How the engine's state calls ride out a coordinator outage (a restart, a redeploy): the http
 * backend retries connection errors, 429 and 5xx up to `retry_max` times, waiting
 * `retry_wait_min * 2^attempt` seconds capped at `retry_wait_max` (Retry-After wins on 429/503).
 * Terraform's defaults (2 retries, 1 s, 30 s) give up after 3 s; these keep retrying for
 * 1+2+4+8+16+7*30 = 241 s, so an outage of four minutes costs time, not the run.
 */
export const STATE_RETRY = { max: 12, waitMinSeconds: 1, waitMaxSeconds: 30 } as const;

/**
 * Writes the override file that points Terraform's `http` backend at the coordinator. The
 * credentials are deliberately absent: they go through `TF_HTTP_USERNAME`/`TF_HTTP_PASSWORD`
 * so the per-run token is never written to disk (terraform records file-given backend settings
 * in `.terraform/terraform.tfstate`). The retry settings ({@link STATE_RETRY}) take precedence
 * over any TF_HTTP_RETRY_* variables, as file-given backend settings do.
 */
export async function writeBackendOverride(workDir: string, stateAddress: string): Promise<void> {
  const address = hclString(stateAddress);
  const text = `# Written by the Outpost agent: state lives on the Outpost coordinator.
terraform {
  backend "http" {
    address        = ${address}
    lock_address   = ${address}
    unlock_address = ${address}
    lock_method    = "LOCK"
    unlock_method  = "UNLOCK"
    update_method  = "POST"
    retry_max      = ${STATE_RETRY.max}
    retry_wait_min = ${STATE_RETRY.waitMinSeconds}
    retry_wait_max = ${STATE_RETRY.waitMaxSeconds}
  }
}
`;
  await writeFile(path.join(workDir, BACKEND_OVERRIDE_FILE), text, { mode: 0o600 });
}

/**
 * Writes the workspace's terraform variables: string values to `outpost.auto.tfvars.json`,
 * HCL ones as `key = <expression>` lines to `outpost.auto.tfvars`. Throws for a key that is
 * not a Terraform identifier (it could otherwise inject HCL).
 */
export async function writeTerraformVariables(
  workDir: string,
  variables: JobVariable[],
): Promise<void> {
  const strings: Record<string, string> = {};
  const hcl: string[] = [];
  for (const variable of variables) {
    if (variable.category !== "terraform") {
      continue;
    }
    if (!TF_IDENTIFIER.test(variable.key)) {
      throw new Error(`terraform variable name "${variable.key}" is not a valid identifier`);
    }
    if (variable.isHcl) {
      hcl.push(`${variable.key} = ${variable.value}`);
    } else {
      strings[variable.key] = variable.value;
    }
  }
  if (Object.keys(strings).length > 0) {
    await writeFile(path.join(workDir, TFVARS_JSON_FILE), `${JSON.stringify(strings, null, 2)}\n`, {
      mode: 0o600,
    });
  }
  if (hcl.length > 0) {
    await writeFile(path.join(workDir, TFVARS_HCL_FILE), `${hcl.join("\n")}\n`, { mode: 0o600 });
  }
}
