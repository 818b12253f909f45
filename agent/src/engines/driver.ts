/**
 * What the job runner needs from an engine, and what it gives an engine's steps in return. The
 * runner (`job/runner.ts`) owns the job's lifecycle (directory, log, install, configuration,
 * environment, cancel, outcome) and knows no engine; a driver owns everything one engine
 * does: its releases, its environment, and the commands and files of each phase.
 */
import type { PlanSummary, RunOperation } from "@outpost/protocol";
import type { HookName } from "../job/hooks.ts";
import type { CoordinatorPort, JobArtifact, RunnerJob } from "../job/types.ts";
import type { EngineRelease } from "./release.ts";

/** How one engine command is run: which exit codes succeed, where stdout and stdin go. */
export type EngineIo = {
  /** Exit codes that count as success (`[0]` unless given). */
  okCodes?: readonly number[];
  /** stdout goes to this file instead of the log (documents that hold values). */
  stdoutFile?: string;
  /** Written to the command's stdin (secrets never go on a command line). */
  stdinText?: string;
};

/** One job's phase as a driver's steps see it; the runner implements it. */
export type EngineSession = {
  readonly job: RunnerJob;
  /** The job's directory: `scratch/` for files of the agent's own, `home/` and `tmp/`. */
  readonly root: string;
  /** Where the engine runs: the workspace's working directory in the configuration. */
  readonly workDir: string;
  readonly port: CoordinatorPort;
  /** A line of the job's log. */
  say(line: string): void;
  /**
   * Runs the engine with `args` in `workDir`; resolves with the exit code when it is one of
   * `okCodes`, else throws with why (a canceled job throws its cancel instead).
   */
  run(args: string[], what: string, io?: EngineIo): Promise<number>;
  /** Runs the hook `name` (skipped for a fork); its exports reach the next engine command. */
  hook(name: HookName): Promise<void>;
  /** Retries `fn` through transient coordinator failures. */
  retry<T>(fn: () => Promise<T>): Promise<T>;
  /**
   * Apply jobs: downloads the artefact `name` to `file` and checks it against the hash
   * recorded when the plan finished; throws unless it is the plan that was confirmed.
   */
  verifiedPlan(name: JobArtifact, file: string): Promise<void>;
  /** True once the job was canceled (an apply that completed anyway skips `post-apply`). */
  isCanceled(): boolean;
};

/**
 * An operation's engine commands: its plan phase's, and its apply phase's (never run for a
 * `plan` operation, which is speculative).
 */
export type PhaseCommands = {
  plan(job: RunnerJob, planFile: string): string[];
  apply(job: RunnerJob, planFile: string): string[];
};

/**
 * One engine family, run by the job runner through these members and nothing else:
 *
 * - resolve version and install: `release(engine)` tells the one resolver
 *   (`resolveEngineVersion`) and the one installer (`installEngine`) where its releases are
 *   and how they unpack;
 * - `environment`: what every engine command of a job gets on top of the job's environment;
 * - `refusal`: why a job cannot run at all, asked before anything is installed;
 * - `plan` and `apply`: the two phases, with the commands of each operation (`plan`, `apply`,
 *   `destroy`, `refresh`) in `commands`;
 * - `summarize`: the run's plan summary from the document the plan phase answers.
 *
 * Adding an engine is one driver in `engines/` and its tests, and its name in `DRIVERS`.
 */
export type EngineDriver = {
  /** The workspace engines this driver runs (`terraform` and `tofu` share one). */
  readonly engines: readonly string[];
  release(engine: string): EngineRelease;
  environment(job: RunnerJob, root: string): Record<string, string>;
  /** A sentence for the run when the job cannot run (a missing passphrase, say), else null. */
  refusal(job: RunnerJob): string | null;
  readonly commands: Readonly<Record<RunOperation, PhaseCommands>>;
  /**
   * The plan phase: hooks, commands, the plan artefacts uploaded. Answers the engine's document
   * of the plan (`show -json`, the preview's JSON), which `summarize` reads.
   */
  plan(session: EngineSession): Promise<string>;
  /** The apply phase: the verified plan applied, hooks around it. */
  apply(session: EngineSession): Promise<void>;
  /**
   * The run's plan summary from the plan phase's document; for a `refresh` job it names the
   * resources that drifted (`driftedResources`), which is what an assessment reports.
   */
  summarize(document: string, job: RunnerJob): PlanSummary;
  /**
   * The reason an engine prints in `output`, if it prints one the run should show (its
   * status reason carries the last, masked); null when there is none.
   */
  reasonIn(output: string): string | null;
};
