/**
 * The D1 schema: every table of the coordinator's metadata. Times are integer milliseconds since
 * the epoch; ids are prefixed strings (`newId` of `@outpost/common`). Blobs live in R2 and are
 * referenced by key.
 * Migrations in `migrations/` are generated from this file by `npm run db:generate`.
 */
import { ENGINES, type PlanSummary, RUN_OPERATIONS, RUN_STATUSES } from "@outpost/protocol";
import { sql } from "drizzle-orm";
import {
  index,
  integer,
  primaryKey,
  real,
  sqliteTable,
  text,
  uniqueIndex,
} from "drizzle-orm/sqlite-core";
import type { Actor } from "../authz/actor.ts";
import { DESTINATION_TYPES, EVENT_TYPES, type NotificationTrigger } from "../events/model.ts";
import { RUN_SOURCES } from "../runs/model.ts";

const createdAt = () =>
  integer({ mode: "number" }).notNull().default(sql`(cast(unixepoch('subsec') * 1000 as integer))`);

export const organizations = sqliteTable("organizations", {
  id: text().primaryKey(),
  name: text().notNull().unique(),
  createdAt: createdAt(),
});

/** Org tokens: the secret is never stored, only its SHA-256 (hex). */
export const orgTokens = sqliteTable(
  "org_tokens",
  {
    id: text().primaryKey(),
    orgId: text()
      .notNull()
      .references(() => organizations.id),
    role: text({ enum: ["owner", "admin", "member", "reader"] }).notNull(),
    description: text().notNull(),
    tokenHash: text().notNull().unique(),
    createdBy: text(),
    createdAt: createdAt(),
    lastUsedAt: integer(),
    revokedAt: integer(),
  },
  (t) => [index("org_tokens_org_idx").on(t.orgId)],
);

export const agentPools = sqliteTable(
  "agent_pools",
  {
    id: text().primaryKey(),
    orgId: text()
      .notNull()
      .references(() => organizations.id),
    name: text().notNull(),
    description: text().notNull().default(""),
    /** Liveness settings; null means the documented default. */
    unknownAfterMs: integer(),
    erroredAfterMs: integer(),
    retentionMs: integer(),
    /** Longest lifetime of an agent token issued by OIDC exchange; null means 1 h. */
    maxTokenExpirationMs: integer(),
    /**
     * Which workspaces may run on the pool: every workspace of the organization (true, the
     * default), or only those in `allowedWorkspaceIds` and those whose project is in
     * `allowedProjectIds` (JSON arrays, sorted, without repeats).
     */
    organizationScoped: integer({ mode: "boolean" }).notNull().default(true),
    allowedWorkspaceIds: text({ mode: "json" }).$type<string[]>().notNull().default(sql`'[]'`),
    allowedProjectIds: text({ mode: "json" }).$type<string[]>().notNull().default(sql`'[]'`),
    /** Autoscaling: the fewest and most agents `desiredAgents` asks for, and jobs per agent. */
    minAgents: integer().notNull().default(0),
    maxAgents: integer().notNull().default(10),
    jobsPerAgent: integer().notNull().default(1),
    createdAt: createdAt(),
    updatedAt: integer().notNull(),
  },
  (t) => [uniqueIndex("agent_pools_org_name_idx").on(t.orgId, t.name)],
);

export const agentTokens = sqliteTable(
  "agent_tokens",
  {
    id: text().primaryKey(),
    orgId: text()
      .notNull()
      .references(() => organizations.id),
    poolId: text()
      .notNull()
      .references(() => agentPools.id),
    description: text().notNull(),
    tokenHash: text().notNull().unique(),
    createdBy: text(),
    createdAt: createdAt(),
    lastUsedAt: integer(),
    revokedAt: integer(),
    /** Tokens issued by OIDC exchange expire; static tokens (null) do not. */
    expiresAt: integer(),
    /** The trust whose conditions the exchanged OIDC token met; null for static tokens. */
    oidcTrustId: text(),
    /** The exchanged OIDC token's `iss` and `sub`, for the listing and the audit. */
    oidcIssuer: text(),
    oidcSubject: text(),
    /**
     * The first token of an OIDC agent's chain of renewals (its own id for the first one): the
     * pool binds the agent's registration to it, so a renewed token keeps the registration and
     * revoking any token of the chain revokes the whole chain. Null for static tokens.
     */
    chainId: text(),
  },
  (t) => [
    index("agent_tokens_pool_idx").on(t.poolId),
    index("agent_tokens_chain_idx").on(t.chainId),
  ],
);

/**
 * OIDC issuers a pool trusts: an agent presenting a JWT from `issuer` for `audience` whose claims
 * meet every condition in `claims` (exact values or `*` globs) gets a short-lived agent token.
 */
export const oidcTrusts = sqliteTable(
  "oidc_trusts",
  {
    id: text().primaryKey(),
    orgId: text()
      .notNull()
      .references(() => organizations.id),
    poolId: text()
      .notNull()
      .references(() => agentPools.id),
    issuer: text().notNull(),
    audience: text().notNull(),
    /** JSON object: claim name → exact value or `*` glob. */
    claims: text({ mode: "json" }).$type<Record<string, string>>().notNull(),
    description: text().notNull().default(""),
    createdBy: text(),
    createdAt: createdAt(),
  },
  (t) => [index("oidc_trusts_pool_idx").on(t.poolId)],
);

/**
 * Projects: every workspace belongs to exactly one (the application sets `workspaces.projectId`
 * on every insert; the column stays nullable in SQL only because SQLite cannot add a NOT NULL
 * reference to a table that has rows). Each organization has one default project (`isDefault`),
 * where a workspace created without a project goes; it cannot be deleted.
 */
export const projects = sqliteTable(
  "projects",
  {
    id: text().primaryKey(),
    orgId: text()
      .notNull()
      .references(() => organizations.id),
    name: text().notNull(),
    description: text().notNull().default(""),
    isDefault: integer({ mode: "boolean" }).notNull().default(false),
    createdAt: createdAt(),
    updatedAt: integer().notNull(),
  },
  (t) => [
    uniqueIndex("projects_org_name_idx").on(t.orgId, t.name),
    // One default project per organization.
    uniqueIndex("projects_org_default_idx").on(t.orgId).where(sql`is_default = 1`),
  ],
);

