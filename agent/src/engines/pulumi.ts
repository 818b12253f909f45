/**
 * The Pulumi driver. Plan: restore the checkpoint, select the stack, set its config, then
 * `pulumi preview --save-plan` (or `destroy`/`refresh --preview-only`) with `--json`, and upload
 * the update plan, the preview and the stack settings. Apply: the plan file checked against the
 * hash recorded with the plan, the same restore, `pulumi up --plan` (or `destroy`/`refresh`),
 * and the checkpoint Pulumi leaves uploaded as the workspace's next state version.
 */
import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { PULUMI_BACKEND_URL as BACKEND_URL_VARIABLE } from "@outpost/protocol";
import { jobVariables } from "../job/environment.ts";
import type { RunnerJob } from "../job/types.ts";
import type { EngineDriver, EngineIo, EngineSession, PhaseCommands } from "./driver.ts";
import { describePreview, summarizePreview } from "./pulumi-preview.ts";
import { PULUMI_RELEASE } from "./pulumi-release.ts";
import {
  type CheckpointHistory,
  checkpointForUpload,
  readProjectName,
  restoreCheckpoint,
  stackFile,
} from "./pulumi-state.ts";

const PASSPHRASE_VARIABLES = ["PULUMI_CONFIG_PASSPHRASE", "PULUMI_CONFIG_PASSPHRASE_FILE"];
const CONFIG_KEY = /^[A-Za-z0-9_][A-Za-z0-9_.:-]*$/;

