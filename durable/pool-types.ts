/**
 * The AgentPool Durable Object's RPC contract: what the run service and the agent routes send
 * and get back. Expected failures are `{ ok: false, reason }` values, since custom error classes
 * do not survive RPC.
 */

import {
  type AgentIsolation,
  type AgentStatus,
  type CancelRequest,
  type ExitInstruction,
  JobId,
  JobPhase,
  JobSpec,
  type OfferedEngineVersion,
  PlanSummary,
} from "@outpost/protocol";
import { z } from "zod";
import type { JobState } from "./queue.ts";

export type { JobState, PoolSettings } from "./queue.ts";

/** A job as the run service hands it to the pool. `spec` is returned to the agent at lease time. */
export const QueuedJob = z
  .strictObject({
    jobId: JobId,
    runId: z.string().regex(/^run_[a-z2-7]{26}$/),
    workspaceId: z.string().min(1).max(64),
    orgId: z.string().min(1).max(64),
    phase: JobPhase,
    /** 0 apply, 1 plan, 2 speculative plan. */
    priorityClass: z.union([z.literal(0), z.literal(1), z.literal(2)]),
    spec: JobSpec,
    /** How long the job may run once started before the pool ends it `errored`. */
    timeoutMs: z.int().positive(),
  })
  .refine((job) => job.jobId === `${job.runId}:${job.phase}`, "jobId must be <runId>:<phase>")
  .refine(
    (job) => (job.phase === "apply") === (job.priorityClass === 0),
    "apply jobs are class 0 and plan jobs class 1 or 2",
  );
export type QueuedJob = z.infer<typeof QueuedJob>;

export const EndOutcome = z.enum(["succeeded", "failed", "canceled", "errored"]);
export type EndOutcome = z.infer<typeof EndOutcome>;

/** A job as the pool knows it. Times are ms since the epoch. */
export type JobView = {
  jobId: string;
  runId: string;
  workspaceId: string;
  orgId: string;
  phase: JobPhase;
  priorityClass: 0 | 1 | 2;
  state: JobState;
  agentId: string | null;
  leaseId: string | null;
  enqueuedAt: number;
  leasedAt: number | null;
  startedAt: number | null;
  cancelRequestedAt: number | null;
  endedAt: number | null;
  /** The agent id when its agent ended it, "system" when the pool or a cancel did. */
  endedBy: string | null;
  outcome: EndOutcome | null;
  exitCode: number | null;
  reason: string | null;
  planSummary: PlanSummary | null;
  forced: boolean;
  timeoutMs: number;
  /** True when the pool ended the started job because its agent was lost. */
  agentLost: boolean;
  /** What the job runs, as the run service queued it. */
  spec: JobSpec;
};

/** What a successful lease hands the run service, which turns it into a `JobAssignment`. */
export type LeasedJob = {
  jobId: string;
  leaseId: string;
  runId: string;
  workspaceId: string;
  orgId: string;
  phase: JobPhase;
  priorityClass: 0 | 1 | 2;
  spec: JobSpec;
  agentId: string;
  leasedAt: number;
  /** The start acknowledgement deadline. */
  startBy: number;
};

/**
 * How a job ended, whoever ended it. The pool answers it to the call that ended the job (an
 * agent's finish, a cancel) and sends every other ending (alarm, lost agent, revoked token,
 * retired pool) as a message on the `JOB_EVENTS` queue; the Worker applies it to the run.
 */
export const JobEndedEvent = z.object({
  jobId: JobId,
  runId: z.string(),
  workspaceId: z.string(),
  orgId: z.string(),
  phase: JobPhase,
  /** Reported by the agent (succeeded/failed/canceled), canceled by the run service, or errored. */
  outcome: EndOutcome,
  /** `job.finished` (by its agent), `job.errored` (by the pool), `job.canceled` (by cancelJob). */
  action: z.enum(["job.finished", "job.errored", "job.canceled"]),
  /** The agent id when the agent ended it, else "system". */
  actor: z.string(),
  agentId: z.string().nullable(),
  reason: z.string().nullable(),
  exitCode: z.int().nullable(),
  planSummary: PlanSummary.nullable(),
  /** True when a started job was force-canceled. */
  forced: z.boolean(),
  /**
   * True when the pool ended a started job because its agent was lost (errored, exited, its
   * token revoked, or it stopped reporting the job); absent in events queued before this field.
   */
  agentLost: z.boolean().optional(),
  endedAt: z.number(),
  /** The run's operation and kind as its job's spec says: where a finished plan leads. */
  operation: JobSpec.shape.operation,
  isSpeculative: z.boolean(),
});
export type JobEndedEvent = z.infer<typeof JobEndedEvent>;

