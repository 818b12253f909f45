/**
 * A run's own Terraform variables (the CLI's `-var` values, sent through the TFE API): sealed
 * under `ENCRYPTION_KEY` and bound to the run id when the run is queued, opened only when its
 * job is leased, where they win over the workspace's variables of the same key for that job.
 * They are HCL expressions, as Terraform Cloud takes them, and never shown back. A plain string
 * literal is handed to the job decoded, as a string, so the agent masks the bare value.
 */

import { ok } from "@outpost/common";
import type { JobVariable } from "@outpost/protocol";
import { z } from "zod";
import { loadKeyring, open, seal } from "../lib/encryption.ts";
import { type Outcome, refuse } from "../lib/reason.ts";
import { type RunVariable, runJobVariable } from "./run-variable-job.ts";

export type { RunVariable };

const Stored = z.array(z.object({ key: z.string(), value: z.string() }));

function aad(runId: string): string {
  return `run-variables:${runId}`;
}

/**
 * The sealed form of a run's variables for its row, null for none; `unavailable` when the
 * deployment has no usable `ENCRYPTION_KEY` (they are as secret as sensitive variables).
 */
export async function sealRunVariables(
  env: { ENCRYPTION_KEY?: string },
  runId: string,
  variables: readonly RunVariable[],
): Promise<Outcome<string | null, "unavailable">> {
  if (variables.length === 0) {
    return ok(null);
  }
  const keyring = await loadKeyring(env.ENCRYPTION_KEY);
  if (!keyring.ok) {
    return refuse(
      "unavailable",
      `run variables cannot be stored: ENCRYPTION_KEY is ${keyring.reason === "missing" ? "not set" : "unusable"}`,
    );
  }
  const sealed = await seal(keyring.value, JSON.stringify(variables), aad(runId));
  return ok(sealed.sealed);
}

/**
 * The run's variables opened for its job. Throws when they cannot be opened (the key was
 * removed, the row was tampered with): a job must not run without the values it was queued with.
 */
export async function openRunVariables(
  env: { ENCRYPTION_KEY?: string },
  run: { id: string; runVariables: string | null },
): Promise<RunVariable[]> {
  if (run.runVariables === null) {
    return [];
  }
  const keyring = await loadKeyring(env.ENCRYPTION_KEY);
  if (!keyring.ok) {
    throw new Error(`run ${run.id}'s variables cannot be opened: ENCRYPTION_KEY ${keyring.reason}`);
  }
  const opened = await open(keyring.value, run.runVariables, aad(run.id));
  if (!opened.ok) {
    throw new Error(`run ${run.id}'s variables cannot be opened (${opened.reason})`);
  }
  return Stored.parse(JSON.parse(opened.value));
}

/**
 * The job's variables with the run's own on top: a run variable replaces the workspace's
 * Terraform variable of the same key, as `-var` wins over a `.tfvars` file.
 */
export function withRunVariables(
  variables: readonly JobVariable[],
  own: readonly RunVariable[],
): JobVariable[] {
  const keys = new Set(own.map((v) => v.key));
  return [
    ...variables.filter((v) => v.category !== "terraform" || !keys.has(v.key)),
    ...own.map(runJobVariable),
  ];
}
