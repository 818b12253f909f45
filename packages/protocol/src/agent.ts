/**
 * The agent protocol (`/agent/v1/*`): every body the agent sends and every answer it receives.
 * Both sides parse with these schemas, so version skew is a typed failure rather than a crash.
 * Imports `zod` only: the Node agent shares this file.
 */
import { z } from "zod";
import { EXACT_VERSION_PATTERN } from "./engine-version.ts";
import { ENGINES, JobSpec } from "./jobs.ts";

/** The header that carries the agent id handed out by `register`. */
export const AGENT_ID_HEADER = "Outpost-Agent-Id";
/** The longest a `jobs/next` long-poll is held, below edge idle timeouts. */
export const MAX_POLL_WAIT_SECONDS = 50;
/** The largest `wait` a client may ask for; anything above is clamped to {@link MAX_POLL_WAIT_SECONDS}. */
export const MAX_REQUESTED_WAIT_SECONDS = 3600;

export const AgentId = z.string().regex(/^agt_[a-z2-7]{26}$/, "must be an agt_ id");
export type AgentId = z.infer<typeof AgentId>;

export const LeaseId = z.string().regex(/^lease_[a-z2-7]{26}$/, "must be a lease_ id");
export type LeaseId = z.infer<typeof LeaseId>;

export const JobPhase = z.enum(["plan", "apply"]);
export type JobPhase = z.infer<typeof JobPhase>;

/** `<runId>:plan` or `<runId>:apply`; the colon is percent-encoded (`%3A`) in paths. */
export const JobId = z
  .string()
  .regex(/^run_[a-z2-7]{26}:(plan|apply)$/, "must be <run id>:plan or <run id>:apply");
export type JobId = z.infer<typeof JobId>;

export const AgentStatus = z.enum(["idle", "busy", "unknown", "errored", "exited"]);
export type AgentStatus = z.infer<typeof AgentStatus>;

/**
 * A name an agent reports, shown on the dashboard and in the CLI: no control characters, so an
 * agent cannot send terminal escapes (`ESC]0;…BEL`) to whoever lists it.
 */
const Label = z
  .string()
  .trim()
  .min(1)
  .max(100)
  .regex(/^[^\p{Cc}]*$/u, "must not contain control characters");

/** How an agent confines its jobs (`--isolation` once decided). */
export const AgentIsolation = z.enum(["bwrap", "none"]);
export type AgentIsolation = z.infer<typeof AgentIsolation>;

/**
 * Where an agent found an engine version it offers: its `--release-mirror`'s index (`mirror`),
 * its own cache of verified installs (`cache`), or a binary on its PATH (`path`).
 */
export const EngineVersionSource = z.enum(["mirror", "cache", "path"]);
export type EngineVersionSource = z.infer<typeof EngineVersionSource>;

/** One engine version an agent can run, and where it found it. */
export const OfferedEngineVersion = z.strictObject({
  engine: z.enum(ENGINES),
  version: z.string().regex(EXACT_VERSION_PATTERN, "must be an exact version"),
  source: EngineVersionSource,
});
export type OfferedEngineVersion = z.infer<typeof OfferedEngineVersion>;

/** The most engine versions one agent reports (it sends the newest of each engine and source). */
export const MAX_OFFERED_ENGINE_VERSIONS = 200;

export const RegisterRequest = z.strictObject({
  /** Display only. */
  name: Label.nullish(),
  version: Label,
  os: Label,
  arch: Label,
  /** Concurrent jobs this agent runs. */
  capacity: z.int().min(1).max(64).default(1),
  acceptedPhases: z
    .array(JobPhase)
    .min(1)
    .max(2)
    .refine((phases) => new Set(phases).size === phases.length, "phases must not repeat")
    .default(["plan", "apply"]),
  /**
   * How the agent confines its jobs: `bwrap` (a bubblewrap sandbox per job process) or `none`.
   * Absent from agents older than job sandboxes.
   */
  isolation: AgentIsolation.optional(),
  /**
   * The id this agent had before it restarted (kept in its data directory). The pool ends that
   * agent's running jobs at once, as for a lost agent, when it is a live agent of the same pool
   * registered with the same agent token; any other id is ignored, so no one ends others' jobs.
   */
  predecessorAgentId: AgentId.optional(),
  /**
   * The engine versions the agent can run as it registers: the newest its mirror's index lists
   * and those in its cache or on its PATH. Workspace forms offer them; absent from older agents.
   */
  engines: z.array(OfferedEngineVersion).max(MAX_OFFERED_ENGINE_VERSIONS).optional(),
});
export type RegisterRequest = z.infer<typeof RegisterRequest>;

