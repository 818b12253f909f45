import { existsSync } from "node:fs";
import { mkdir, readFile, rm } from "node:fs/promises";
import path from "node:path";
import { ensureEngine } from "../engines/install.ts";
import { ensurePulumi } from "../engines/pulumi-install.ts";
import { resolveEngineVersion } from "../engines/resolve.ts";
import { type RunningProcess, startProcess } from "../exec/process.ts";
import { MASK, secretVariants } from "../logs/masker.ts";
import { LogStreamer } from "../logs/streamer.ts";
import { retry } from "../retry.ts";
import { type JobContainment, jobContainment } from "./containment.ts";
import {
  applyExports,
  buildJobEnvironment,
  engineCredentials,
  jobVariables,
} from "./environment.ts";
import { writeBackendOverride, writeTerraformVariables } from "./files.ts";
import { type HookName, runHeldHook } from "./hooks.ts";
import { checkPlanFile } from "./plan-file.ts";
import { summarizePlan } from "./plan-summary.ts";
import { type PulumiJob, pulumiApply, pulumiEnvironment, pulumiPlan } from "./pulumi.ts";
import { extractConfiguration, resolveWorkingDirectory } from "./source.ts";
import type {
  CoordinatorPort,
  JobAssignment,
  JobOutcome,
  JobSettings,
  PlanSummary,
} from "./types.ts";
import { cloneAtCommit, localRepositoryPath } from "./vcs.ts";
import { createJobDir, removeJobDir } from "./workdirs.ts";
import { prepareWorkloadIdentity } from "./workload-identity.ts";

const PLAN_FILE = "plan.tfplan";
const LOCK_FILE = ".terraform.lock.hcl";

/** A job in progress. */
export type JobHandle = {
  /** Resolves (never rejects) when the job ended and its directory is gone. */
  readonly done: Promise<JobOutcome>;
  /** Graceful: SIGINT now, again after the grace period. Force: SIGKILL now. Idempotent. */
  cancel(options: { force: boolean }): void;
};

/** Who runs the job, for the log's first line (agent id, name, version, pool, isolation). */
function agentLine(settings: JobSettings): string {
  const agent = settings.agent;
  if (!agent) {
    return "Outpost agent";
  }
  const name = agent.name ? `${agent.name} (${agent.id})` : agent.id;
  return `Outpost agent ${name} v${agent.version} in pool ${agent.poolId}, isolation ${agent.isolation}`;
}

class JobFailure extends Error {
  readonly exitCode: number | null;
  constructor(message: string, exitCode: number | null = null) {
    super(message);
    this.exitCode = exitCode;
  }
}
class Canceled extends Error {}

/**
 * Runs one job in a fresh directory under `settings.dataDir/jobs`, removed afterwards whatever
 * happens (by a watchdog, or by the next agent to start, should this one die). Every process
 * runs as `settings.isolation` says (see `containment.ts`). Plan: engine install, configuration, override and tfvars files, pre-plan hook,
 * `init`, `plan -detailed-exitcode`, post-plan hook, `show -json`, then uploads the plan file,
 * lock file and JSON plan and reports the summary. Apply: downloads the plan and lock file,
 * pre-apply hook, `init`, `apply` the saved plan, post-apply hook. The log (masked) streams
 * through `port.sendLogChunk`; the outcome says succeeded, failed (with why) or canceled.
 */
export function startJob(
  assignment: JobAssignment,
  port: CoordinatorPort,
  settings: JobSettings,
): JobHandle {
  const job = new Job(assignment, port, settings);
  // Only the agent's own disk can fail here (job dir, spool file); still an outcome, not a throw.
  const done = job.run().catch(
    (error: unknown): JobOutcome => ({
      status: "failed",
      message: `agent error: ${error instanceof Error ? error.message : String(error)}`,
      exitCode: null,
      planSummary: null,
      logLength: 0,
    }),
  );
  return { done, cancel: (options) => job.cancel(options.force) };
}

class Job {
  private canceled: "graceful" | "force" | null = null;
  private current: RunningProcess | null = null;
  private killHook: (() => void) | null = null;
  private log: LogStreamer | null = null;
  private env: Record<string, string> = {};
  private engineEnv: Record<string, string> = {};
  private lastExitCode: number | null = null;
  private containment: JobContainment | null = null;
  private readonly a: JobAssignment;
  private readonly port: CoordinatorPort;
  private readonly settings: JobSettings;

  constructor(a: JobAssignment, port: CoordinatorPort, settings: JobSettings) {
    this.a = a;
    this.port = port;
    this.settings = settings;
  }

  cancel(force: boolean): void {
    if (this.canceled === "force" || (this.canceled === "graceful" && !force)) {
      return;
    }
    this.canceled = force ? "force" : "graceful";
    if (force) {
      this.current?.forceKill();
    } else {
      this.current?.cancel(this.settings.cancelGraceMs);
    }
    this.killHook?.();
  }

