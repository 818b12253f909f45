/**
 * The Terraform and OpenTofu driver. Plan: the backend override and tfvars files, `pre-plan`,
 * `init`, `plan -detailed-exitcode` (with `-destroy` or `-refresh-only` for those operations),
 * `post-plan`, `show -json`, then the plan file, lock file and JSON plan uploaded. Apply: the
 * verified plan file and the lock file, `pre-apply`, `init`, `apply` the saved plan,
 * `post-apply`. State goes through Terraform's `http` backend with the per-run token.
 */
import { existsSync } from "node:fs";
import { readFile, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { unzipSync } from "fflate";
import { jobVariables } from "../job/environment.ts";
import type { RunnerJob } from "../job/types.ts";
import type { EngineDriver, EngineSession, PhaseCommands } from "./driver.ts";
import {
  EngineInstallError,
  type EngineRelease,
  mirrorBase,
  type Platform,
  versionsOfHashicorpIndex,
} from "./release.ts";
import { writeBackendOverride, writeTerraformVariables } from "./terraform-files.ts";
import { summarizePlan } from "./terraform-plan.ts";
import { HASHICORP_KEY, OPENTOFU_KEY } from "./vendor-keys.ts";
import { isExactVersion } from "./versions.ts";

const PLAN_FILE = "plan.tfplan";
const LOCK_FILE = ".terraform.lock.hcl";

type Flavour = "terraform" | "tofu";

/**
 * Where a release lives. Without a mirror: releases.hashicorp.com for terraform and the
 * OpenTofu GitHub releases for tofu, with their official file names. With a mirror base URL:
 * `{mirror}/{engine}/{version}/{file}`, the releases.hashicorp.com layout, easy to copy. The
 * checksums file's OpenPGP signature is `…_SHA256SUMS.sig` for terraform (HashiCorp's detached
 * binary signature) and `…_SHA256SUMS.gpgsig` for tofu (OpenTofu's `.sig` is a cosign one).
 */
function locate(engine: Flavour, version: string, platform: Platform, mirror: string | null) {
  const archiveName = `${engine}_${version}_${platform.os}_${platform.arch}.zip`;
  const sumsName = `${engine}_${version}_SHA256SUMS`;
  const base =
    mirror !== null
      ? `${mirrorBase(mirror)}/${engine}/${version}`
      : engine === "terraform"
        ? `https://releases.hashicorp.com/terraform/${version}`
        : `https://github.com/opentofu/opentofu/releases/download/v${version}`;
  const sumsUrl = `${base}/${sumsName}`;
  const signatureUrl = `${sumsUrl}.${engine === "terraform" ? "sig" : "gpgsig"}`;
  return { archiveName, archiveUrl: `${base}/${archiveName}`, sumsUrl, signatureUrl };
}

/**
 * OpenTofu's index, get.opentofu.org's `tofu/api.json`: `{"versions": [{"id": "1.8.0"}, …]}`
 * (ids may carry a `v`). A mirror publishes a copy of it at `{mirror}/tofu/index.json`.
 */
export function versionsOfTofuIndex(index: unknown): string[] {
  if (typeof index !== "object" || index === null || !("versions" in index)) {
    return [];
  }
  const versions = index.versions;
  return Array.isArray(versions)
    ? versions.flatMap((entry: unknown) => {
        const id = typeof entry === "object" && entry !== null && "id" in entry ? entry.id : null;
        const version = typeof id === "string" ? id.replace(/^v/, "") : "";
        return isExactVersion(version) ? [version] : [];
      })
    : [];
}

/** The engine's single binary out of a release zip, executable. */
async function unzipBinary(engine: Flavour, archive: string, dir: string): Promise<void> {
  let files: Record<string, Uint8Array>;
  try {
    files = unzipSync(await readFile(archive), { filter: (file) => file.name === engine });
  } catch (error) {
    throw new EngineInstallError(
      `${path.basename(archive)} is not a valid zip: ${(error as Error).message}`,
    );
  }
  const binary = files[engine];
  if (binary !== undefined) {
    await writeFile(path.join(dir, engine), binary, { mode: 0o755 });
  }
}

function release(engine: Flavour): EngineRelease {
  return {
    engine,
    constraints: "terraform",
    binaryIn: (versionDir) => path.join(versionDir, engine),
    locate: (version, platform, mirror) => locate(engine, version, platform, mirror),
    unpack: (archive, dir) => unzipBinary(engine, archive, dir),
    indexUrl: (mirror) =>
      mirror !== null
        ? `${mirrorBase(mirror)}/${engine}/index.json`
        : engine === "terraform"
          ? "https://releases.hashicorp.com/terraform/index.json"
          : "https://get.opentofu.org/tofu/api.json",
    versionsOf: engine === "terraform" ? versionsOfHashicorpIndex : versionsOfTofuIndex,
    probe: {
      args: ["version", "-json"],
      parse: (stdout) => {
        // OpenTofu answers with the same member as Terraform.
        const reported = (JSON.parse(stdout) as { terraform_version?: unknown }).terraform_version;
        return typeof reported === "string" && isExactVersion(reported) ? reported : null;
      },
    },
    signingKey: engine === "terraform" ? HASHICORP_KEY : OPENTOFU_KEY,
  };
}

const RELEASES: Record<Flavour, EngineRelease> = {
  terraform: release("terraform"),
  tofu: release("tofu"),
};

/** `init` before either phase: providers from the lock file, modules, the backend. */
const INIT = ["init", "-input=false", "-no-color"];

/**
 * The run's own plan options as flags, one argument each (an address never reaches a shell):
 * `-target=…`, `-replace=…`, `-refresh=false`.
 */
export function runPlanFlags(job: RunnerJob): string[] {
  const options = job.planOptions;
  if (options === undefined) {
    return [];
  }
  return [
    ...options.targetAddrs.map((address) => `-target=${address}`),
    ...options.replaceAddrs.map((address) => `-replace=${address}`),
    ...(options.refresh ? [] : ["-refresh=false"]),
  ];
}

/** `plan` saving the plan file; `-detailed-exitcode` answers 2 when there are changes. */
function planWith(...flags: string[]): PhaseCommands {
  return {
    plan: (job, planFile) => [
      "plan",
      `-out=${planFile}`,
      "-input=false",
      "-detailed-exitcode",
      "-no-color",
      ...flags,
      ...runPlanFlags(job),
      // A speculative plan never holds the state lock, so it never waits on a real run.
      ...(job.isSpeculative ? ["-lock=false"] : []),
    ],
    // The saved plan says what it does (destroy, refresh-only): applying it is the same call.
    apply: (_job, planFile) => ["apply", "-input=false", "-no-color", planFile],
  };
}

async function plan(s: EngineSession): Promise<string> {
  await writeFiles(s);
  await s.hook("pre-plan");
  await s.run(INIT, "init");
  await s.run(terraformDriver.commands[s.job.operation].plan(s.job, PLAN_FILE), "plan", {
    okCodes: [0, 2],
  });
  await s.hook("post-plan");
  const planJson = path.join(s.root, "scratch", "plan.json");
  // stdout to a file: a JSON plan holds every variable value, so it never enters the log.
  await s.run(["show", "-json", PLAN_FILE], "show", { stdoutFile: planJson });
  await s.retry(() => s.port.uploadArtifact("plan-file", path.join(s.workDir, PLAN_FILE)));
  if (existsSync(path.join(s.workDir, LOCK_FILE))) {
    await s.retry(() => s.port.uploadArtifact("lock-file", path.join(s.workDir, LOCK_FILE)));
  }
  await s.retry(() => s.port.uploadArtifact("plan-json", planJson));
  return readFile(planJson, "utf8");
}

async function apply(s: EngineSession): Promise<void> {
  await s.verifiedPlan("plan-file", path.join(s.workDir, PLAN_FILE));
  const lockFile = path.join(s.workDir, LOCK_FILE);
  if (!(await s.retry(() => s.port.downloadArtifact("lock-file", lockFile)))) {
    await rm(lockFile, { force: true });
  }
  await writeFiles(s);
  await s.hook("pre-apply");
  await s.run(INIT, "init");
  await s.run(terraformDriver.commands[s.job.operation].apply(s.job, PLAN_FILE), "apply");
  if (s.isCanceled()) {
    // The apply completed before the cancel took effect: it succeeded, skip the hook.
    s.say("\nOutpost agent: the cancel came after the apply completed; skipping post-apply");
    return;
  }
  await s.hook("post-apply");
}

/** The backend override (state on the coordinator) and the workspace's terraform variables. */
async function writeFiles(s: EngineSession): Promise<void> {
  await writeBackendOverride(s.workDir, s.job.stateAddress);
  await writeTerraformVariables(s.workDir, jobVariables(s.job));
}

/** Terraform and OpenTofu: one driver, two releases. */
export const terraformDriver: EngineDriver = {
  engines: ["terraform", "tofu"],
  release: (engine) => {
    if (engine !== "terraform" && engine !== "tofu") {
      throw new Error(`the Terraform driver does not run ${engine}`);
    }
    return RELEASES[engine];
  },
  // Backend credentials through the environment, so the token never touches a file.
  environment: (job) => ({ TF_HTTP_USERNAME: "outpost", TF_HTTP_PASSWORD: job.runToken }),
  refusal: () => null,
  commands: {
    plan: planWith(),
    apply: planWith(),
    // The apply of a refresh-only plan writes what the refresh read, and nothing else.
    refresh: planWith("-refresh-only"),
    destroy: planWith("-destroy"),
  },
  plan,
  apply,
  summarize: (document, job) =>
    summarizePlan(document, { refreshOnly: job.operation === "refresh" }),
  // Terraform's diagnostics are in the log; the run's reason is the command's exit.
  reasonIn: () => null,
};