export const RegisterResponse = z.object({
  agentId: AgentId,
  poolId: z.string(),
  heartbeatIntervalSeconds: z.int().positive(),
  pollWaitSeconds: z.int().positive(),
  leaseStartTimeoutSeconds: z.int().positive(),
  /**
   * The pool's threshold: without contact this long an agent is `unknown`. The agent's
   * `/readyz` says ready only while its last contact is more recent. Older coordinators do not
   * send it; 30 s is the pools' default.
   */
  unknownAfterSeconds: z.int().positive().default(30),
  /**
   * The version of the agent build this coordinator ships (`GET /agent/v1/release`); null when
   * it was deployed without one. An older agent updates itself to it between jobs.
   */
  agentVersion: z.string().nullable().default(null),
});
export type RegisterResponse = z.infer<typeof RegisterResponse>;

export const PlanSummary = z.strictObject({
  adds: z.int().min(0),
  changes: z.int().min(0),
  destroys: z.int().min(0),
  imports: z.int().min(0).default(0),
  /** Pulumi: resources replaced (counted apart from adds and destroys); absent for Terraform. */
  replaces: z.int().min(0).optional(),
  /**
   * Resources left as they are (Terraform's `no-op`, Pulumi's `same`); absent from agents that do
   * not count them. The coordinator reads it to refuse a plan that empties the state.
   */
  sames: z.int().min(0).optional(),
  hasChanges: z.boolean(),
  /**
   * Refresh-only plans (refresh runs and assessments): the addresses (Terraform) or URNs
   * (Pulumi) of the resources that changed outside the engine; absent for other plans.
   */
  driftedResources: z.array(z.string().max(1000)).max(1000).optional(),
});
export type PlanSummary = z.infer<typeof PlanSummary>;

/** A workspace variable handed to the agent with its job (added by the run service). */
export const JobVariable = z.object({
  key: z.string(),
  value: z.string(),
  category: z.enum(["env", "terraform"]),
  isHcl: z.boolean(),
  isSensitive: z.boolean(),
});
export type JobVariable = z.infer<typeof JobVariable>;

/**
 * A sensitive variable the coordinator left out of a fork's job, by name only: the agent can
 * then say what the job lacks (a Pulumi backend URL, say) instead of failing on its absence.
 */
export const WithheldVariable = z.object({
  key: z.string(),
  category: z.enum(["env", "terraform"]),
});
export type WithheldVariable = z.infer<typeof WithheldVariable>;

/**
 * A job's workload identity (workspaces with it enabled, never a fork's job): a JWT signed by the
 * coordinator that clouds trust directly, or why the coordinator could not issue one (the agent
 * then fails the job instead of running it without the identity it expects).
 */
export const WorkloadIdentity = z.union([
  z.object({ token: z.string().min(1) }),
  z.object({ error: z.string() }),
]);
export type WorkloadIdentity = z.infer<typeof WorkloadIdentity>;

/** A leased job as the agent receives it from `jobs/next`. */
export const JobAssignment = z.object({
  jobId: JobId,
  leaseId: LeaseId,
  runId: z.string(),
  workspaceId: z.string(),
  phase: JobPhase,
  /** Must be acknowledged with `start` before this time, or the job returns to the queue. */
  startBy: z.iso.datetime(),
  /** What to run, as the run service describes it when it queues the job. */
  spec: JobSpec,
  /** The per-run token (`op_run_…`) for state, configuration, logs and artifacts. */
  runToken: z.string().optional(),
  variables: z.array(JobVariable).optional(),
  /** A fork's job: the sensitive variables left out of `variables` (names, never values). */
  withheldVariables: z.array(WithheldVariable).optional(),
  workloadIdentity: WorkloadIdentity.optional(),
});
export type JobAssignment = z.infer<typeof JobAssignment>;