  async run(): Promise<JobOutcome> {
    const dir = await createJobDir(this.settings.dataDir, this.a.jobId);
    const root = dir.root;
    this.containment = jobContainment(this.settings, dir, this.a.fork);
    let outcome: JobOutcome;
    try {
      const secrets = [
        this.a.runToken,
        this.a.workloadIdentityToken ?? "",
        ...this.a.variables.filter((v) => v.sensitive).map((v) => v.value),
      ];
      this.log = new LogStreamer({
        send: this.port.sendLogChunk,
        spoolFile: path.join(root, "log.spool"),
        secrets: secretVariants(secrets),
      });
      outcome = await this.execute(root);
      try {
        await this.log.close();
      } catch (error) {
        outcome = {
          ...outcome,
          status: "failed",
          message: `log upload failed: ${(error as Error).message}`,
        };
      }
      outcome.logLength = this.log.length;
      outcome.engineVersion = this.engineVersion;
    } finally {
      await removeJobDir(dir);
    }
    return outcome;
  }

  private say(line: string): void {
    this.log?.write(`${line}\n`);
  }

  private async execute(root: string): Promise<JobOutcome> {
    let planSummary: PlanSummary | null = null;
    try {
      this.say(
        `${agentLine(this.settings)}: ${this.a.phase} job ${this.a.jobId} for run ${this.a.runId} in workspace ${this.a.workspaceName}`,
      );
      const workDir = await this.prepare(root);
      if (this.a.engine === "pulumi") {
        planSummary = await this.pulumi(root, workDir);
      } else if (this.a.phase === "plan") {
        planSummary = await this.plan(root, workDir);
      } else {
        await this.apply(root, workDir);
      }
      return {
        status: "succeeded",
        message: null,
        exitCode: this.lastExitCode,
        planSummary,
        logLength: 0,
      };
    } catch (error) {
      if (this.canceled !== null || error instanceof Canceled) {
        this.say(`\nOutpost agent: the ${this.a.phase} was canceled`);
        return {
          status: "canceled",
          message: "canceled",
          exitCode: this.lastExitCode,
          planSummary,
          logLength: 0,
        };
      }
      const message = error instanceof Error ? error.message : String(error);
      this.say(`\nOutpost agent: ${this.a.phase} failed: ${message}`);
      const exitCode = error instanceof JobFailure ? error.exitCode : this.lastExitCode;
      return { status: "failed", message, exitCode, planSummary, logLength: 0 };
    }
  }

  private contained(): JobContainment {
    if (this.containment === null) {
      throw new Error("the job directory does not exist yet");
    }
    return this.containment;
  }

  private checkCanceled(): void {
    if (this.canceled !== null) {
      throw new Canceled("canceled");
    }
  }

  /** Engine, configuration, working directory, generated files and the environment. */
  private async prepare(root: string): Promise<string> {
    // Retries its downloads itself, so its failure can say how many attempts it made.
    const install = {
      dataDir: this.settings.dataDir,
      releaseMirror: this.settings.releaseMirror,
      searchPath: this.settings.hostEnv.PATH ?? "",
      onProgress: (line: string) => this.say(line),
    };
    const installStarted = performance.now();
    let engine: { path: string; source: "cache" | "path" | "download" };
    if (this.a.engine === "pulumi") {
      const pulumi = await ensurePulumi({ ...install, constraint: this.a.engineVersion });
      this.engineVersion = pulumi.version;
      engine = pulumi;
    } else {
      const constraint = this.a.engineVersion;
      const options = { engine: this.a.engine, constraint, ...install };
      this.engineVersion = await resolveEngineVersion(options);
      this.checkCanceled();
      engine = await ensureEngine({
        ...install,
        engine: this.a.engine,
        version: this.engineVersion,
      });
    }
    this.settings.onEngineReady?.({
      engine: this.a.engine,
      source: engine.source,
      seconds: (performance.now() - installStarted) / 1000,
    });
    this.checkCanceled();
    const configDir = path.join(root, "config");
    await Promise.all(["home", "tmp", "scratch"].map((d) => mkdir(path.join(root, d))));
    const source = this.a.source;
    if (source.kind === "configuration") {
      const archive = path.join(root, "configuration.tar.gz");
      await retryTransient(() => this.port.downloadConfiguration(source.url, archive));
      const { droppedLinks } = await extractConfiguration({
        archive,
        expectedSha256: source.sha256,
        dest: configDir,
        maxBytes: this.settings.maxConfigurationBytes,
      });
      for (const link of droppedLinks) {
        this.say(`Outpost agent: skipped link ${link} in the configuration`);
      }
    } else {
      this.say(`Cloning ${source.repoUrl} at ${source.commitSha}`);
      await cloneAtCommit({
        ...source,
        dest: configDir,
        allowFileRepos: this.settings.allowFileRepos,
        hostEnv: this.settings.hostEnv,
        networkEnv: this.settings.networkEnv,
        containment: this.contained().git(configDir, localRepository(source.repoUrl)),
      });
    }
    const workDir = await resolveWorkingDirectory(configDir, this.a.workingDirectory);
    if (this.a.engine !== "pulumi") {
      await writeBackendOverride(workDir, this.a.stateAddress);
      await writeTerraformVariables(workDir, jobVariables(this.a));
    }
    if (this.a.fork) {
      this.say(
        "Outpost agent: pull request from a fork: no host variables, no sensitive variables, no hooks",
      );
    }
    const { env, skipped } = buildJobEnvironment({
      assignment: this.a,
      hostEnv: this.settings.hostEnv,
      allowlist: this.settings.envForward,
      jobRoot: root,
      engineDir: path.dirname(engine.path),
      networkEnv: this.settings.networkEnv,
    });
    for (const name of skipped) {
      this.say(`Outpost agent: ignored workspace variable ${name} (reserved or not a valid name)`);
    }
    for (const line of await prepareWorkloadIdentity({ root, assignment: this.a, env })) {
      this.say(line);
    }
    this.env = env;
    this.engineEnv =
      this.a.engine === "pulumi"
        ? pulumiEnvironment(this.a, root)
        : { ...engineCredentials(this.a.runToken) };
    this.enginePath = engine.path;
    return workDir;
  }

