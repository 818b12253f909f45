/**
 * What a job is about, as the run service describes it when it queues the job (`JobAssignment.spec`),
 * the run-token routes the agent uses while it runs, and the log read headers the CLI follows.
 * Imports `zod` only: shared with the agent.
 */
import { z } from "zod";

export const JobConfiguration = z.object({
  id: z.string(),
  source: z.enum(["upload", "vcs"]),
  /** Of the tar.gz, for uploads. */
  sha256: z.string().nullable(),
  sizeBytes: z.number().nullable(),
  /** For VCS runs: the agent clones this repository at this commit itself. */
  repoUrl: z.string().nullable(),
  commitSha: z.string().nullable(),
});
export type JobConfiguration = z.infer<typeof JobConfiguration>;

/**
 * What a run does. `refresh` reconciles the state with the real infrastructure and changes
 * nothing else (Terraform `-refresh-only`, `pulumi refresh`).
 */
export const RUN_OPERATIONS = ["plan", "apply", "destroy", "refresh"] as const;
export type RunOperation = (typeof RUN_OPERATIONS)[number];

/** The engines a workspace runs. */
export const ENGINES = ["terraform", "tofu", "pulumi"] as const;

/**
 * The env variable through which a Pulumi workspace names its own state backend: when a
 * workspace has it, the stack lives there and Outpost keeps no checkpoint (the Worker shows the
 * workspace's state backend as its own; the agent restores no `file://` backend).
 */
export const PULUMI_BACKEND_URL = "PULUMI_BACKEND_URL";
export type Engine = (typeof ENGINES)[number];

export const JobSpec = z.object({
  operation: z.enum(RUN_OPERATIONS),
  phase: z.enum(["plan", "apply"]),
  isSpeculative: z.boolean(),
  isDestroy: z.boolean(),
  workspaceName: z.string(),
  engine: z.enum(ENGINES),
  /**
   * As the workspace names it: `latest`, an exact version, or a constraint the agent resolves
   * (`~> 1.9` for Terraform and OpenTofu, `^3.150` for Pulumi). An apply job's is the exact
   * version its plan ran.
   */
  engineVersion: z.string(),
  /** Pulumi workspaces: the stack every command names with `-s`; null for other engines. */
  stackName: z.string().nullable().default(null),
  /** Relative to the configuration's root; "" is the root. */
  workingDirectory: z.string(),
  configuration: JobConfiguration.nullable(),
  /**
   * A pull request from a fork: the agent forwards no host variables, writes no sensitive
   * values and runs no hooks for it.
   */
  isFork: z.boolean(),
  /**
   * Terraform and OpenTofu plans: resource addresses the plan is limited to (`-target`) and
   * forced to replace (`-replace`), and `false` to plan without refreshing (`-refresh=false`).
   * Queued through the TFE API for one run; absent from older coordinators' specs.
   */
  targetAddrs: z.array(z.string()).default([]),
  replaceAddrs: z.array(z.string()).default([]),
  refresh: z.boolean().default(true),
  /**
   * Apply jobs: the SHA-256 (hex) of the plan file recorded when the plan finished; the agent
   * refuses a plan file whose hash differs. Null for plan jobs.
   */
  planSha256: z
    .string()
    .regex(/^[0-9a-f]{64}$/)
    .nullable(),
});
export type JobSpec = z.infer<typeof JobSpec>;

/** The artefacts a plan job uploads and its apply job downloads (`…/artifacts/{name}`). */
export const ArtifactName = z.enum([
  "plan.tfplan",
  "terraform.lock.hcl",
  "plan.json",
  /** Pulumi: the plan job's `Pulumi.<stack>.yaml`, so the apply job has the same secrets salt. */
  "pulumi-stack.yaml",
]);
export type ArtifactName = z.infer<typeof ArtifactName>;

/** Answer to a log append: the bytes the coordinator holds for the job. */
export const LogAppendResponse = z.object({ received: z.number().int().min(0) });
export type LogAppendResponse = z.infer<typeof LogAppendResponse>;

/** Header of a 416 answer to a log append: where the agent must resume. */
export const LOG_LENGTH_HEADER = "Outpost-Log-Length";
/** Header of a log read (`GET /api/v1/runs/{id}/logs`): the offset to read from next. */
export const LOG_NEXT_OFFSET_HEADER = "Outpost-Log-Next-Offset";
/** Header of a log read: `true` once the phase has ended and every byte was read. */
export const LOG_COMPLETE_HEADER = "Outpost-Log-Complete";
/**
 * Header of the configuration download (the tarball's sha256) and of an artefact upload (the
 * body's sha256, checked by the coordinator and recorded; an artefact is written once).
 */
export const SHA256_HEADER = "Outpost-Sha256";