/** True when the workspace names its own backend in a `PULUMI_BACKEND_URL` env variable. */
export function hasOwnBackend(job: RunnerJob): boolean {
  return jobVariables(job).some((v) => v.category === "env" && v.key === BACKEND_URL_VARIABLE);
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
export function pulumiEnvironment(job: RunnerJob, root: string): Record<string, string> {
  return {
    PULUMI_SKIP_UPDATE_CHECK: "true",
    PULUMI_HOME: path.join(root, "home", ".pulumi"),
    PULUMI_FALLBACK_TO_STATE_SECRETS_MANAGER: "true",
    // The DIY backend's lock records a user name, which needs $USER without a passwd entry.
    USER: "outpost",
    ...(hasOwnBackend(job) ? {} : { PULUMI_BACKEND_URL: `file://${backendDir(root)}` }),
  };
}

/** The env variables a fork's job lacks because they are sensitive (told, or sent anyway). */
function withheldEnv(job: RunnerJob): Set<string> {
  const sent = job.isFork ? job.variables.filter((v) => v.isSensitive) : [];
  return new Set(
    [...job.withheldVariables, ...sent].filter((v) => v.category === "env").map((v) => v.key),
  );
}

/**
 * Why the job cannot start, or null. A fork's job gets no sensitive variables: when the
 * workspace names its own backend in a sensitive `PULUMI_BACKEND_URL`, its preview could not
 * reach the stack, so it is refused saying so. A stack kept by Outpost encrypts its secrets
 * with the passphrase provider, so `PULUMI_CONFIG_PASSPHRASE` must come from a sensitive
 * variable.
 */
export function pulumiRefusal(job: RunnerJob): string | null {
  if (withheldEnv(job).has(BACKEND_URL_VARIABLE)) {
    return `the workspace names its own backend in ${BACKEND_URL_VARIABLE}, a sensitive variable, and a pull request from a fork gets no sensitive variables: its preview cannot reach the stack's backend. Make ${BACKEND_URL_VARIABLE} a plain variable (its credentials stay in sensitive ones, which a fork's preview does without) or set the workspace's forkPullRequests to refuse`;
  }
  if (hasOwnBackend(job)) {
    return null;
  }
  const given = jobVariables(job).find(
    (v) => v.category === "env" && PASSPHRASE_VARIABLES.includes(v.key),
  );
  if (given !== undefined) {
    return given.isSensitive || given.key.endsWith("_FILE")
      ? null
      : `${given.key} must be a sensitive variable (it protects the stack's secrets); mark it sensitive`;
  }
  if (job.isFork) {
    return "a pull request from a fork gets no sensitive variables, so no PULUMI_CONFIG_PASSPHRASE: its preview cannot open the stack's secrets";
  }
  return "the stack's secrets use the passphrase provider: add PULUMI_CONFIG_PASSPHRASE as a sensitive env variable of the workspace";
}

/** The stack as commands name it: the bare name in Outpost's DIY backend, else as given. */
function stackRef(job: RunnerJob): string {
  const name = job.stackName ?? "";
  return hasOwnBackend(job) ? name : (name.split("/").pop() ?? name);
}

/** Every Pulumi command runs without prompts. */
function pulumi(s: EngineSession, args: string[], what: string, io?: EngineIo): Promise<number> {
  return s.run([...args, "--non-interactive"], what, io);
}

type Prepared = {
  stack: string;
  history: CheckpointHistory;
  restored: Buffer | null;
  file: string;
};

/** The stack's checkpoint restored into the job's DIY backend (none with an own backend). */
async function restore(s: EngineSession): Promise<Prepared> {
  const project = await readProjectName(s.workDir);
  const stack = stackRef(s.job);
  const file = stackFile(backendDir(s.root), project, stack);
  if (hasOwnBackend(s.job)) {
    s.say(
      `Outpost agent: the stack lives in the workspace's own backend (${BACKEND_URL_VARIABLE}); Outpost keeps no checkpoint`,
    );
    return { stack, history: null, restored: null, file };
  }
  const downloaded = path.join(s.root, "scratch", "checkpoint.json");
  const has = await s.retry(() => s.port.downloadState(s.job.stateAddress, downloaded));
  const restored = has ? await readFile(downloaded) : null;
  const history = await restoreCheckpoint({
    backendDir: backendDir(s.root),
    project,
    stack,
    checkpoint: restored,
  });
  s.say(
    history === null
      ? `Outpost agent: no checkpoint yet; stack ${stack} of project ${project} starts empty`
      : `Outpost agent: restored the checkpoint of stack ${stack} (state serial ${history.serial})`,
  );
  return { stack, history, restored, file };
}

/** Selects (or creates) the stack and sets its config from the terraform-category variables. */
async function selectStack(s: EngineSession, stack: string): Promise<void> {
  // A preview of a pull request against the workspace's own backend must not create stacks there.
  const mayCreate = !(s.job.isSpeculative && hasOwnBackend(s.job));
  const create = mayCreate ? ["--create"] : [];
  const provider = hasOwnBackend(s.job) ? [] : ["--secrets-provider", "passphrase"];
  await pulumi(s, ["stack", "select", stack, ...create, ...provider], "stack select");
  for (const v of jobVariables(s.job)) {
    if (v.category !== "terraform") {
      continue;
    }
    if (v.isHcl || !CONFIG_KEY.test(v.key)) {
      s.say(
        `Outpost agent: skipped variable ${v.key}: ${v.isHcl ? "HCL values are Terraform-only" : "not a Pulumi config key"}`,
      );
      continue;
    }
    // The value goes through stdin: never on a command line other processes can read.
    const kind = v.isSensitive ? "--secret" : "--plaintext";
    await pulumi(s, ["config", "set", v.key, kind, "-s", stack], "config set", {
      stdinText: v.value,
    });
  }
}

const COMMANDS: Record<"update" | "destroy" | "refresh", PhaseCommands> = {
  update: {
    plan: (job, planFile) => ["preview", "--json", "--save-plan", planFile, "-s", stackRef(job)],
    apply: (job, planFile) => [
      "up",
      "--plan",
      planFile,
      "-s",
      stackRef(job),
      "--yes",
      "--skip-preview",
    ],
  },
  destroy: {
    plan: (job) => ["destroy", "--preview-only", "--json", "-s", stackRef(job)],
    apply: (job) => ["destroy", "-s", stackRef(job), "--yes", "--skip-preview"],
  },
  refresh: {
    plan: (job) => ["refresh", "--preview-only", "--json", "-s", stackRef(job)],
    apply: (job) => ["refresh", "-s", stackRef(job), "--yes", "--skip-preview"],
  },
};

async function plan(s: EngineSession): Promise<string> {
  const prepared = await restore(s);
  await s.hook("pre-plan");
  await selectStack(s, prepared.stack);
  const planFile = path.join(s.root, "scratch", "update-plan.json");
  const previewJson = path.join(s.root, "scratch", "preview.json");
  // stdout to a file: the JSON holds config and state, so only the description enters the log.
  await pulumi(s, pulumiDriver.commands[s.job.operation].plan(s.job, planFile), "preview", {
    stdoutFile: previewJson,
  });
  const json = await readFile(previewJson, "utf8");
  for (const line of describePreview(json)) {
    s.say(line);
  }
  await s.hook("post-plan");
  // Destroy and refresh have no update plan; their confirmed preview is what the apply checks.
  const carried =
    s.job.operation === "destroy" || s.job.operation === "refresh" ? previewJson : planFile;
  await s.retry(() => s.port.uploadArtifact("plan-file", carried));
  await s.retry(() => s.port.uploadArtifact("plan-json", previewJson));
  const settings = path.join(s.workDir, `Pulumi.${prepared.stack}.yaml`);
  await s
    .retry(() => s.port.uploadArtifact("stack-settings", settings))
    .catch(() => {
      s.say("Outpost agent: no stack settings file to carry to the apply");
    });
  return json;
}

/**
 * The apply phase. The checkpoint is uploaded whenever Pulumi changed it, also when the update
 * failed halfway: the resources it did create must stay in the state.
 */
async function apply(s: EngineSession): Promise<void> {
  const planFile = path.join(s.root, "scratch", "update-plan.json");
  await s.verifiedPlan("plan-file", planFile);
  const prepared = await restore(s);
  const settings = path.join(s.workDir, `Pulumi.${prepared.stack}.yaml`);
  await s.retry(() => s.port.downloadArtifact("stack-settings", settings));
  await s.hook("pre-apply");
  await selectStack(s, prepared.stack);
  const what = s.job.operation === "apply" ? "up" : s.job.operation;
  try {
    await pulumi(s, pulumiDriver.commands[s.job.operation].apply(s.job, planFile), what);
  } finally {
    await uploadCheckpoint(s, prepared);
  }
  await s.hook("post-apply");
}

async function uploadCheckpoint(s: EngineSession, prepared: Prepared): Promise<void> {
  if (hasOwnBackend(s.job)) {
    return;
  }
  const current = await readFile(prepared.file).catch(() => null);
  if (current === null || (prepared.restored !== null && current.equals(prepared.restored))) {
    s.say("Outpost agent: the checkpoint did not change; no new state version");
    return;
  }
  const body = await checkpointForUpload(prepared.file, prepared.history);
  if (body === null) {
    return;
  }
  const upload = path.join(s.root, "scratch", "checkpoint-upload.json");
  await writeFile(upload, body, { mode: 0o600 });
  const written = await s.retry(() => s.port.uploadState(s.job.stateAddress, upload));
  s.say(`Outpost agent: uploaded the checkpoint as state version ${written.stateVersionId}`);
}

/** Pulumi stacks, their checkpoint kept by Outpost or in the workspace's own backend. */
export const pulumiDriver: EngineDriver = {
  engines: ["pulumi"],
  release: () => PULUMI_RELEASE,
  environment: pulumiEnvironment,
  refusal: pulumiRefusal,
  commands: {
    plan: COMMANDS.update,
    apply: COMMANDS.update,
    destroy: COMMANDS.destroy,
    refresh: COMMANDS.refresh,
  },
  plan,
  apply,
  summarize: (document, job) => summarizePreview(document, job.operation === "refresh"),
  // Pulumi prints its reason as `error: …`; the last one is the run's.
  reasonIn: (output) => {
    const reasons = [...output.matchAll(/^error: (.+)$/gm)];
    return reasons.at(-1)?.[1] ?? null;
  },
};
