/**
 * A Pulumi job's steps. Plan: restore the checkpoint, select the stack, set its config, then
 * `pulumi preview --save-plan` (or `destroy`/`refresh --preview-only`) with `--json`, and upload
 * the update plan, the preview and the stack settings. Apply: the same restore, the plan file
 * checked against the hash recorded with the plan, `pulumi up --plan` (or `destroy`/`refresh`),
 * and the checkpoint Pulumi leaves uploaded as the workspace's next state version.
 */

import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { PULUMI_BACKEND_URL as BACKEND_URL_VARIABLE } from "@outpost/protocol";
import { jobVariables } from "./environment.ts";
import type { HookName } from "./hooks.ts";
import { describePreview, summarizePreview } from "./pulumi-preview.ts";
import {
  type CheckpointHistory,
  checkpointForUpload,
  readProjectName,
  restoreCheckpoint,
  stackFile,
} from "./pulumi-state.ts";
import type { CoordinatorPort, JobAssignment, PlanSummary } from "./types.ts";

const PASSPHRASE_VARIABLES = ["PULUMI_CONFIG_PASSPHRASE", "PULUMI_CONFIG_PASSPHRASE_FILE"];
const CONFIG_KEY = /^[A-Za-z0-9_][A-Za-z0-9_.:-]*$/;

/** What the Pulumi steps need from the job that runs them. */
export type PulumiJob = {
  a: JobAssignment;
  root: string;
  workDir: string;
  port: CoordinatorPort;
  say(line: string): void;
  /** Runs `pulumi args…` (with `--non-interactive`); throws unless it exits 0. */
  pulumi(
    args: string[],
    what: string,
    io?: { stdoutFile?: string; stdinText?: string },
  ): Promise<void>;
  hook(name: HookName): Promise<void>;
  retry<T>(fn: () => Promise<T>): Promise<T>;
};

/** True when the workspace names its own backend in a `PULUMI_BACKEND_URL` env variable. */
export function hasOwnBackend(a: JobAssignment): boolean {
  return jobVariables(a).some((v) => v.category === "env" && v.key === BACKEND_URL_VARIABLE);
}

/** Where a job keeps the DIY backend that holds the restored checkpoint. */
export function backendDir(root: string): string {
  return path.join(root, "pulumi-state");
}

/**
 * The engine environment Outpost sets for every Pulumi command: no update check, a per-job
 * `PULUMI_HOME`, the DIY backend in the job dir (unless the workspace names its own), and the
 * state's secrets provider reused when the project has no `Pulumi.<stack>.yaml` salt.
 */
export function pulumiEnvironment(a: JobAssignment, root: string): Record<string, string> {
  return {
    PULUMI_SKIP_UPDATE_CHECK: "true",
    PULUMI_HOME: path.join(root, "home", ".pulumi"),
    PULUMI_FALLBACK_TO_STATE_SECRETS_MANAGER: "true",
    // The DIY backend's lock records a user name, which needs $USER without a passwd entry.
    USER: "outpost",
    ...(hasOwnBackend(a) ? {} : { PULUMI_BACKEND_URL: `file://${backendDir(root)}` }),
  };
}

/**
 * Why the job cannot start, or null. A stack kept by Outpost encrypts its secrets with the
 * passphrase provider, so `PULUMI_CONFIG_PASSPHRASE` must come from a sensitive variable.
 */
export function passphraseProblem(a: JobAssignment): string | null {
  if (hasOwnBackend(a)) {
    return null;
  }
  const given = jobVariables(a).find(
    (v) => v.category === "env" && PASSPHRASE_VARIABLES.includes(v.key),
  );
  if (given !== undefined) {
    return given.sensitive || given.key.endsWith("_FILE")
      ? null
      : `${given.key} must be a sensitive variable (it protects the stack's secrets); mark it sensitive`;
  }
  if (a.fork) {
    return "a pull request from a fork gets no sensitive variables, so no PULUMI_CONFIG_PASSPHRASE: its preview cannot open the stack's secrets";
  }
  return "the stack's secrets use the passphrase provider: add PULUMI_CONFIG_PASSPHRASE as a sensitive env variable of the workspace";
}

/** The stack as commands name it: the bare name in Outpost's DIY backend, else as given. */
function stackRef(a: JobAssignment): string {
  const name = a.stackName ?? "";
  return hasOwnBackend(a) ? name : (name.split("/").pop() ?? name);
}

type Prepared = {
  stack: string;
  history: CheckpointHistory;
  restored: Buffer | null;
  file: string;
};

async function prepare(job: PulumiJob): Promise<Prepared> {
  const problem = passphraseProblem(job.a);
  if (problem !== null) {
    throw new Error(problem);
  }
  const project = await readProjectName(job.workDir);
  const stack = stackRef(job.a);
  const file = stackFile(backendDir(job.root), project, stack);
  if (hasOwnBackend(job.a)) {
    job.say(
      `Outpost agent: the stack lives in the workspace's own backend (${BACKEND_URL_VARIABLE}); Outpost keeps no checkpoint`,
    );
    return { stack, history: null, restored: null, file };
  }
  const downloaded = path.join(job.root, "scratch", "checkpoint.json");
  const has = await job.retry(() => job.port.downloadState(job.a.stateAddress, downloaded));
  const restored = has ? await readFile(downloaded) : null;
  const history = await restoreCheckpoint({
    backendDir: backendDir(job.root),
    project,
    stack,
    checkpoint: restored,
  });
  job.say(
    history === null
      ? `Outpost agent: no checkpoint yet; stack ${stack} of project ${project} starts empty`
      : `Outpost agent: restored the checkpoint of stack ${stack} (state serial ${history.serial})`,
  );
  return { stack, history, restored, file };
}

