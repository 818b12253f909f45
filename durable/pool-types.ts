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
  type PlanSummary,
} from "@outpost/protocol";
import { z } from "zod";

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
    spec: z.record(z.string(), z.unknown()),
  })
  .refine((job) => job.jobId === `${job.runId}:${job.phase}`, "jobId must be <runId>:<phase>")
  .refine(
    (job) => (job.phase === "apply") === (job.priorityClass === 0),
    "apply jobs are class 0 and plan jobs class 1 or 2",
  );
export type QueuedJob = z.infer<typeof QueuedJob>;

export type JobState = "queued" | "leased" | "started" | "ended";
export type EndOutcome = "succeeded" | "failed" | "canceled" | "errored";

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
  outcome: EndOutcome | null;
  exitCode: number | null;
  reason: string | null;
  planSummary: PlanSummary | null;
};

/** What the agent route gets from a successful lease, and what `onJobLeased` turns into a JobAssignment. */
export type LeasedJob = {
  jobId: string;
  leaseId: string;
  runId: string;
  workspaceId: string;
  orgId: string;
  phase: JobPhase;
  priorityClass: 0 | 1 | 2;
  spec: Record<string, unknown>;
  agentId: string;
  leasedAt: number;
  /** The start acknowledgement deadline. */
  startBy: number;
};

/** Handed to `onJobEnded` whenever a job ends, whoever ended it. */
export type JobEndedEvent = {
  jobId: string;
  runId: string;
  workspaceId: string;
  orgId: string;
  phase: JobPhase;
  /** Reported by the agent (succeeded/failed/canceled), canceled by the run service, or errored. */
  outcome: EndOutcome;
  /** `job.finished` (by its agent), `job.errored` (by the pool), `job.canceled` (by cancelJob). */
  action: "job.finished" | "job.errored" | "job.canceled";
  /** The agent id when the agent ended it, else "system". */
  actor: string;
  agentId: string | null;
  reason: string | null;
  exitCode: number | null;
  planSummary: PlanSummary | null;
  /** True when a started job was force-canceled. */
  forced: boolean;
  /**
   * True when the pool ended a started job because its agent was lost (errored, exited, its
   * token revoked, or it stopped reporting the job); absent in events from before this field.
   */
  agentLost?: boolean;
  endedAt: number;
};

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
  tokenId: string;
  runningJobs: { jobId: string; phase: JobPhase; state: "leased" | "started" }[];
  lastContactAt: number;
  registeredAt: number;
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

/** Liveness and lease settings of one pool. */
export type PoolSettings = {
  unknownAfterMs: number;
  erroredAfterMs: number;
  retentionMs: number;
  leaseStartTimeoutMs: number;
  planTimeoutMs: number;
  applyTimeoutMs: number;
};

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
};

/** The agent's own identity on every agent-scoped call. */
export type AgentRef = { agentId: string; tokenId: string };

export type PollOutcome =
  | { kind: "job"; job: LeasedJob }
  | { kind: "none" }
  | { kind: "exit"; exit: ExitInstruction };

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