/**
 * The OIDC tokens exchanges have accepted, by issuer and `jti` (or the token's hash when it has
 * none), kept until the token expires, so one token buys one agent token (its own chain may
 * present it again when renewing before the platform rotated it).
 */
export const oidcTokenUses = sqliteTable(
  "oidc_token_uses",
  {
    issuer: text().notNull(),
    tokenKey: text().notNull(),
    poolId: text().notNull(),
    /** The renewal chain it started or continued: that chain may present it again. */
    chainId: text().notNull(),
    expiresAt: integer().notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.issuer, t.tokenKey] }),
    index("oidc_token_uses_expires_idx").on(t.expiresAt),
  ],
);

export const workspaces = sqliteTable(
  "workspaces",
  {
    id: text().primaryKey(),
    orgId: text()
      .notNull()
      .references(() => organizations.id),
    name: text().notNull(),
    description: text().notNull().default(""),
    /** Always set (see {@link projects}); a project holding workspaces cannot be deleted. */
    projectId: text().references(() => projects.id),
    executionMode: text({ enum: ["agent", "local"] })
      .notNull()
      .default("agent"),
    poolId: text().references(() => agentPools.id),
    engine: text({ enum: ENGINES }).notNull().default("terraform"),
    /** Exact for Terraform and OpenTofu; Pulumi may name a range (`^3.150`) or `latest`. */
    engineVersion: text().notNull(),
    /** Pulumi workspaces: the stack (`dev`, `org/project/dev`); null for other engines. */
    stackName: text(),
    workingDirectory: text().notNull().default(""),
    autoApply: integer({ mode: "boolean" }).notNull().default(false),
    vcsRepoUrl: text(),
    vcsBranch: text(),
    /** JSON array of path prefixes or globs. */
    vcsTriggerPaths: text({ mode: "json" }).$type<string[]>(),
    /** What a pull request from a fork gets: refused, or planned without sensitive variables. */
    forkPullRequests: text({ enum: ["refuse", "plan_without_secrets"] })
      .notNull()
      .default("refuse"),
    /**
     * Whose runs may read this workspace's outputs (`terraform_remote_state`): nobody (the
     * default), every workspace of the org, or the workspaces in `remoteStateConsumerIds`.
     */
    remoteStateSharing: text({ enum: ["none", "organization", "workspaces"] })
      .notNull()
      .default("none"),
    /** JSON array of workspace ids; used when `remoteStateSharing` is `workspaces`. */
    remoteStateConsumerIds: text({ mode: "json" }).$type<string[]>(),
    /** Every job but a fork's receives a workload identity token (a JWT signed by Outpost). */
    workloadIdentity: integer({ mode: "boolean" }).notNull().default(false),
    /** The token's `aud`; null means the issuer URL. */
    workloadIdentityAudience: text(),
    /** Lifetime of a job's workload identity token; the agent renews it while the job runs. */
    workloadIdentityTokenLifetimeSeconds: integer().notNull().default(900),
    /** Drift detection: a refresh-only plan every `assessmentIntervalMinutes` (docs/workspaces.md). */
    assessmentsEnabled: integer({ mode: "boolean" }).notNull().default(false),
    assessmentIntervalMinutes: integer().notNull().default(1440),
    /** When drift is found, queue a normal plan (which follows `autoApply`). */
    autoRemediate: integer({ mode: "boolean" }).notNull().default(false),
    /** When the cron tick starts the next assessment; null while assessments are off. */
    nextAssessmentAt: integer(),
    /** The last finished assessment's verdict; null before the first one. */
    driftStatus: text({ enum: ["no_drift", "drifted", "errored"] }),
    lastAssessmentAt: integer(),
    lockedBy: text(),
    lockReason: text(),
    lockedAt: integer(),
    currentRunId: text(),
    createdAt: createdAt(),
    updatedAt: integer().notNull(),
  },
  (t) => [
    uniqueIndex("workspaces_org_name_idx").on(t.orgId, t.name),
    index("workspaces_pool_idx").on(t.poolId),
    index("workspaces_project_idx").on(t.projectId),
  ],
);

/** Variables; a sensitive value is stored only as AES-GCM ciphertext with the id of its key. */
export const variables = sqliteTable(
  "variables",
  {
    id: text().primaryKey(),
    orgId: text().notNull(),
    workspaceId: text()
      .notNull()
      .references(() => workspaces.id, { onDelete: "cascade" }),
    key: text().notNull(),
    category: text({ enum: ["env", "terraform"] }).notNull(),
    isHcl: integer({ mode: "boolean" }).notNull().default(false),
    isSensitive: integer({ mode: "boolean" }).notNull().default(false),
    value: text(),
    ciphertext: text(),
    keyId: text(),
    description: text().notNull().default(""),
    createdAt: createdAt(),
    updatedAt: integer().notNull(),
  },
  (t) => [uniqueIndex("variables_ws_cat_key_idx").on(t.workspaceId, t.category, t.key)],
);

export const configurationVersions = sqliteTable(
  "configuration_versions",
  {
    id: text().primaryKey(),
    orgId: text().notNull(),
    workspaceId: text()
      .notNull()
      .references(() => workspaces.id, { onDelete: "cascade" }),
    source: text({ enum: ["upload", "vcs"] }).notNull(),
    r2Key: text(),
    sha256: text(),
    sizeBytes: integer(),
    repoUrl: text(),
    commitSha: text(),
    branch: text(),
    /** A pull request's commit: usable by its speculative plan, never a workspace's default. */
    isSpeculative: integer({ mode: "boolean" }).notNull().default(false),
    /** A pull request from a fork: every run on it inherits the flag (no secrets, no writes). */
    isFork: integer({ mode: "boolean" }).notNull().default(false),
    createdBy: text(),
    createdAt: createdAt(),
  },
  (t) => [index("configuration_versions_ws_idx").on(t.workspaceId, t.createdAt)],
);