/** Selects (or creates) the stack and sets its config from the terraform-category variables. */
async function selectStack(job: PulumiJob, stack: string): Promise<void> {
  // A preview of a pull request against the workspace's own backend must not create stacks there.
  const mayCreate = !(job.a.speculative && hasOwnBackend(job.a));
  const create = mayCreate ? ["--create"] : [];
  const provider = hasOwnBackend(job.a) ? [] : ["--secrets-provider", "passphrase"];
  await job.pulumi(["stack", "select", stack, ...create, ...provider], "stack select");
  for (const v of jobVariables(job.a)) {
    if (v.category !== "terraform") {
      continue;
    }
    if (v.hcl || !CONFIG_KEY.test(v.key)) {
      job.say(
        `Outpost agent: skipped variable ${v.key}: ${v.hcl ? "HCL values are Terraform-only" : "not a Pulumi config key"}`,
      );
      continue;
    }
    // The value goes through stdin: never on a command line other processes can read.
    const kind = v.sensitive ? "--secret" : "--plaintext";
    await job.pulumi(["config", "set", v.key, kind, "-s", stack], "config set", {
      stdinText: v.value,
    });
  }
}

/** The preview command of the run's operation, printing one JSON document. */
function previewArgs(a: JobAssignment, stack: string, planFile: string): string[] {
  switch (a.operation) {
    case "destroy":
      return ["destroy", "--preview-only", "--json", "-s", stack];
    case "refresh":
      return ["refresh", "--preview-only", "--json", "-s", stack];
    default:
      return ["preview", "--json", "--save-plan", planFile, "-s", stack];
  }
}

/** The plan phase; answers the summary the run shows. */
export async function pulumiPlan(job: PulumiJob): Promise<PlanSummary> {
  const prepared = await prepare(job);
  await job.hook("pre-plan");
  await selectStack(job, prepared.stack);
  const planFile = path.join(job.root, "scratch", "update-plan.json");
  const previewJson = path.join(job.root, "scratch", "preview.json");
  // stdout to a file: the JSON holds config and state, so only the description enters the log.
  await job.pulumi(previewArgs(job.a, prepared.stack, planFile), "preview", {
    stdoutFile: previewJson,
  });
  const json = await readFile(previewJson, "utf8");
  for (const line of describePreview(json)) {
    job.say(line);
  }
  const summary = summarizePreview(json);
  await job.hook("post-plan");
  // Destroy and refresh have no update plan; their confirmed preview is what the apply checks.
  const carried =
    job.a.operation === "destroy" || job.a.operation === "refresh" ? previewJson : planFile;
  await job.retry(() => job.port.uploadArtifact("plan-file", carried));
  await job.retry(() => job.port.uploadArtifact("plan-json", previewJson));
  const settings = path.join(job.workDir, `Pulumi.${prepared.stack}.yaml`);
  await job
    .retry(() => job.port.uploadArtifact("stack-settings", settings))
    .catch(() => {
      job.say("Outpost agent: no stack settings file to carry to the apply");
    });
  return summary;
}

/**
 * The apply phase, with `planFile` already checked against the recorded hash. The checkpoint
 * is uploaded whenever Pulumi changed it, also when the update failed halfway: the resources
 * it did create must stay in the state.
 */
export async function pulumiApply(job: PulumiJob, planFile: string): Promise<void> {
  const prepared = await prepare(job);
  const settings = path.join(job.workDir, `Pulumi.${prepared.stack}.yaml`);
  await job.retry(() => job.port.downloadArtifact("stack-settings", settings));
  await job.hook("pre-apply");
  await selectStack(job, prepared.stack);
  const s = ["-s", prepared.stack, "--yes", "--skip-preview"];
  const args =
    job.a.operation === "destroy"
      ? ["destroy", ...s]
      : job.a.operation === "refresh"
        ? ["refresh", ...s]
        : ["up", "--plan", planFile, ...s];
  try {
    await job.pulumi(args, job.a.operation === "apply" ? "up" : job.a.operation);
  } finally {
    await uploadCheckpoint(job, prepared);
  }
  await job.hook("post-apply");
}

async function uploadCheckpoint(job: PulumiJob, prepared: Prepared): Promise<void> {
  if (hasOwnBackend(job.a)) {
    return;
  }
  const current = await readFile(prepared.file).catch(() => null);
  if (current === null || (prepared.restored !== null && current.equals(prepared.restored))) {
    job.say("Outpost agent: the checkpoint did not change; no new state version");
    return;
  }
  const body = await checkpointForUpload(prepared.file, prepared.history);
  if (body === null) {
    return;
  }
  const upload = path.join(job.root, "scratch", "checkpoint-upload.json");
  await writeFile(upload, body, { mode: 0o600 });
  const written = await job.retry(() => job.port.uploadState(job.a.stateAddress, upload));
  job.say(`Outpost agent: uploaded the checkpoint as state version ${written.stateVersionId}`);
}
