import { mkdir } from "node:fs/promises";
import path from "node:path";
import type { PlanSummary } from "@outpost/protocol";
import type { EngineDriver, EngineSession } from "../engines/driver.ts";
import { DRIVERS, driverFor } from "../engines/drivers.ts";
import { installEngine } from "../engines/install.ts";
import { resolveEngineVersion } from "../engines/resolve.ts";
import { secretVariants } from "../logs/masker.ts";
import { LogStreamer } from "../logs/streamer.ts";
import { retry } from "../retry.ts";
import { fetchConfiguration } from "./configuration.ts";
import { type JobContainment, jobContainment } from "./containment.ts";
import { applyExports, buildJobEnvironment } from "./environment.ts";
import type { HookName } from "./hooks.ts";
import { type IdentityRenewal, startIdentityRenewal } from "./identity-renewal.ts";
import { explainNotFound } from "./not-found.ts";
import { downloadVerifiedPlan } from "./plan-file.ts";
import { Canceled, JobFailure, JobProcesses } from "./processes.ts";
import type { CoordinatorPort, JobResult, JobSettings, RunnerJob } from "./types.ts";
import { createJobDir, removeJobDir } from "./workdirs.ts";
import { prepareWorkloadIdentity } from "./workload-identity.ts";

/** A job in progress. */
export type JobHandle = {
  /** Resolves (never rejects) when the job ended and its directory is gone. */
  readonly done: Promise<JobResult>;
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

/**
 * Runs one job in a fresh directory under `settings.dataDir/jobs`, removed afterwards whatever
 * happens (by a watchdog, or by the next agent to start, should this one die). Every process
 * runs as `settings.isolation` says (see `containment.ts`). The lifecycle is the same for every
 * engine: the engine's driver (`settings.drivers`) may refuse the job; then the engine version
 * is resolved and installed, the configuration fetched, the environment built, and the driver
 * runs the job's phase through an {@link EngineSession}. The log (masked) streams through
 * `port.sendLogChunk`; the result says succeeded, failed (with why) or canceled.
 */
export function startJob(job: RunnerJob, port: CoordinatorPort, settings: JobSettings): JobHandle {
  const running = new Job(job, port, settings);
  // Only the agent's own disk can fail here (job dir, spool file); still a result, not a throw.
  const done = running.run().catch(
    (error: unknown): JobResult => ({
      outcome: "failed",
      message: `agent error: ${error instanceof Error ? error.message : String(error)}`,
      exitCode: null,
      planSummary: null,
      logLength: 0,
    }),
  );
  return { done, cancel: (options) => running.cancel(options.force) };
}

class Job {
  private readonly processes: JobProcesses;
  private log: LogStreamer | null = null;
  private containment: JobContainment | null = null;
  /** Rewrites the workload identity token file while the job runs; stopped when it ends. */
  private identityRenewal: IdentityRenewal | null = null;
  /** Every process's environment; hook exports add to it. */
  private env: Record<string, string> = {};
  /** What the driver adds for engine commands only. */
  private engineEnv: Record<string, string> = {};
  private enginePath = "";
  /** The exact version resolved from the job's constraint, once known. */
  private engineVersion: string | null = null;
  private readonly job: RunnerJob;
  private readonly port: CoordinatorPort;
  private readonly settings: JobSettings;

  constructor(job: RunnerJob, port: CoordinatorPort, settings: JobSettings) {
    this.job = job;
    this.port = port;
    this.settings = settings;
    const secrets = secretVariants(job.variables.filter((v) => v.isSensitive).map((v) => v.value));
    this.processes = new JobProcesses({
      cancelGraceMs: settings.cancelGraceMs,
      write: (chunk) => this.log?.write(chunk),
      secrets: () => secrets,
    });
  }

  cancel(force: boolean): void {
    this.processes.cancel(force);
  }

  async run(): Promise<JobResult> {
    const dir = await createJobDir(this.settings.dataDir, this.job.jobId);
    this.containment = jobContainment(this.settings, dir, this.job.isFork);
    let result: JobResult;
    try {
      const secrets = [
        this.job.runToken,
        this.job.workloadIdentityToken ?? "",
        ...this.job.variables.filter((v) => v.isSensitive).map((v) => v.value),
      ];
      this.log = new LogStreamer({
        send: this.port.sendLogChunk,
        spoolFile: path.join(dir.root, "log.spool"),
        secrets: secretVariants(secrets),
      });
      try {
        result = await this.execute(dir.root);
      } finally {
        // Before the log closes and the directory goes: no token is fetched or written after.
        await this.identityRenewal?.stop();
      }
      try {
        await this.log.close();
      } catch (error) {
        result = {
          ...result,
          outcome: "failed",
          message: `log upload failed: ${(error as Error).message}`,
        };
      }
      result.logLength = this.log.length;
      result.engineVersion = this.engineVersion;
    } finally {
      await removeJobDir(dir);
    }
    return result;
  }

  private say(line: string): void {
    this.log?.write(`${line}\n`);
  }

  /** Prepare, run the phase, and say how it ended; never throws for the job's own failures. */
  private async execute(root: string): Promise<JobResult> {
    const { job, processes } = this;
    let planSummary: PlanSummary | null = null;
    try {
      this.say(
        `${agentLine(this.settings)}: ${job.phase} job ${job.jobId} for run ${job.runId} in workspace ${job.workspaceName}`,
      );
      const driver = driverFor(job.engine, this.settings.drivers ?? DRIVERS);
      if (driver === null) {
        throw new JobFailure(`this agent has no driver for engine "${job.engine}"; upgrade it`);
      }
      const refusal = driver.refusal(job);
      if (refusal !== null) {
        throw new JobFailure(refusal);
      }
      const session = await this.prepare(root, driver);
      if (job.phase === "plan") {
        planSummary = driver.summarize(await driver.plan(session), job);
      } else {
        await driver.apply(session);
      }
      return {
        outcome: "succeeded",
        message: null,
        exitCode: processes.lastExitCode,
        planSummary,
        logLength: 0,
      };
    } catch (error) {
      if (processes.canceled !== null || error instanceof Canceled) {
        this.say(`\nOutpost agent: the ${job.phase} was canceled`);
        return {
          outcome: "canceled",
          message: "canceled",
          exitCode: processes.lastExitCode,
          planSummary,
          logLength: 0,
        };
      }
      const message = error instanceof Error ? error.message : String(error);
      this.say(`\nOutpost agent: ${job.phase} failed: ${message}`);
      const exitCode = error instanceof JobFailure ? error.exitCode : processes.lastExitCode;
      return { outcome: "failed", message, exitCode, planSummary, logLength: 0 };
    }
  }

  private contained(): JobContainment {
    if (this.containment === null) {
      throw new Error("the job directory does not exist yet");
    }
    return this.containment;
  }

  /** The engine, the configuration, the working directory and the environment. */
  private async prepare(root: string, driver: EngineDriver): Promise<EngineSession> {
    const { job, settings, processes } = this;
    // Retries its downloads itself, so its failure can say how many attempts it made.
    const install = {
      dataDir: settings.dataDir,
      releaseMirror: settings.releaseMirror,
      searchPath: settings.hostEnv.PATH ?? "",
      engineKeyring: settings.engineKeyring ?? [],
      onProgress: (line: string) => this.say(line),
    };
    const installStarted = performance.now();
    const release = driver.release(job.engine);
    this.engineVersion = await resolveEngineVersion(release, job.engineVersion, install);
    processes.checkCanceled();
    const installed = await installEngine(release, this.engineVersion, install);
    this.enginePath = installed.path;
    settings.onEngineReady?.({
      engine: job.engine,
      source: installed.source,
      seconds: (performance.now() - installStarted) / 1000,
    });
    processes.checkCanceled();
    await Promise.all(["home", "tmp", "scratch"].map((d) => mkdir(path.join(root, d))));
    const workDir = await fetchConfiguration({
      job,
      root,
      port: this.port,
      settings,
      containment: this.contained(),
      say: (line) => this.say(line),
    });
    if (job.isFork) {
      this.say(
        "Outpost agent: pull request from a fork: no host variables, no sensitive variables, no hooks",
      );
    }
    const { env, skipped } = buildJobEnvironment({
      job,
      hostEnv: settings.hostEnv,
      allowlist: settings.envForward,
      jobRoot: root,
      engineDir: path.dirname(this.enginePath),
      networkEnv: settings.networkEnv,
    });
    for (const name of skipped) {
      this.say(`Outpost agent: ignored workspace variable ${name} (reserved or not a valid name)`);
    }
    const identity = await prepareWorkloadIdentity({ root, job, env });
    for (const line of identity.lines) {
      this.say(line);
    }
    if (identity.tokenFile !== null && job.workloadIdentityToken) {
      this.renewIdentity(identity.tokenFile, job.workloadIdentityToken);
    }
    for (const { dir, why } of this.contained().withheldPath) {
      this.say(`Outpost agent: the sandbox hides ${dir}, a directory of the job's PATH: ${why}`);
    }
    this.env = env;
    this.engineEnv = driver.environment(job, root);
    return this.session(driver, root, workDir);
  }

  /**
   * Keeps the token file fresh until the job ends. The environment's copy of the token is not
   * renewed (a running process's environment cannot be); SDKs reading the file get a fresh one.
   */
  private renewIdentity(file: string, token: string): void {
    this.identityRenewal = startIdentityRenewal({
      file,
      token,
      renew: () => this.port.renewWorkloadIdentity(),
      onRenewed: (fresh) => {
        this.log?.addSecrets(secretVariants([fresh]));
        this.say("Outpost agent: workload identity token renewed");
      },
      onStopped: (why) =>
        this.say(`Outpost agent: could not renew the workload identity token: ${why}`),
    });
  }

  /** What the driver's steps run through. */
  private session(driver: EngineDriver, root: string, workDir: string): EngineSession {
    const { job, port, processes } = this;
    return {
      job,
      root,
      workDir,
      port,
      say: (line) => this.say(line),
      run: (args, what, io = {}) =>
        processes.engine({
          engine: job.engine,
          path: this.enginePath,
          args,
          what,
          cwd: workDir,
          env: { ...this.env, ...this.engineEnv },
          okCodes: io.okCodes ?? [0],
          ...(io.stdoutFile === undefined ? {} : { stdoutFile: io.stdoutFile }),
          ...(io.stdinText === undefined ? {} : { stdinText: io.stdinText }),
          containment: this.contained().engine(workDir, this.enginePath),
          reasonIn: (output) => driver.reasonIn(output),
          explainNotFound: (command) => this.explainNotFound(command),
        }),
      hook: (name) => this.hook(name, root, workDir),
      retry: retryTransient,
      verifiedPlan: async (name, file) => {
        const plan = { port, name, file, expected: job.planSha256, retry: retryTransient };
        this.say(`Outpost agent: plan file verified (SHA-256 ${await downloadVerifiedPlan(plan)})`);
      },
      isCanceled: () => processes.canceled !== null,
    };
  }

  /** Where a command a job process could not find was looked for, and what hid it. */
  private explainNotFound(command: string): string {
    return explainNotFound(command, this.env.PATH ?? "", (file) =>
      this.contained().hiddenBecause(file, this.enginePath),
    );
  }

  /** Runs a hook; its output reaches the log when it exits (see `runHeldHook`). */
  private async hook(name: HookName, root: string, workDir: string): Promise<void> {
    const exports = await this.processes.hook(
      name,
      {
        hooksDir: this.settings.hooksDir,
        timeoutMs: this.settings.hookTimeoutMs,
        cwd: workDir,
        env: this.env,
        scratchDir: path.join(root, "scratch"),
        isFork: this.job.isFork,
        containment: this.contained().hook(workDir, this.enginePath),
        explainNotFound: (command) => this.explainNotFound(command),
      },
      {
        write: (chunk) => this.log?.write(chunk),
        addSecrets: (values) => this.log?.addSecrets(secretVariants(values)),
      },
    );
    for (const refused of applyExports(this.env, exports)) {
      this.say(
        `Outpost agent: ignored ${refused} exported by the ${name} hook (reserved by the agent)`,
      );
    }
  }
}

/**
 * How long a job's own calls (artifacts, state) retry through transient failures: as long as the
 * engine's state calls do (`STATE_RETRY`, 241 s), so a coordinator outage that the engine rides
 * out does not fail the job when it uploads its plan afterwards.
 */
const JOB_CALL_RETRY_MS = 4 * 60_000;

/** Retries `fn` through transient failures (network, 429, 5xx) for up to four minutes. */
function retryTransient<T>(fn: () => Promise<T>): Promise<T> {
  return retry(fn, { retries: Number.POSITIVE_INFINITY, maxRetryTimeMs: JOB_CALL_RETRY_MS });
}