export const runs = sqliteTable(
  "runs",
  {
    id: text().primaryKey(),
    orgId: text().notNull(),
    workspaceId: text()
      .notNull()
      .references(() => workspaces.id, { onDelete: "cascade" }),
    configurationVersionId: text(),
    operation: text({ enum: RUN_OPERATIONS }).notNull(),
    isSpeculative: integer({ mode: "boolean" }).notNull().default(false),
    /** One of the run statuses (`RUN_STATUSES`); the state machine is `src/runs/model.ts`. */
    status: text({ enum: RUN_STATUSES }).notNull(),
    message: text().notNull().default(""),
    /** Why the run ended errored or canceled, in words. */
    statusReason: text(),
    /** How the run was queued (`RUN_SOURCES` in src/runs/model.ts). */
    source: text({ enum: RUN_SOURCES }).notNull().default("api"),
    /** A run queued by a run trigger: the source workspace's applied run that queued it. */
    triggeringRunId: text(),
    commitSha: text(),
    branch: text(),
    pullRequestNumber: integer(),
    author: text(),
    commitMessage: text(),
    isFork: integer({ mode: "boolean" }).notNull().default(false),
    isAutoApply: integer({ mode: "boolean" }).notNull().default(false),
    /** Queued with `allowEmptyApply`: may apply a plan that destroys every resource of the state. */
    allowEmptyApply: integer({ mode: "boolean" }).notNull().default(false),
    /**
     * Terraform's plan options for this run only (the TFE API's `target-addrs`, `replace-addrs`,
     * `refresh`): each job's spec carries them to the agent's `plan` command.
     */
    targetAddrs: text({ mode: "json" }).$type<string[]>(),
    replaceAddrs: text({ mode: "json" }).$type<string[]>(),
    refresh: integer({ mode: "boolean" }).notNull().default(true),
    /**
     * The run's own Terraform variables (the CLI's `-var` values as the TFE API's `variables`),
     * sealed under `ENCRYPTION_KEY` bound to the run id: JSON `[{ key, value }]`, HCL values.
     */
    runVariables: text(),
    /** The execution mode and pool the plan ran under; apply errors if the workspace changed them. */
    plannedExecutionMode: text(),
    plannedPoolId: text(),
    /** JSON: adds, changes, destroys, imports, hasChanges. */
    planSummary: text({ mode: "json" }).$type<PlanSummary>(),
    /** SHA-256 (hex) of the plan file as stored when the plan job finished; the apply checks it. */
    planSha256: text(),
    /** JSON: status → first time entered (ms). */
    statusTimestamps: text({ mode: "json" }).$type<Record<string, number>>(),
    cancelRequestedAt: integer(),
    /** Who queued the run, confirmed, discarded and canceled it (JSON actors, see authz/actor.ts). */
    createdBy: text({ mode: "json" }).$type<Actor>(),
    confirmedBy: text({ mode: "json" }).$type<Actor>(),
    discardedBy: text({ mode: "json" }).$type<Actor>(),
    canceledBy: text({ mode: "json" }).$type<Actor>(),
    createdAt: createdAt(),
    updatedAt: integer().notNull(),
  },
  (t) => [
    index("runs_ws_created_idx").on(t.workspaceId, t.createdAt),
    index("runs_org_status_idx").on(t.orgId, t.status),
    index("runs_commit_idx").on(t.orgId, t.commitSha),
    index("runs_org_created_idx").on(t.orgId, t.createdAt),
    // A source run queues at most one run on each target workspace, however often its event
    // arrives.
    uniqueIndex("runs_ws_triggering_run_idx").on(t.workspaceId, t.triggeringRunId),
  ],
);

/**
 * Each job of a run as it started: which agent took it (id, name, version and isolation mode as
 * the agent registered them) in which pool, and the exact engine version it reported using.
 * Kept for the run's lifetime, so "which agent ran this" outlives the agent.
 */
export const runJobs = sqliteTable(
  "run_jobs",
  {
    /** The job id, `<run id>:plan` or `<run id>:apply`. */
    id: text().primaryKey(),
    orgId: text().notNull(),
    runId: text()
      .notNull()
      .references(() => runs.id, { onDelete: "cascade" }),
    phase: text({ enum: ["plan", "apply"] }).notNull(),
    poolId: text().notNull(),
    agentId: text().notNull(),
    agentName: text(),
    agentVersion: text().notNull(),
    /** How the agent confines its jobs (`bwrap`, `none`); null when it did not say. */
    isolation: text(),
    /** The exact engine version the agent resolved and ran; null until it reports one. */
    engineVersion: text(),
    startedAt: integer().notNull(),
    endedAt: integer(),
  },
  (t) => [index("run_jobs_run_idx").on(t.runId)],
);

/**
 * Per-job tokens, minted when a job is leased. One is usable only while its lease is live: from
 * the agent's start acknowledgement of that lease (`startedAt`) until its job ends (`revokedAt`).
 */
export const runTokens = sqliteTable(
  "run_tokens",
  {
    id: text().primaryKey(),
    orgId: text().notNull(),
    runId: text()
      .notNull()
      .references(() => runs.id, { onDelete: "cascade" }),
    workspaceId: text().notNull(),
    jobId: text().notNull(),
    /** The lease the token was minted for; only that lease's start makes it usable. */
    leaseId: text(),
    tokenHash: text().notNull().unique(),
    createdAt: createdAt(),
    startedAt: integer(),
    revokedAt: integer(),
  },
  (t) => [index("run_tokens_run_idx").on(t.runId), index("run_tokens_job_idx").on(t.jobId)],
);