  private enginePath = "";
  /** The exact version resolved from the job's constraint, once known. */
  private engineVersion: string | null = null;

  private async plan(root: string, workDir: string): Promise<PlanSummary> {
    await this.hook("pre-plan", root, workDir);
    await this.engine(workDir, ["init", "-input=false", "-no-color"], "init");
    const args = ["plan", `-out=${PLAN_FILE}`, "-input=false", "-detailed-exitcode", "-no-color"];
    if (this.a.operation === "destroy") {
      args.push("-destroy");
    }
    if (this.a.operation === "refresh") {
      // The apply of a refresh-only plan writes what the refresh read, and nothing else.
      args.push("-refresh-only");
    }
    if (this.a.speculative) {
      args.push("-lock=false");
    }
    await this.engine(workDir, args, "plan", [0, 2]);
    await this.hook("post-plan", root, workDir);
    const planJson = path.join(root, "scratch", "plan.json");
    // stdout to a file: a JSON plan holds every variable value, so it never enters the log.
    await this.engine(workDir, ["show", "-json", PLAN_FILE], "show", [0], planJson);
    const summary = summarizePlan(await readFile(planJson, "utf8"));
    await retryTransient(() =>
      this.port.uploadArtifact("plan-file", path.join(workDir, PLAN_FILE)),
    );
    if (existsSync(path.join(workDir, LOCK_FILE))) {
      await retryTransient(() =>
        this.port.uploadArtifact("lock-file", path.join(workDir, LOCK_FILE)),
      );
    }
    await retryTransient(() => this.port.uploadArtifact("plan-json", planJson));
    return summary;
  }

  private async apply(root: string, workDir: string): Promise<void> {
    const planFile = path.join(workDir, PLAN_FILE);
    if (!(await retryTransient(() => this.port.downloadArtifact("plan-file", planFile)))) {
      throw new JobFailure("the coordinator has no plan file for this run");
    }
    await this.checkPlanHash(planFile);
    const hasLock = await retryTransient(() =>
      this.port.downloadArtifact("lock-file", path.join(workDir, LOCK_FILE)),
    );
    if (!hasLock) {
      await rm(path.join(workDir, LOCK_FILE), { force: true });
    }
    await this.hook("pre-apply", root, workDir);
    await this.engine(workDir, ["init", "-input=false", "-no-color"], "init");
    await this.engine(workDir, ["apply", "-input=false", "-no-color", PLAN_FILE], "apply");
    if (this.canceled !== null) {
      // The apply completed before the cancel took effect: it succeeded, skip the hook.
      this.say("\nOutpost agent: the cancel came after the apply completed; skipping post-apply");
      return;
    }
    await this.hook("post-apply", root, workDir);
  }

