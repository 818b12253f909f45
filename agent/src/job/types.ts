import type {
  JobOutcome,
  JobVariable,
  PlanSummary,
  RunOperation,
  WithheldVariable,
} from "@outpost/protocol";
import type { EngineDriver } from "../engines/driver.ts";
import type { TrustedKey } from "../engines/signatures.ts";
import type { LogSender } from "../logs/streamer.ts";
import type { JobIsolation } from "./containment.ts";

/** Workspace variables as the job receives them (the wire's): sensitive values in clear, only in memory. */
export type { JobVariable, WithheldVariable };

/** Where the configuration comes from: an uploaded tarball, or a commit the agent clones. */
export type JobSource =
  | { kind: "configuration"; url: string; sha256: string }
  | { kind: "vcs"; repoUrl: string; commitSha: string };

/**
 * A job as the runner executes it: the protocol's `JobAssignment` and its spec, checked and
 * flattened by `client/assignment.ts` (`toRunnerJob`), with the URLs the job uses.
 */
export type RunnerJob = {
  jobId: string;
  runId: string;
  workspaceId: string;
  workspaceName: string;
  phase: "plan" | "apply";
  operation: RunOperation;
  /** A speculative plan never takes the state lock and is never applied. */
  isSpeculative: boolean;
  /**
   * A pull request from a fork: no host variables, no sensitive values, no hooks (see
   * `environment.ts` and `hooks.ts`).
   */
  isFork: boolean;
  /** Apply jobs: the SHA-256 of the plan file recorded when the plan finished. */
  planSha256: string | null;
  /**
   * Terraform and OpenTofu plans: `-target` and `-replace` addresses and `-refresh=false`, as
   * the run was queued (absent: none, and refresh).
   */
  planOptions?: { targetAddrs: string[]; replaceAddrs: string[]; refresh: boolean };
  /**
   * The workspace's engine (one of the protocol's `ENGINES`); the driver in the agent's list
   * that names it runs the job (`engines/drivers.ts`).
   */
  engine: string;
  /**
   * As the workspace names it: `latest`, an exact version or a constraint, resolved by the
   * agent (plan jobs); an apply job gets the exact version its plan ran.
   */
  engineVersion: string;
  /** Pulumi: the stack every command names; null for other engines. */
  stackName: string | null;
  /** Relative to the configuration root; "" for the root itself. */
  workingDirectory: string;
  variables: JobVariable[];
  /** A fork's job: the sensitive variables the coordinator left out, by name only. */
  withheldVariables: WithheldVariable[];
  source: JobSource;
  /** Per-run token: the state backend password; masked in logs, never written to disk. */
  runToken: string;
  /** Full URL of the workspace's state on the coordinator (`…/state/v1/{workspaceId}`). */
  stateAddress: string;
  /**
   * The job's workload identity token (a JWT signed by the coordinator), when its workspace has
   * workload identity on; never used for a fork's job. Masked in logs.
   */
  workloadIdentityToken?: string | null;
};

/**
 * Files carried from the plan job to the apply job and shown to users, as the runner names
 * them (`client/job-port.ts` maps them to the protocol's `ArtifactName`).
 */
export type JobArtifact = "plan-file" | "lock-file" | "plan-json" | "stack-settings";

/**
 * What the runner needs from the coordinator, bound to one job and its lease. The HTTP client
 * implements it against the agent API; tests implement it in memory.
 */
export type CoordinatorPort = {
  /** Writes the configuration tarball at `url` to `destFile` (the runner checks its sha256). */
  downloadConfiguration(url: string, destFile: string): Promise<void>;
  uploadArtifact(name: JobArtifact, file: string): Promise<void>;
  /** Writes the artifact to `destFile`; resolves false when the coordinator has none. */
  downloadArtifact(name: JobArtifact, destFile: string): Promise<boolean>;
  /**
   * Writes the workspace's current state at `stateAddress` to `destFile`; resolves false when
   * the workspace has none yet (Pulumi jobs restore their checkpoint from it).
   */
  downloadState(stateAddress: string, destFile: string): Promise<boolean>;
  /**
   * Writes `file` as the workspace's next state version (Pulumi apply jobs: the checkpoint).
   * The coordinator accepts it only from the apply job of a confirmed run.
   */
  uploadState(stateAddress: string, file: string): Promise<{ stateVersionId: string }>;
  /** Appends log bytes at `offset` (see {@link LogSender}). */
  sendLogChunk: LogSender;
  /**
   * A fresh workload identity token for the job (same claims, later `exp`); rejects once the
   * job ended (its run token is refused) or when its workspace has none.
   */
  renewWorkloadIdentity(): Promise<{ token: string; expiresAt: string }>;
};

/** Counts from the JSON plan, reported with the plan job's finish (the wire type). */
export type { PlanSummary };

/** How a job ended: what the finish call reports (`FinishRequest`), and the log's length. */
export type JobResult = {
  outcome: JobOutcome;
  /** Why it failed or was canceled; null on success. */
  message: string | null;
  /** Exit code of the last engine command, if one ran. */
  exitCode: number | null;
  /** Plan jobs that reached `show -json`. */
  planSummary: PlanSummary | null;
  /** Bytes of (masked) log the coordinator holds. */
  logLength: number;
  /** The exact engine version the job resolved and ran, once known. */
  engineVersion?: string | null;
};

/** Who runs the job, as registered: the first line of every job log says it. */
export type AgentIdentity = {
  id: string;
  name: string | null;
  version: string;
  poolId: string;
  /** `bwrap` or `none`, as registered. */
  isolation: string;
};

/** Agent-level settings a job needs (a subset of the agent configuration). */
export type JobSettings = {
  dataDir: string;
  hooksDir: string;
  hookTimeoutMs: number;
  envForward: string[];
  /** The agent's own environment, from which allowlisted variables are forwarded. */
  hostEnv: NodeJS.ProcessEnv;
  /**
   * Proxy variables and CA bundle settings every job process and git get (empty with
   * `--forward-network-env=off`).
   */
  networkEnv: Record<string, string>;
  releaseMirror: string | null;
  /**
   * Keys trusted to sign engine checksums besides the vendors' (`--engine-keyring`); absent or
   * empty: the built-in keys only.
   */
  engineKeyring?: readonly TrustedKey[];
  allowFileRepos: boolean;
  /** Between the first and the second SIGINT of a graceful cancel. */
  cancelGraceMs: number;
  /** Cap on the configuration tarball and on its extracted size. */
  maxConfigurationBytes: number;
  /** This agent as registered; absent only in tests that run jobs without a coordinator. */
  agent?: AgentIdentity;
  /** Sandboxes and watchdogs of job processes (`--isolation`, `--orphan-grace`). */
  isolation: JobIsolation;
  /** The engines this agent runs; `DRIVERS` (`engines/drivers.ts`) unless a test adds one. */
  drivers?: readonly EngineDriver[];
  /** Told once the job's engine binary is ready, where it came from and how long that took. */
  onEngineReady?: (ready: EngineReady) => void;
};

/** A job's engine, ready to run: for the agent's metrics. */
export type EngineReady = {
  engine: string;
  source: "cache" | "path" | "download";
  seconds: number;
};