export const stateVersions = sqliteTable(
  "state_versions",
  {
    id: text().primaryKey(),
    orgId: text().notNull(),
    workspaceId: text()
      .notNull()
      .references(() => workspaces.id, { onDelete: "cascade" }),
    serial: integer().notNull(),
    lineage: text().notNull(),
    md5: text().notNull(),
    sizeBytes: integer().notNull(),
    terraformVersion: text(),
    r2Key: text().notNull(),
    /** OpenTofu client-side encryption: only serial and lineage are readable. */
    isEncrypted: integer({ mode: "boolean" }).notNull().default(false),
    /** Whether the top-level outputs were extracted to their own R2 object at write time. */
    outputsStatus: text({ enum: ["stored", "none", "encrypted", "too_large"] })
      .notNull()
      .default("none"),
    /** Set on a version written by a rollback: the version whose body it restored. */
    restoredFromId: text(),
    /** Set when the state was deleted (DELETE on the backend); kept as history, never current. */
    discardedAt: integer(),
    runId: text(),
    /** Who wrote it (JSON actor): a person or token, or for a run's write the run's confirmer. */
    createdBy: text({ mode: "json" }).$type<Actor>(),
    createdAt: createdAt(),
  },
  (t) => [
    // Serials are unique among the live versions; a deleted state's history keeps its serials.
    uniqueIndex("state_versions_ws_serial_idx")
      .on(t.workspaceId, t.serial)
      .where(sql`discarded_at is null`),
    index("state_versions_ws_created_idx").on(t.workspaceId, t.createdAt),
  ],
);

/** The Terraform state lock of a workspace (the http backend's LOCK/UNLOCK). */
export const stateLocks = sqliteTable(
  "state_locks",
  {
    workspaceId: text()
      .primaryKey()
      .references(() => workspaces.id, { onDelete: "cascade" }),
    orgId: text().notNull(),
    lockId: text().notNull(),
    /** The lock-info JSON exactly as the client sent it. */
    info: text().notNull(),
    /** The run whose token took the lock. */
    runId: text(),
    /** The job whose token took the lock; the lock is released when that job ends. */
    jobId: text(),
    /** The holder's principal id: `tok_…` for an org token, `run_…` for a run. */
    createdBy: text(),
    createdAt: createdAt(),
  },
  (t) => [index("state_locks_run_idx").on(t.runId)],
);

export const vcsHooks = sqliteTable(
  "vcs_hooks",
  {
    id: text().primaryKey(),
    orgId: text()
      .notNull()
      .references(() => organizations.id),
    provider: text({ enum: ["github", "gitlab"] }).notNull(),
    /** Null: the hook serves every repository of the org. */
    repoUrl: text(),
    description: text().notNull().default(""),
    secretCiphertext: text().notNull(),
    previousSecretCiphertext: text(),
    previousSecretExpiresAt: integer(),
    /** Who posts commit statuses and plan comments back: `src/vcs-feedback/model.ts`. */
    feedback: text({ enum: ["agent", "coordinator", "off"] })
      .notNull()
      .default("off"),
    /** The VCS API's base URL; null: derived from the repository URL. */
    apiUrl: text(),
    /** The coordinator's VCS token, sealed under `ENCRYPTION_KEY` bound to this row. */
    tokenCiphertext: text(),
    /** GitHub App credentials (instead of a token): the app's id and its private key, sealed. */
    appId: integer(),
    appKeyCiphertext: text(),
    createdAt: createdAt(),
    updatedAt: integer().notNull(),
  },
  (t) => [index("vcs_hooks_org_idx").on(t.orgId)],
);

/**
 * A GitHub App installation token a hook's app minted for one repository, sealed under
 * `ENCRYPTION_KEY`, kept until shortly before it expires: every isolate and queue consumer
 * shares it, so GitHub sees one token request per repository and hour, not one per event.
 */
export const vcsAppTokens = sqliteTable(
  "vcs_app_tokens",
  {
    hookId: text()
      .notNull()
      .references(() => vcsHooks.id, { onDelete: "cascade" }),
    /** `owner/name` as the run's repository URL names it, lower-cased. */
    repoPath: text().notNull(),
    installationId: integer().notNull(),
    tokenCiphertext: text().notNull(),
    expiresAt: integer().notNull(),
  },
  (t) => [primaryKey({ columns: [t.hookId, t.repoPath] })],
);

/**
 * What VCS feedback last did for a run, per kind (`status`, `comment`): what was (or was to be)
 * posted and whether the VCS took it, so the run shows "status not posted: 401 …" and a
 * redelivered event posts nothing twice.
 */
export const vcsFeedback = sqliteTable(
  "vcs_feedback",
  {
    runId: text()
      .notNull()
      .references(() => runs.id, { onDelete: "cascade" }),
    kind: text({ enum: ["status", "comment"] }).notNull(),
    orgId: text().notNull(),
    /** The run status the post reported; a later event posts again. */
    runStatus: text().notNull(),
    state: text().notNull(),
    description: text().notNull(),
    posted: integer({ mode: "boolean" }).notNull(),
    error: text(),
    attempts: integer().notNull().default(1),
    updatedAt: integer().notNull(),
  },
  (t) => [primaryKey({ columns: [t.runId, t.kind] })],
);

/**
 * VCS feedback waiting for an agent (hooks with `feedback: "agent"`): per run and kind, the
 * latest post to make, in the pool that may post it, for agents holding a token for `host`.
 * `preferredAgentId` (the agent that ran the run's job) has it alone until `preferredUntil`;
 * a claimed item is the claiming agent's until `claimedUntil`, and a newer post replacing it
 * (new `id`) waits for that claim to end, so statuses reach the VCS in order.
 */
export const vcsFeedbackItems = sqliteTable(
  "vcs_feedback_items",
  {
    id: text().primaryKey(),
    runId: text()
      .notNull()
      .references(() => runs.id, { onDelete: "cascade" }),
    kind: text({ enum: ["status", "comment"] }).notNull(),
    orgId: text().notNull(),
    poolId: text().notNull(),
    host: text().notNull(),
    /** JSON: the `FeedbackItem` of `@outpost/protocol` without its id. */
    payload: text().notNull(),
    runStatus: text().notNull(),
    state: text().notNull(),
    description: text().notNull(),
    preferredAgentId: text(),
    preferredUntil: integer(),
    /** The id handed out with the claim (the item's `id` then), and who holds it until when. */
    claimedId: text(),
    claimedBy: text(),
    claimedUntil: integer(),
    createdAt: integer().notNull(),
  },
  (t) => [
    uniqueIndex("vcs_feedback_items_run_kind").on(t.runId, t.kind),
    index("vcs_feedback_items_pool_host").on(t.poolId, t.host),
  ],
);