export type AgentView = {
  id: string;
  name: string | null;
  version: string;
  os: string;
  arch: string;
  status: AgentStatus;
  statusReason: string | null;
  capacity: number;
  acceptedPhases: JobPhase[];
  /** `bwrap`, `none`, or null for agents that do not say. */
  isolation: AgentIsolation | null;
  /** The engine versions it reported at registration (none from agents that do not say). */
  engines: OfferedEngineVersion[];
  tokenId: string;
  runningJobs: { jobId: string; phase: JobPhase; state: "leased" | "started" }[];
  lastContactAt: number;
  registeredAt: number;
};

/** A pool at a glance (the pools list): listed agents by status, queued and running jobs. */
export type PoolSummary = {
  agents: Record<AgentStatus, number>;
  queuedJobs: number;
  runningJobs: number;
};

/**
 * What the pool holds now, for the coordinator's metrics and autoscaling signal: listed agents by
 * status, how many agents hold a job, jobs by phase (queued, and leased or started), and when the
 * job at the head of the queue was queued. Read in one call, without changing anything.
 */
export type PoolReport = {
  agents: Record<AgentStatus, number>;
  /** Agents holding at least one leased or started job, whatever their status. */
  agentsHoldingJobs: number;
  jobs: Record<JobPhase, { queued: number; running: number }>;
  /** When the longest-waiting queued job was queued (ms since the epoch); null when none is. */
  oldestQueuedAt: number | null;
};

/** Why a job still waits; the runs feature turns it into words. */
export type WaitReason =
  | { kind: "no_agents_registered" }
  | { kind: "no_agents_online"; registered: number; lastContactAt: number | null }
  | { kind: "no_agent_accepts_phase"; phase: JobPhase; online: number }
  | { kind: "all_agents_busy"; agents: number; runningJobs: number }
  | { kind: "behind_other_jobs"; ahead: number };

export type WaitInfo =
  | { state: "queued"; position: number; queueLength: number; reason: WaitReason }
  | { state: "leased"; agentId: string; startBy: number }
  | { state: "started" | "ended"; agentId: string | null };

/** Live (online or unknown) agents one token may have registered at once. */
export const MAX_AGENTS_PER_TOKEN = 50;

export type RegisterInput = {
  tokenId: string;
  name: string | null;
  version: string;
  os: string;
  arch: string;
  capacity: number;
  acceptedPhases: JobPhase[];
  /** How the agent confines its jobs; absent or null for agents that do not say. */
  isolation?: AgentIsolation | null;
  /** The id the agent had before a restart: its jobs end at once if it is ours and still live. */
  predecessorAgentId?: string | null;
  /** The engine versions it reported it can run (checked by the protocol's schema). */
  engines?: readonly OfferedEngineVersion[];
};

/** The agent that started a job, as it registered: recorded on the run's job. */
export type StartingAgent = {
  id: string;
  name: string | null;
  version: string;
  isolation: AgentIsolation | null;
};

/** What a registered agent is told: its id and the intervals it keeps. */
export type RegisterOutcome = {
  agentId: string;
  heartbeatIntervalSeconds: number;
  pollWaitSeconds: number;
  leaseStartTimeoutSeconds: number;
  /** The pool's `unknownAfterSeconds`, for the agent's readiness. */
  unknownAfterSeconds: number;
};

/** The agent's own identity on every agent-scoped call. */
export type AgentRef = { agentId: string; tokenId: string };

export type PollOutcome =
  | { kind: "job"; job: LeasedJob }
  | { kind: "none" }
  | { kind: "exit"; exit: ExitInstruction };

/** A cancel's answer: the job, and its ending when this call ended it. */
export type CancelOutcome = { job: JobView; ending: JobEndedEvent | null };

/** A finish's answer: the job and its ending (the same again for a repeated finish). */
export type FinishOutcome = { job: JobView; ending: JobEndedEvent };

export type HeartbeatOutcome = {
  cancel: CancelRequest[];
  exit: ExitInstruction | null;
  heartbeatIntervalSeconds: number;
};

export type FinishReport = {
  outcome: "succeeded" | "failed" | "canceled";
  exitCode: number | null;
  planSummary: PlanSummary | null;
  message: string | null;
};

/** The reason of a force-cancel whose job an online agent held: it is told to kill the engine. */
export const FORCE_CANCELED = "force-canceled";
