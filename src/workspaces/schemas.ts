/** Request and response shapes of the workspace routes. */
import { z } from "@hono/zod-openapi";
import { PoolRefField } from "../pools/model.ts";
import { ProjectRef } from "../projects/model.ts";
import { TagNames } from "../workspace-tags/model.ts";
import {
  Branch,
  ENGINES,
  EngineVersion,
  EXECUTION_MODES,
  FORK_PULL_REQUEST_POLICIES,
  MAX_ASSESSMENT_INTERVAL_MINUTES,
  MAX_REMOTE_STATE_CONSUMERS,
  MIN_ASSESSMENT_INTERVAL_MINUTES,
  REMOTE_STATE_SHARING,
  RepoUrl,
  StackName,
  TriggerPath,
  WorkingDirectory,
  WorkspaceName,
  WorkspaceRef,
} from "./model.ts";

export const WorkspaceSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    description: z.string(),
    projectId: z.string().openapi({ description: "The project the workspace belongs to" }),
    executionMode: z.enum(EXECUTION_MODES),
    poolId: z.string().nullable(),
    engine: z.enum(ENGINES),
    engineVersion: z.string(),
    stackName: z.string().nullable().openapi({ description: "Pulumi workspaces: the stack" }),
    stateBackend: z.enum(["outpost", "workspace"]).openapi({
      description:
        "Where the state lives: outpost (state versions kept here), or workspace when a Pulumi workspace names its own backend in a PULUMI_BACKEND_URL variable, in which case Outpost keeps no checkpoint",
    }),
    workingDirectory: z.string(),
    autoApply: z.boolean(),
    vcsRepoUrl: z.string().nullable(),
    vcsBranch: z.string().nullable(),
    vcsTriggerPaths: z.array(z.string()),
    forkPullRequests: z.enum(FORK_PULL_REQUEST_POLICIES),
    remoteStateSharing: z.enum(REMOTE_STATE_SHARING).openapi({
      description:
        "Whose runs may read this workspace's outputs (terraform_remote_state): none, every workspace of the organization, or the workspaces in remoteStateConsumerIds",
    }),
    remoteStateConsumerIds: z.array(z.string()),
    workloadIdentity: z.boolean().openapi({
      description:
        "Every job (not a fork's) receives a workload identity token: docs/workload-identity.md",
    }),
    workloadIdentityAudience: z
      .string()
      .nullable()
      .openapi({ description: "The token's aud; null means the issuer URL" }),
    workloadIdentityTokenLifetimeSeconds: z.int().openapi({
      description:
        "How long a job's workload identity token lives; the agent renews it while the job runs",
    }),
    assessmentsEnabled: z.boolean().openapi({
      description: "Drift detection: an assessment every assessmentIntervalMinutes",
    }),
    assessmentIntervalMinutes: z.int(),
    autoRemediate: z.boolean().openapi({
      description: "An assessment that finds drift queues a normal plan",
    }),
    driftStatus: z.enum(["unknown", "no_drift", "drifted", "errored"]).openapi({
      description: "The verdict of the last finished assessment; unknown before the first",
    }),
    lastAssessmentAt: z.string().nullable(),
    nextAssessmentAt: z.string().nullable(),
    lock: z
      .object({
        lockedBy: z.string().openapi({ description: "A token id (tok_…) or a run id (run_…)" }),
        holderKind: z.enum(["user", "run"]),
        reason: z.string(),
        lockedAt: z.string(),
      })
      .nullable(),
    currentRunId: z.string().nullable(),
    tags: z.array(z.string()).optional().openapi({
      description: "The workspace's tags, sorted (on create, read, list and update answers)",
    }),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .openapi("Workspace");

const settingsFields = {
  description: z.string().max(1000).optional(),
  projectId: ProjectRef.optional().openapi({
    description:
      "The project (its prj_ id or its name); on create, the organization's default project when omitted; on update, moves the workspace (admin access to the project needed)",
  }),
  executionMode: z.enum(EXECUTION_MODES).optional().openapi({
    description: "Defaults to agent when poolId is given, else local; agent needs a pool",
  }),
  poolId: PoolRefField.nullable().optional(),
  engine: z.enum(ENGINES).optional(),
  stackName: StackName.nullable().optional().openapi({
    description: 'The Pulumi stack; required with engine "pulumi", absent otherwise',
  }),
  workingDirectory: WorkingDirectory.optional(),
  autoApply: z.boolean().optional(),
  vcsRepoUrl: RepoUrl.nullable().optional(),
  vcsBranch: Branch.nullable().optional(),
  vcsTriggerPaths: z.array(TriggerPath).max(100).nullable().optional(),
  forkPullRequests: z.enum(FORK_PULL_REQUEST_POLICIES).optional(),
  remoteStateSharing: z.enum(REMOTE_STATE_SHARING).optional().openapi({
    description: "Defaults to none: no other workspace's runs read this workspace's outputs",
  }),
  remoteStateConsumerIds: z
    .array(z.string().regex(/^ws_[a-z2-7]{26}$/, "must be a ws_ id"))
    .max(MAX_REMOTE_STATE_CONSUMERS)
    .nullable()
    .optional()
    .openapi({ description: 'Workspaces whose runs read the outputs, with sharing "workspaces"' }),
  workloadIdentity: z.boolean().optional().openapi({
    description: "Hand every job (not a fork's) a signed workload identity token; default false",
  }),
  workloadIdentityAudience: z.string().trim().min(1).max(500).nullable().optional().openapi({
    description: "The token's aud (e.g. sts.amazonaws.com); null means the issuer URL",
    example: "api://AzureADTokenExchange",
  }),
  workloadIdentityTokenLifetimeSeconds: z.int().min(60).max(3600).optional().openapi({
    description:
      "How long a job's workload identity token lives, 60 s to 1 h; default 900 (15 minutes). The agent renews the job's token file while the job runs, so a leaked token is worthless soon after",
  }),
  assessmentsEnabled: z.boolean().optional().openapi({
    description: "Run an assessment (a refresh-only plan that changes nothing) on an interval",
  }),
  assessmentIntervalMinutes: z
    .int()
    .min(MIN_ASSESSMENT_INTERVAL_MINUTES)
    .max(MAX_ASSESSMENT_INTERVAL_MINUTES)
    .optional()
    .openapi({ description: "Minutes between assessments, 60 to 10080; default 1440 (daily)" }),
  autoRemediate: z.boolean().optional().openapi({
    description: "When an assessment finds drift, queue a normal plan; default false",
  }),
  tags: TagNames.optional().openapi({
    description:
      "Tags (lowercase letters, digits, ':', '_', '-'; at most 50): on update, the whole new set. The cloud block's workspaces { tags = [...] } selects by them",
    example: ["app", "env:prod"],
  }),
};

export const CreateWorkspace = z
  .strictObject({
    name: WorkspaceName,
    engineVersion: EngineVersion.optional(),
    ...settingsFields,
  })
  .openapi("CreateWorkspace");

export const UpdateWorkspace = z
  .strictObject({
    name: WorkspaceName.optional(),
    engineVersion: EngineVersion.optional(),
    ...settingsFields,
  })
  .openapi("UpdateWorkspace");

export const Params = z.strictObject({ workspaceId: WorkspaceRef });
export const LockBody = z
  .strictObject({ reason: z.string().trim().min(1).max(500) })
  .openapi("LockWorkspace");
export const UnlockQuery = z.strictObject({
  force: z
    .enum(["true", "false"])
    .optional()
    .openapi({ description: "Admins: release a lock held by another token or by a run" }),
});