export const vcsDeliveries = sqliteTable(
  "vcs_deliveries",
  {
    id: text().primaryKey(),
    orgId: text().notNull(),
    hookId: text()
      .notNull()
      .references(() => vcsHooks.id, { onDelete: "cascade" }),
    deliveryId: text().notNull(),
    /** SHA-256 (hex) of the raw body: the same body under a new delivery id is a replay. */
    bodySha256: text(),
    event: text().notNull(),
    outcome: text(),
    receivedAt: createdAt(),
  },
  (t) => [
    uniqueIndex("vcs_deliveries_hook_delivery_idx").on(t.hookId, t.deliveryId),
    uniqueIndex("vcs_deliveries_hook_body_idx").on(t.hookId, t.bodySha256),
  ],
);

export const auditEvents = sqliteTable(
  "audit_events",
  {
    id: text().primaryKey(),
    orgId: text().notNull(),
    /** Who: the actor's id (usr_…, tok_…, ttok_…, atok_…, a run id, or "system"). */
    actor: text().notNull(),
    /** The actor's kind and name when the event was recorded (see authz/actor.ts). */
    actorType: text(),
    actorName: text(),
    /** How a person signed in: sso, access, personal token, token sign-in to the dashboard. */
    actorVia: text(),
    action: text().notNull(),
    targetType: text().notNull(),
    targetId: text().notNull(),
    data: text({ mode: "json" }).$type<Record<string, unknown>>(),
    createdAt: createdAt(),
  },
  (t) => [
    index("audit_events_org_created_idx").on(t.orgId, t.createdAt),
    index("audit_events_org_target_idx").on(t.orgId, t.targetType, t.targetId, t.createdAt),
  ],
);

/**
 * People (docs/people.md). A user is a person of one organization, known by email; it signs in
 * through the organization's OpenID provider or Cloudflare Access and is never given a password.
 */
export const users = sqliteTable(
  "users",
  {
    id: text().primaryKey(),
    orgId: text()
      .notNull()
      .references(() => organizations.id),
    /** Lowercased; the identity across sign-in methods. */
    email: text().notNull(),
    name: text().notNull().default(""),
    /** The provider subject of the last SSO sign-in (null for Access-only users). */
    ssoSubject: text(),
    disabledAt: integer(),
    lastSignInAt: integer(),
    lastSignInMethod: text({ enum: ["sso", "access"] }),
    createdAt: createdAt(),
    updatedAt: integer().notNull(),
  },
  (t) => [uniqueIndex("users_org_email_idx").on(t.orgId, t.email)],
);

/** Teams: what people get permissions through, from the provider's groups or by hand. */
export const teams = sqliteTable(
  "teams",
  {
    id: text().primaryKey(),
    orgId: text()
      .notNull()
      .references(() => organizations.id),
    name: text().notNull(),
    /** JSON array of provider group names whose members belong to the team. */
    idpGroups: text({ mode: "json" }).$type<string[]>().notNull(),
    /** The organization role every member (and every team token) holds; null: none. */
    organizationRole: text({ enum: ["owner", "admin", "member", "reader"] }),
    createdAt: createdAt(),
    updatedAt: integer().notNull(),
  },
  (t) => [uniqueIndex("teams_org_name_idx").on(t.orgId, t.name)],
);

/**
 * Who is in a team: `idp` rows follow the provider's groups at every sign-in (added and removed
 * then), `manual` rows are set by an owner and kept until an owner removes them.
 */
export const teamMembers = sqliteTable(
  "team_members",
  {
    teamId: text()
      .notNull()
      .references(() => teams.id, { onDelete: "cascade" }),
    userId: text()
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    orgId: text().notNull(),
    source: text({ enum: ["idp", "manual"] }).notNull(),
    createdAt: createdAt(),
  },
  (t) => [
    primaryKey({ columns: [t.teamId, t.userId] }),
    index("team_members_user_idx").on(t.userId),
  ],
);

/** Personal API tokens (`op_user_…`): act as their user, with the user's permissions of the moment. */
export const userTokens = sqliteTable(
  "user_tokens",
  {
    id: text().primaryKey(),
    orgId: text().notNull(),
    userId: text()
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    description: text().notNull(),
    tokenHash: text().notNull().unique(),
    createdAt: createdAt(),
    lastUsedAt: integer(),
    revokedAt: integer(),
    /** Null: does not expire. */
    expiresAt: integer(),
  },
  (t) => [index("user_tokens_user_idx").on(t.userId)],
);

/** Team tokens (`op_team_…`), for CI: act as the team. */
export const teamTokens = sqliteTable(
  "team_tokens",
  {
    id: text().primaryKey(),
    orgId: text().notNull(),
    teamId: text()
      .notNull()
      .references(() => teams.id, { onDelete: "cascade" }),
    description: text().notNull(),
    tokenHash: text().notNull().unique(),
    createdBy: text(),
    createdAt: createdAt(),
    lastUsedAt: integer(),
    revokedAt: integer(),
    expiresAt: integer(),
  },
  (t) => [index("team_tokens_team_idx").on(t.teamId)],
);

/** A team's access to a workspace: one of Terraform Cloud's fixed permission sets. */
export const workspaceTeamAccess = sqliteTable(
  "workspace_team_access",
  {
    workspaceId: text()
      .notNull()
      .references(() => workspaces.id, { onDelete: "cascade" }),
    teamId: text()
      .notNull()
      .references(() => teams.id, { onDelete: "cascade" }),
    orgId: text().notNull(),
    access: text({ enum: ["read", "plan", "write", "admin"] }).notNull(),
    createdAt: createdAt(),
    updatedAt: integer().notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.workspaceId, t.teamId] }),
    index("workspace_team_access_team_idx").on(t.teamId),
  ],
);