  /** A Pulumi job: the steps are in `pulumi.ts`; this job runs their commands and hooks. */
  private async pulumi(root: string, workDir: string): Promise<PlanSummary | null> {
    const steps: PulumiJob = {
      a: this.a,
      root,
      workDir,
      port: this.port,
      say: (line) => this.say(line),
      pulumi: async (args, what, io = {}) => {
        await this.engine(
          workDir,
          [...args, "--non-interactive"],
          what,
          [0],
          io.stdoutFile,
          io.stdinText,
        );
      },
      hook: (name) => this.hook(name, root, workDir),
      retry: retryTransient,
    };
    if (this.a.phase === "plan") {
      return pulumiPlan(steps);
    }
    const planFile = path.join(root, "scratch", "update-plan.json");
    if (!(await retryTransient(() => this.port.downloadArtifact("plan-file", planFile)))) {
      throw new JobFailure("the coordinator has no plan file for this run");
    }
    await this.checkPlanHash(planFile);
    await pulumiApply(steps, planFile);
    return null;
  }

  /** The plan that was confirmed is the plan that is applied: anything else is refused. */
  private async checkPlanHash(planFile: string): Promise<void> {
    const check = await checkPlanFile(planFile, this.a.planSha256);
    if (!check.ok) {
      throw new JobFailure(check.reason);
    }
    this.say(`Outpost agent: plan file verified (SHA-256 ${check.sha256})`);
  }

  /** Runs a hook; its output reaches the log when it exits (see `runHeldHook`). */
  private async hook(name: HookName, root: string, workDir: string): Promise<void> {
    this.checkCanceled();
    const exports = await runHeldHook(
      {
        name,
        hooksDir: this.settings.hooksDir,
        timeoutMs: this.settings.hookTimeoutMs,
        cwd: workDir,
        env: this.env,
        scratchDir: path.join(root, "scratch"),
        isFork: this.a.fork,
        control: { onStart: (kill) => (this.killHook = kill) },
        containment: this.contained().hook(workDir, this.enginePath),
      },
      {
        write: (chunk) => this.log?.write(chunk),
        addSecrets: (values) => this.log?.addSecrets(secretVariants(values)),
      },
    ).finally(() => {
      this.killHook = null;
    });
    for (const refused of applyExports(this.env, exports)) {
      this.say(
        `Outpost agent: ignored ${refused} exported by the ${name} hook (reserved by the agent)`,
      );
    }
  }

  /** Runs one engine command; throws unless it exits with one of `okCodes`. */
  private async engine(
    workDir: string,
    args: string[],
    what: string,
    okCodes = [0],
    stdoutFile?: string,
    stdinText?: string,
  ): Promise<number> {
    this.checkCanceled();
    this.say(`\n$ ${this.a.engine} ${args.join(" ")}`);
    const child = startProcess({
      command: this.enginePath,
      args,
      cwd: workDir,
      env: { ...this.env, ...this.engineEnv },
      onOutput: (chunk) => {
        this.noteError(chunk);
        this.log?.write(chunk);
      },
      stdoutFile,
      ...(stdinText === undefined ? {} : { stdinText }),
      containment: this.contained().engine(workDir, this.enginePath),
    });
    this.current = child;
    this.lastEngineError = null;
    // A cancel that arrived between checkCanceled and the spawn still reaches the engine.
    if (this.canceled === "force") {
      child.forceKill();
    } else if (this.canceled === "graceful") {
      child.cancel(this.settings.cancelGraceMs);
    }
    const exit = await child.exited.finally(() => {
      this.current = null;
    });
    this.lastExitCode = exit.code;
    if (exit.code !== null && okCodes.includes(exit.code)) {
      // Finished despite a cancel (e.g. the apply completed): the work is done, report it so.
      return exit.code;
    }
    this.checkCanceled();
    const how =
      exit.code === null ? `was killed by ${exit.signal}` : `exited with code ${exit.code}`;
    const reason = this.lastEngineError === null ? "" : `: ${this.lastEngineError}`;
    throw new JobFailure(`${this.a.engine} ${what} ${how}${reason}`, exit.code);
  }

  private lastEngineError: string | null = null;

  /** Pulumi prints its reason as `error: …`; the run's status reason carries the last one. */
  private noteError(chunk: Buffer): void {
    if (this.a.engine !== "pulumi") {
      return;
    }
    for (const match of chunk.toString("utf8").matchAll(/^error: (.+)$/gm)) {
      // The reason leaves the log's masking, so sensitive values are cut out here too.
      const secrets = secretVariants(
        this.a.variables.filter((v) => v.sensitive).map((v) => v.value),
      );
      let line = match[1] ?? "";
      for (const secret of secrets) {
        line = line.replaceAll(secret, MASK);
      }
      this.lastEngineError = line.slice(0, 500);
    }
  }
}

/** A local repository (development only) must be readable inside git's sandbox. */
function localRepository(repoUrl: string): string[] {
  const local = localRepositoryPath(repoUrl);
  return local === null ? [] : [local];
}

/** Retries `fn` through transient failures (network, 429, 5xx): five attempts in all. */
function retryTransient<T>(fn: () => Promise<T>): Promise<T> {
  return retry(fn, { retries: 4 });
}