export const ExitInstruction = z.object({
  /** Why the coordinator wants this agent gone, in words. */
  reason: z.string(),
});
export type ExitInstruction = z.infer<typeof ExitInstruction>;

/** `jobs/next` answers 200 with one of these, or 204 when the wait ended without work. */
export const JobsNextResponse = z.discriminatedUnion("action", [
  z.object({ action: z.literal("run"), job: JobAssignment }),
  z.object({ action: z.literal("exit"), exit: ExitInstruction }),
]);
export type JobsNextResponse = z.infer<typeof JobsNextResponse>;

/**
 * A job as an agent first reads it: every field of {@link JobAssignment} but the spec, which the
 * agent checks on its own. An agent too old for a newer spec still holds the job's ids and lease,
 * so it refuses the job with a reason the run shows instead of dropping the answer.
 */
export const ReceivedJob = JobAssignment.extend({ spec: z.unknown() });
export type ReceivedJob = z.infer<typeof ReceivedJob>;

/** `jobs/next` as an agent reads it (see {@link ReceivedJob}). */
export const JobsNextReceived = z.discriminatedUnion("action", [
  z.object({ action: z.literal("run"), job: ReceivedJob }),
  z.object({ action: z.literal("exit"), exit: ExitInstruction }),
]);
export type JobsNextReceived = z.infer<typeof JobsNextReceived>;

export const StartResponse = z.object({
  jobId: JobId,
  leaseId: LeaseId,
  state: z.literal("started"),
});
export type StartResponse = z.infer<typeof StartResponse>;

export const RunningJob = z.strictObject({ jobId: JobId, leaseId: LeaseId });
export type RunningJob = z.infer<typeof RunningJob>;

export const HeartbeatRequest = z.strictObject({
  /** Every job this agent is running right now (started, not yet finished). */
  running: z.array(RunningJob).max(64).default([]),
});
export type HeartbeatRequest = z.infer<typeof HeartbeatRequest>;

export const CancelRequest = z.object({
  jobId: JobId,
  leaseId: LeaseId,
  /** graceful: SIGINT the engine and finish as canceled; force: SIGKILL now, the job has ended. */
  mode: z.enum(["graceful", "force"]),
  reason: z.string(),
});
export type CancelRequest = z.infer<typeof CancelRequest>;

export const HeartbeatResponse = z.object({
  cancel: z.array(CancelRequest),
  /** Present when the agent must stop: it errored or exited earlier, or the pool is gone. */
  exit: ExitInstruction.nullable(),
  heartbeatIntervalSeconds: z.int().positive(),
});
export type HeartbeatResponse = z.infer<typeof HeartbeatResponse>;

export const JobOutcome = z.enum(["succeeded", "failed", "canceled"]);
export type JobOutcome = z.infer<typeof JobOutcome>;

export const FinishRequest = z.strictObject({
  outcome: JobOutcome,
  exitCode: z.int().min(0).max(255).nullable(),
  planSummary: PlanSummary.nullish(),
  /** Short human-readable detail, e.g. the last error line. */
  message: z.string().max(2000).nullish(),
  /** The exact engine version the job ran (the spec may name a constraint such as `~> 1.9`). */
  engineVersion: z
    .string()
    .regex(EXACT_VERSION_PATTERN, "must be an exact version such as 1.9.5")
    .nullish(),
});
export type FinishRequest = z.infer<typeof FinishRequest>;

export const FinishResponse = z.object({
  jobId: JobId,
  state: z.literal("ended"),
  outcome: z.enum(["succeeded", "failed", "canceled", "errored"]),
});
export type FinishResponse = z.infer<typeof FinishResponse>;

export const GoodbyeRequest = z.strictObject({ reason: z.string().max(500).nullish() });
export type GoodbyeRequest = z.infer<typeof GoodbyeRequest>;

export const GoodbyeResponse = z.object({ agentId: AgentId, status: z.literal("exited") });
export type GoodbyeResponse = z.infer<typeof GoodbyeResponse>;