/** An organization's OpenID Connect sign-in; the client secret is sealed (ENCRYPTION_KEY). */
export const ssoConfigs = sqliteTable("sso_configs", {
  orgId: text()
    .primaryKey()
    .references(() => organizations.id),
  issuer: text().notNull(),
  clientId: text().notNull(),
  clientSecretCiphertext: text().notNull(),
  groupsClaim: text().notNull(),
  emailClaim: text().notNull(),
  createdAt: createdAt(),
  updatedAt: integer().notNull(),
});

/**
 * Sign-ins under way: the PKCE verifier and nonce of one authorization request, found by the
 * SHA-256 of its `state` and usable once, until `expiresAt`.
 */
export const ssoRequests = sqliteTable(
  "sso_requests",
  {
    id: text().primaryKey(),
    orgId: text()
      .notNull()
      .references(() => organizations.id, { onDelete: "cascade" }),
    stateHash: text().notNull().unique(),
    nonce: text().notNull(),
    codeVerifier: text().notNull(),
    /** The dashboard path to return to. */
    next: text().notNull(),
    createdAt: createdAt(),
    expiresAt: integer().notNull(),
    usedAt: integer(),
  },
  (t) => [index("sso_requests_expires_idx").on(t.expiresAt)],
);

/**
 * `outpost login --sso`, device-style: the CLI holds the device code (stored as its SHA-256), the
 * person approves the user code in a signed-in browser, and the CLI's next poll receives a fresh
 * personal token, once.
 */
export const cliLogins = sqliteTable(
  "cli_logins",
  {
    id: text().primaryKey(),
    deviceCodeHash: text().notNull().unique(),
    userCode: text().notNull().unique(),
    /** Where the CLI runs, as it said (shown on the approval page). */
    clientName: text().notNull(),
    orgId: text(),
    userId: text(),
    approvedAt: integer(),
    consumedAt: integer(),
    createdAt: createdAt(),
    expiresAt: integer().notNull(),
  },
  (t) => [index("cli_logins_expires_idx").on(t.expiresAt)],
);

/**
 * Sessions of the dashboard and of a signed-in browser: an opaque cookie secret whose SHA-256 is
 * kept here. A session belongs to a user (signed in through SSO or Cloudflare Access) or to an
 * org token (the break-glass token sign-in); it counts while it is not signed out, younger than
 * the absolute lifetime (`expiresAt`) and used within the idle timeout (`lastSeenAt`), and while
 * its user is enabled or its token unrevoked.
 */
export const sessions = sqliteTable(
  "sessions",
  {
    id: text().primaryKey(),
    orgId: text()
      .notNull()
      .references(() => organizations.id),
    tokenId: text().references(() => orgTokens.id),
    userId: text().references(() => users.id, { onDelete: "cascade" }),
    method: text({ enum: ["token", "sso", "access"] })
      .notNull()
      .default("token"),
    secretHash: text().notNull().unique(),
    createdAt: createdAt(),
    lastSeenAt: integer(),
    expiresAt: integer().notNull(),
    revokedAt: integer(),
  },
  (t) => [index("sessions_token_idx").on(t.tokenId), index("sessions_user_idx").on(t.userId)],
);

/** A team's access to a project: counts on every workspace of the project as if given there. */
export const projectTeamAccess = sqliteTable(
  "project_team_access",
  {
    projectId: text()
      .notNull()
      .references(() => projects.id, { onDelete: "cascade" }),
    teamId: text()
      .notNull()
      .references(() => teams.id, { onDelete: "cascade" }),
    orgId: text().notNull(),
    access: text({ enum: ["read", "plan", "write", "admin"] }).notNull(),
    createdAt: createdAt(),
    updatedAt: integer().notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.projectId, t.teamId] }),
    index("project_team_access_team_idx").on(t.teamId),
  ],
);

/**
 * Runs that ended, counted by workspace and final status (`outpost_runs_total`). Kept by the
 * trigger `runs_count_outcome` (migration 0010): a run enters a terminal status once and never
 * leaves it, so each run is counted exactly once, whichever code path ended it. Only ever
 * incremented; the rows go with their workspace.
 */
export const runOutcomes = sqliteTable(
  "run_outcomes",
  {
    orgId: text().notNull(),
    workspaceId: text()
      .notNull()
      .references(() => workspaces.id, { onDelete: "cascade" }),
    /** A terminal run status. */
    outcome: text().notNull(),
    count: integer().notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.workspaceId, t.outcome] }),
    index("run_outcomes_org_idx").on(t.orgId),
  ],
);

/**
 * How long jobs waited for an agent (`wait`: queued to started) and ran (`duration`: started to
 * ended), per pool and phase, as histogram buckets (`outpost_job_wait_seconds`,
 * `outpost_job_duration_seconds`). One row per bucket holds the observations that fell in it
 * (not cumulative) and their sum. Kept by the triggers `run_jobs_observe_wait` and
 * `run_jobs_observe_duration` (migration 0010), whose bucket bounds are those of
 * `src/metrics/model.ts`. Only ever incremented: deleting a workspace does not touch them, so
 * the histograms never decrease; the rows go with their pool.
 */
export const jobTimings = sqliteTable(
  "job_timings",
  {
    orgId: text().notNull(),
    poolId: text()
      .notNull()
      .references(() => agentPools.id, { onDelete: "cascade" }),
    phase: text({ enum: ["plan", "apply"] }).notNull(),
    metric: text({ enum: ["wait", "duration"] }).notNull(),
    /** The bucket's upper bound as the exposition writes it (`0.5`, `60`, `+Inf`). */
    le: text().notNull(),
    count: integer().notNull(),
    sumSeconds: real().notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.poolId, t.phase, t.metric, t.le] }),
    index("job_timings_org_idx").on(t.orgId),
  ],
);

/**
 * Cron schedules of a workspace: each due occurrence queues one run of `operation`
 * (`src/schedules/`). `nextRunAt` is the next occurrence the tick looks for.
 */
