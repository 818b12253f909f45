import path from "node:path";
import type { JobVariable } from "@outpost/protocol";
import { PROXY_VARIABLES } from "../net/fetch.ts";
import type { RunnerJob } from "./types.ts";

const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** The PATH of a job whose agent has none. */
export const FALLBACK_PATH = "/usr/local/bin:/usr/bin:/bin";

/** Names a workspace variable or hook export cannot set: the agent owns them. */
export function isReservedName(name: string): boolean {
  return (
    ["PATH", "HOME", "TMPDIR", "TF_IN_AUTOMATION", "TF_INPUT"].includes(name) ||
    name.startsWith("OUTPOST_") ||
    name.startsWith("TF_HTTP_")
  );
}

/**
 * Workspace variables that tell the agent which cloud role to reach with the job's workload
 * identity token (`OUTPOST_AWS_RUN_ROLE_ARN`, …; see `workload-identity.ts`): read by the agent,
 * not passed on, and not reported as ignored.
 */
export function isIdentitySetting(name: string): boolean {
  return /^OUTPOST_(AWS|GCP|AZURE)_[A-Z_]+$/.test(name);
}

/** True when `name` is in the allowlist, exactly or through a `PREFIX*` pattern. */
export function isForwarded(name: string, allowlist: readonly string[]): boolean {
  return allowlist.some((pattern) =>
    pattern.endsWith("*") ? name.startsWith(pattern.slice(0, -1)) : name === pattern,
  );
}

/**
 * The workspace variables a job may see. A job of a pull request from a fork gets none of the
 * sensitive ones, even should the coordinator send them: its code is not trusted with secrets.
 */
export function jobVariables(job: RunnerJob): JobVariable[] {
  return job.isFork ? job.variables.filter((v) => !v.isSensitive) : job.variables;
}

/**
 * The environment of every process a job starts (engine and hooks), built from nothing: the
 * host PATH (with the engine's directory first), HOME and TMPDIR inside the job dir, host
 * variables named by the allowlist (none at all for a job of a pull request from a fork), the
 * workspace's env variables ({@link jobVariables}), then the agent's own (`OUTPOST_*`,
 * `TF_IN_AUTOMATION=1`, `TF_INPUT=0`), which neither can override. Returns the environment and
 * the names that were skipped (reserved or invalid) so the job log can say so.
 */
export function buildJobEnvironment(input: {
  job: RunnerJob;
  hostEnv: NodeJS.ProcessEnv;
  allowlist: readonly string[];
  jobRoot: string;
  engineDir: string;
  /** The agent's proxy and CA settings, passed on unless the operator turned that off. */
  networkEnv?: Record<string, string>;
}): { env: Record<string, string>; skipped: string[] } {
  const { job, hostEnv } = input;
  const env: Record<string, string> = {};
  const skipped: string[] = [];
  // Fork code gets nothing of the host: allowlisted variables are typically cloud credentials.
  const allowlist = job.isFork ? [] : input.allowlist;
  for (const [name, value] of Object.entries(hostEnv)) {
    if (value !== undefined && !isReservedName(name) && isForwarded(name, allowlist)) {
      env[name] = value;
    }
  }
  // Fork code gets the CA settings (nothing secret) but not the proxy: its URL may hold credentials.
  for (const [name, value] of Object.entries(input.networkEnv ?? {})) {
    if (!(job.isFork && (PROXY_VARIABLES as readonly string[]).includes(name))) {
      env[name] = value;
    }
  }
  for (const variable of jobVariables(job)) {
    if (variable.category !== "env" || isIdentitySetting(variable.key)) {
      continue;
    }
    if (!NAME.test(variable.key) || isReservedName(variable.key)) {
      skipped.push(variable.key);
      continue;
    }
    env[variable.key] = variable.value;
  }
  Object.assign(env, {
    PATH: `${input.engineDir}${path.delimiter}${hostEnv.PATH || FALLBACK_PATH}`,
    HOME: path.join(input.jobRoot, "home"),
    TMPDIR: path.join(input.jobRoot, "tmp"),
    TF_IN_AUTOMATION: "1",
    TF_INPUT: "0",
    OUTPOST_RUN_ID: job.runId,
    OUTPOST_JOB_ID: job.jobId,
    OUTPOST_JOB_PHASE: job.phase,
    OUTPOST_RUN_OPERATION: job.operation,
    OUTPOST_WORKSPACE_ID: job.workspaceId,
    OUTPOST_WORKSPACE_NAME: job.workspaceName,
  });
  return { env, skipped };
}

/**
 * Adds hook exports to an environment, refusing the names the agent owns. Returns the names
 * that were refused.
 */
export function applyExports(
  env: Record<string, string>,
  exports: Record<string, string>,
): string[] {
  const refused: string[] = [];
  for (const [name, value] of Object.entries(exports)) {
    if (isReservedName(name)) {
      refused.push(name);
    } else {
      env[name] = value;
    }
  }
  return refused;
}

/** The engine's extra variables: backend credentials, so the token never touches a file. */
export function engineCredentials(runToken: string): Record<string, string> {
  return { TF_HTTP_USERNAME: "outpost", TF_HTTP_PASSWORD: runToken };
}