export const schedules = sqliteTable(
  "schedules",
  {
    id: text().primaryKey(),
    orgId: text().notNull(),
    workspaceId: text()
      .notNull()
      .references(() => workspaces.id, { onDelete: "cascade" }),
    /** Five fields: minute hour day-of-month month day-of-week. */
    cron: text().notNull(),
    /** IANA time zone the cron is read in. */
    timezone: text().notNull(),
    operation: text({ enum: RUN_OPERATIONS }).notNull(),
    nextRunAt: integer().notNull(),
    /** The run the latest queued occurrence made; the next one waits until it is terminal. */
    lastRunId: text(),
    createdBy: text({ mode: "json" }).$type<Actor>(),
    createdAt: createdAt(),
  },
  (t) => [
    index("schedules_due_idx").on(t.nextRunAt),
    index("schedules_ws_idx").on(t.workspaceId, t.createdAt),
  ],
);

/**
 * One row per (schedule, occurrence time) the tick handled: the primary key is what makes a
 * repeated or late tick queue nothing twice.
 */
export const scheduleOccurrences = sqliteTable(
  "schedule_occurrences",
  {
    scheduleId: text()
      .notNull()
      .references(() => schedules.id, { onDelete: "cascade" }),
    occurrenceAt: integer().notNull(),
    /** `queued`: a run was queued; `skipped`: the previous one was active; `failed`: refused. */
    status: text({ enum: ["queued", "skipped", "failed"] }).notNull(),
    runId: text(),
    reason: text(),
    createdAt: integer().notNull(),
  },
  (t) => [primaryKey({ columns: [t.scheduleId, t.occurrenceAt] })],
);

/** Drift checks: a refresh-only speculative run and its verdict (`src/assessments/`). */
export const assessments = sqliteTable(
  "assessments",
  {
    id: text().primaryKey(),
    orgId: text().notNull(),
    workspaceId: text()
      .notNull()
      .references(() => workspaces.id, { onDelete: "cascade" }),
    runId: text().notNull().unique(),
    /** `pending` until its run ends. */
    status: text({ enum: ["pending", "no_drift", "drifted", "errored"] }).notNull(),
    /** JSON array of resource addresses (Terraform) or URNs (Pulumi) that drifted. */
    driftedResources: text({ mode: "json" }).$type<string[]>(),
    /** Why an errored assessment failed, in words. */
    reason: text(),
    /** The plan `autoRemediate` queued, when it did. */
    remediationRunId: text(),
    createdBy: text({ mode: "json" }).$type<Actor>(),
    createdAt: createdAt(),
    finishedAt: integer(),
  },
  (t) => [index("assessments_ws_idx").on(t.workspaceId, t.createdAt)],
);

/**
 * Variable sets: variables shared by many workspaces, applied to the whole organization
 * (`global`), to projects or to workspaces. `priority` sets win over the workspace's own
 * variables; the order is `src/varsets/precedence.ts`'s.
 */
export const variableSets = sqliteTable(
  "variable_sets",
  {
    id: text().primaryKey(),
    orgId: text()
      .notNull()
      .references(() => organizations.id),
    name: text().notNull(),
    description: text().notNull().default(""),
    global: integer({ mode: "boolean" }).notNull().default(false),
    priority: integer({ mode: "boolean" }).notNull().default(false),
    createdAt: createdAt(),
    updatedAt: integer().notNull(),
  },
  (t) => [uniqueIndex("variable_sets_org_name_idx").on(t.orgId, t.name)],
);

/** A variable set's variables: the same columns and rules as a workspace's ({@link variables}). */
export const variableSetVariables = sqliteTable(
  "variable_set_variables",
  {
    id: text().primaryKey(),
    orgId: text().notNull(),
    varsetId: text()
      .notNull()
      .references(() => variableSets.id, { onDelete: "cascade" }),
    key: text().notNull(),
    category: text({ enum: ["env", "terraform"] }).notNull(),
    isHcl: integer({ mode: "boolean" }).notNull().default(false),
    isSensitive: integer({ mode: "boolean" }).notNull().default(false),
    value: text(),
    ciphertext: text(),
    keyId: text(),
    description: text().notNull().default(""),
    createdAt: createdAt(),
    updatedAt: integer().notNull(),
  },
  (t) => [uniqueIndex("variable_set_variables_set_cat_key_idx").on(t.varsetId, t.category, t.key)],
);

/** The projects a variable set is applied to. */
export const variableSetProjects = sqliteTable(
  "variable_set_projects",
  {
    varsetId: text()
      .notNull()
      .references(() => variableSets.id, { onDelete: "cascade" }),
    projectId: text()
      .notNull()
      .references(() => projects.id, { onDelete: "cascade" }),
    orgId: text().notNull(),
    createdAt: createdAt(),
  },
  (t) => [
    primaryKey({ columns: [t.varsetId, t.projectId] }),
    index("variable_set_projects_project_idx").on(t.projectId),
  ],
);

/** The workspaces a variable set is applied to. */
export const variableSetWorkspaces = sqliteTable(
  "variable_set_workspaces",
  {
    varsetId: text()
      .notNull()
      .references(() => variableSets.id, { onDelete: "cascade" }),
    workspaceId: text()
      .notNull()
      .references(() => workspaces.id, { onDelete: "cascade" }),
    orgId: text().notNull(),
    createdAt: createdAt(),
  },
  (t) => [
    primaryKey({ columns: [t.varsetId, t.workspaceId] }),
    index("variable_set_workspaces_workspace_idx").on(t.workspaceId),
  ],
);

/**
 * The run events outbox (docs/notifications.md). A run's status changes are recorded here by the
 * SQLite triggers `run_events_on_insert`/`run_events_on_status` (migration 0014), in the same
 * statement as the change itself, so no change is ever missed or recorded without happening;
 * other events (assessments) are written by `emitRunEvent`. The id names the change
 * (`<run id>:<status>`), so recording it twice is one row. `type` is null for a status change
 * whose lifecycle event the dispatcher derives from the run model (`src/events/model.ts`).
 * `sentAt` is set once the event is on the `RUN_EVENTS` queue; the cron sends again what stayed
 * unsent. Beware: drizzle rebuilds a table it cannot ALTER (`__new_runs`), which drops its
 * triggers; a migration that rebuilds `runs` must create them again (a test checks they exist).
 */
export const runEvents = sqliteTable(
  "run_events",
  {
    id: text().primaryKey(),
    type: text({ enum: EVENT_TYPES }),
    orgId: text().notNull(),
    workspaceId: text().notNull(),
    runId: text()
      .notNull()
      .references(() => runs.id, { onDelete: "cascade" }),
    /** The run status the event reports. */
    status: text({ enum: RUN_STATUSES }).notNull(),
    /** When it happened. */
    occurredAt: integer().notNull(),
    /** What the event adds beyond the run (an assessment's result, say). */
    data: text({ mode: "json" }).$type<Record<string, unknown>>(),
    sentAt: integer(),
  },
  (t) => [
    index("run_events_unsent_idx").on(t.occurredAt).where(sql`${t.sentAt} IS NULL`),
    index("run_events_run_idx").on(t.runId),
  ],
);

/**
 * Notification configurations of a workspace (Terraform Cloud's): where its run events go. The
 * signing secret (`whsec_…`) is kept only sealed under `ENCRYPTION_KEY`.
 */
export const notificationConfigurations = sqliteTable(
  "notification_configurations",
  {
    id: text().primaryKey(),
    orgId: text()
      .notNull()
      .references(() => organizations.id),
    workspaceId: text()
      .notNull()
      .references(() => workspaces.id, { onDelete: "cascade" }),
    name: text().notNull(),
    destinationType: text({ enum: DESTINATION_TYPES }).notNull(),
    url: text().notNull(),
    enabled: integer({ mode: "boolean" }).notNull().default(true),
    /** JSON array of trigger names (`run:created`, …). */
    triggers: text({ mode: "json" }).$type<NotificationTrigger[]>().notNull(),
    secretCiphertext: text().notNull(),
    createdBy: text({ mode: "json" }).$type<Actor>(),
    createdAt: createdAt(),
    updatedAt: integer().notNull(),
  },
  (t) => [index("notification_configurations_ws_idx").on(t.workspaceId)],
);

/**
 * One notification to one destination: the body exactly as sent (every attempt sends the same
 * bytes under the same `webhook-id`, the delivery's id), and how its attempts went. A pending
 * delivery is itself an outbox row: the cron attempts it again once `nextAttemptAt` is due.
 */
export const notificationDeliveries = sqliteTable(
  "notification_deliveries",
  {
    id: text().primaryKey(),
    orgId: text().notNull(),
    notificationId: text()
      .notNull()
      .references(() => notificationConfigurations.id, { onDelete: "cascade" }),
    /** The run event it reports; null for a verification. */
    eventId: text(),
    trigger: text().notNull(),
    status: text({ enum: ["pending", "delivered", "failed"] }).notNull(),
    body: text().notNull(),
    attempts: integer().notNull().default(0),
    /** The destination's last HTTP status; null before an answer (or on a network error). */
    responseStatus: integer(),
    /** Why the last attempt failed, in words; null once delivered. */
    error: text(),
    createdAt: integer().notNull(),
    /** When a pending delivery is due (or its attempt's claim runs out). */
    nextAttemptAt: integer(),
    lastAttemptAt: integer(),
    completedAt: integer(),
  },
  (t) => [
    index("notification_deliveries_nc_idx").on(t.notificationId, t.createdAt),
    index("notification_deliveries_due_idx")
      .on(t.nextAttemptAt)
      .where(sql`${t.status} = 'pending'`),
  ],
);

/**
 * Run triggers: an applied run of the source workspace queues a plan on the target workspace
 * (`workspaceId`).
 */
export const runTriggers = sqliteTable(
  "run_triggers",
  {
    id: text().primaryKey(),
    orgId: text().notNull(),
    workspaceId: text()
      .notNull()
      .references(() => workspaces.id, { onDelete: "cascade" }),
    sourceWorkspaceId: text()
      .notNull()
      .references(() => workspaces.id, { onDelete: "cascade" }),
    createdBy: text({ mode: "json" }).$type<Actor>(),
    createdAt: createdAt(),
  },
  (t) => [
    uniqueIndex("run_triggers_pair_idx").on(t.workspaceId, t.sourceWorkspaceId),
    index("run_triggers_source_idx").on(t.sourceWorkspaceId),
  ],
);

/**
 * `terraform login`'s authorization codes (login.v1, docs/terraform-cli.md): made when a signed-in
 * person consents, kept only as their SHA-256, bound to the PKCE challenge (S256), the loopback
 * redirect URI and the person; redeemed once, within minutes, for a personal token.
 */
export const terraformLoginCodes = sqliteTable(
  "terraform_login_codes",
  {
    id: text().primaryKey(),
    codeHash: text().notNull().unique(),
    orgId: text()
      .notNull()
      .references(() => organizations.id),
    userId: text()
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    codeChallenge: text().notNull(),
    redirectUri: text().notNull(),
    createdAt: createdAt(),
    expiresAt: integer().notNull(),
    consumedAt: integer(),
  },
  (t) => [index("terraform_login_codes_expires_idx").on(t.expiresAt)],
);

/** Workspace tags: one row per tag name of an organization (`tfe` and the `cloud` block's tags). */
export const workspaceTags = sqliteTable(
  "workspace_tags",
  {
    id: text().primaryKey(),
    orgId: text()
      .notNull()
      .references(() => organizations.id),
    name: text().notNull(),
    createdAt: createdAt(),
  },
  (t) => [uniqueIndex("workspace_tags_org_name_idx").on(t.orgId, t.name)],
);

/** Which workspaces carry which tags. */
export const workspaceTagLinks = sqliteTable(
  "workspace_tag_links",
  {
    workspaceId: text()
      .notNull()
      .references(() => workspaces.id, { onDelete: "cascade" }),
    tagId: text()
      .notNull()
      .references(() => workspaceTags.id, { onDelete: "cascade" }),
    orgId: text().notNull(),
    createdAt: createdAt(),
  },
  (t) => [
    primaryKey({ columns: [t.workspaceId, t.tagId] }),
    index("workspace_tag_links_tag_idx").on(t.tagId),
  ],
);
