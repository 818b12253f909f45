/**
 * Workspaces, pure: field rules (name, engine version, working directory, VCS source), how a
 * create or an update resolves into a complete, consistent set of settings, and who may release
 * a user lock. No I/O here.
 */
import { z } from "@hono/zod-openapi";
import { ENGINES, type Engine, parseVersionConstraint } from "@outpost/protocol";
import { validRange } from "semver";

export { ENGINES, type Engine };
export const EXECUTION_MODES = ["agent", "local"] as const;
export type ExecutionMode = (typeof EXECUTION_MODES)[number];
export const FORK_PULL_REQUEST_POLICIES = ["refuse", "plan_without_secrets"] as const;
export type ForkPullRequestPolicy = (typeof FORK_PULL_REQUEST_POLICIES)[number];
/** Who may read a workspace's outputs through `terraform_remote_state`. */
export const REMOTE_STATE_SHARING = ["none", "organization", "workspaces"] as const;
export type RemoteStateSharing = (typeof REMOTE_STATE_SHARING)[number];
/** Most workspaces one workspace may name as the consumers of its outputs. */
export const MAX_REMOTE_STATE_CONSUMERS = 100;

export const WORKSPACE_ID_PATTERN = /^ws_[a-z2-7]{26}$/;
// Names may not start with "ws_", so a path segment is unambiguously an id or a name.
const NAME_PATTERN = /^(?!ws_)[A-Za-z0-9][A-Za-z0-9_-]{0,89}$/;
// Semantic Versioning 2.0.0 (semver.org), e.g. 1.9.5, 1.10.0-beta1.
const SEMVER_PATTERN =
  /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-((?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*)(?:\.(?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*))*))?(?:\+([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?$/;
// Control characters (C0, DEL, C1) have no business in paths or URLs handed to git or a shell.
const CONTROL_CHARS = /\p{Cc}/u;

export const WorkspaceName = z
  .string()
  .regex(
    NAME_PATTERN,
    "letters, digits, '-' and '_', starting with a letter or digit, at most 90, not starting with ws_",
  )
  .openapi({ example: "network-prod" });

/** A path segment naming a workspace: its `ws_…` id or its name. */
export const WorkspaceRef = z
  .string()
  .refine((v) => WORKSPACE_ID_PATTERN.test(v) || NAME_PATTERN.test(v), {
    message: "must be a ws_ id or a workspace name",
  })
  .openapi({
    param: { name: "workspaceId", in: "path" },
    description: "The workspace's id (ws_…) or its name",
    example: "network-prod",
  });

/**
 * An engine version as a request may name it, checked per engine by {@link checkSettings}:
 * `latest` (the default), an exact version, or a constraint: Terraform-style for Terraform and
 * OpenTofu (`~> 1.9`, `>= 1.6, < 2.0`), a semver range for Pulumi (`^3.150`). The agent resolves
 * it against its release mirror's index and each job records the exact version it ran.
 */
export const EngineVersion = z
  .string()
  .trim()
  .min(1, "must not be empty: use latest, an exact version such as 1.9.5, or ~> 1.9")
  .max(64)
  .regex(
    /^[0-9A-Za-z.^~<>=|*+, !-]+$/,
    "must be latest, a version such as 1.9.5, or a constraint such as ~> 1.9",
  )
  .openapi({
    example: "~> 1.9",
    description:
      "latest (the default), an exact version such as 1.9.5, or a constraint: ~> 1.9 or >= 1.6, < 2.0 for Terraform and OpenTofu, a semver range such as ^3.150 for Pulumi. The agent resolves it against its release mirror; each job records the exact version it ran",
  });

/** What a workspace created without `engineVersion` runs: the newest release the mirror offers. */
export const DEFAULT_ENGINE_VERSION = "latest";

// Pulumi's own rule (sdk/go/common/tokens/stack_name.go), with a first character that cannot
// read as a flag; a stack may be qualified as org/stack or org/project/stack.
const STACK_SEGMENT = "[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}";
const STACK_NAME_PATTERN = new RegExp(`^(?:${STACK_SEGMENT}/){0,2}${STACK_SEGMENT}$`);

/** A Pulumi stack name: `dev`, or qualified `org/dev`, `org/project/dev`. */
export const StackName = z
  .string()
  .max(300)
  .regex(
    STACK_NAME_PATTERN,
    "a stack name may only contain alphanumerics, hyphens, underscores or periods (at most 100), optionally qualified as org/stack or org/project/stack",
  )
  .openapi({ example: "dev" });

/**
 * Why `version` is not usable for `engine`, or null, as a sentence. Terraform and OpenTofu take
 * `latest`, an exact version or a Terraform-style constraint (`~> 1.9`, `>= 1.6, < 2.0`); Pulumi
 * a semver range (`^3.150`, `>=3.100 <4`) or `latest`. The agent resolves either against what
 * it can install.
 */
export function engineVersionProblem(engine: Engine, version: string): string | null {
  if (SEMVER_PATTERN.test(version)) {
    return null;
  }
  if (engine !== "pulumi") {
    const parsed = parseVersionConstraint(version);
    return parsed.ok
      ? null
      : `engineVersion ${parsed.reason}; use latest, an exact version such as 1.9.5, or a constraint such as ~> 1.9 or >= 1.6, < 2.0`;
  }
  return version === "latest" || validRange(version) !== null
    ? null
    : "engineVersion must be an exact version (3.150.0), a semver range (^3.150) or latest";
}

/** Splits into segments and refuses anything that could leave the tree or confuse a shell. */
function relativePathProblem(path: string): string | null {
  if (CONTROL_CHARS.test(path) || path.includes("\\")) {
    return "may not contain control characters or backslashes";
  }
  if (path.startsWith("/")) {
    return "must be relative (no leading /)";
  }
  if (path.startsWith("-")) {
    return "may not start with '-'";
  }
  const segments = path.replace(/\/$/, "").split("/");
  if (segments.some((s) => s === "..")) {
    return "may not contain '..'";
  }
  if (segments.some((s) => s === "" || s === ".")) {
    return "may not contain empty or '.' segments";
  }
  return null;
}

export const WorkingDirectory = z
  .string()
  .max(500)
  .superRefine((value, ctx) => {
    const problem = value === "" ? null : relativePathProblem(value);
    if (problem) {
      ctx.addIssue({ code: "custom", message: `working directory ${problem}` });
    }
  })
  .transform((value) => value.replace(/\/$/, ""))
  .openapi({ description: "Relative to the configuration root; empty for the root" });

const SCP_LIKE = /^[A-Za-z0-9._-]+@[A-Za-z0-9.-]+:(?!\/\/)[A-Za-z0-9._~/+-]+$/;

/** Why a repository URL is refused, or null when it is an https or ssh URL we can hand to git. */
export function repoUrlProblem(url: string): string | null {
  if (url.startsWith("-") || CONTROL_CHARS.test(url) || /\s/.test(url)) {
    return "may not start with '-' or contain whitespace or control characters";
  }
  if (SCP_LIKE.test(url)) {
    return null;
  }
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return "must be an https:// or ssh:// URL, or user@host:path";
  }
  if (parsed.protocol !== "https:" && parsed.protocol !== "ssh:") {
    return "must use https or ssh";
  }
  if (!parsed.hostname || parsed.pathname.length <= 1) {
    return "must name a host and a repository path";
  }
  // Credentials belong on the agent host, never in D1.
  if (parsed.password || (parsed.protocol === "https:" && parsed.username)) {
    return "may not embed credentials; configure them on the agent host";
  }
  if (parsed.search || parsed.hash) {
    return "may not have a query or fragment";
  }
  return null;
}

export const RepoUrl = z
  .string()
  .max(1000)
  .superRefine((value, ctx) => {
    const problem = repoUrlProblem(value);
    if (problem) {
      ctx.addIssue({ code: "custom", message: `repository URL ${problem}` });
    }
  })
  .openapi({ example: "https://git.example.internal/platform/network.git" });

// A simplification of git-check-ref-format: no leading '-', no '..', '//', '@{', or '.lock' end.
export const Branch = z
  .string()
  .min(1)
  .max(255)
  .regex(/^(?!-)(?!.*\.\.)(?!.*\/\/)(?!.*@\{)(?!.*\.lock$)(?!.*\/$)[A-Za-z0-9._/@+-]+$/, {
    message: "must be a valid git branch name",
  })
  .openapi({ example: "main" });

export const TriggerPath = z
  .string()
  .min(1)
  .max(500)
  .superRefine((value, ctx) => {
    const problem = relativePathProblem(value);
    if (problem) {
      ctx.addIssue({ code: "custom", message: `trigger path ${problem}` });
    }
  });

/** Every setting of a workspace, as stored. */
export type WorkspaceSettings = {
  name: string;
  description: string;
  executionMode: ExecutionMode;
  poolId: string | null;
  engine: Engine;
  engineVersion: string;
  /** Pulumi workspaces only (required there); null for the other engines. */
  stackName: string | null;
  workingDirectory: string;
  autoApply: boolean;
  vcsRepoUrl: string | null;
  vcsBranch: string | null;
  vcsTriggerPaths: string[] | null;
  forkPullRequests: ForkPullRequestPolicy;
  remoteStateSharing: RemoteStateSharing;
  /** Workspace ids; null or empty unless `remoteStateSharing` is `workspaces`. */
  remoteStateConsumerIds: string[] | null;
  /** Jobs (not a fork's) receive a workload identity token signed by the coordinator. */
  workloadIdentity: boolean;
  /** That token's `aud`; null means the issuer URL. */
  workloadIdentityAudience: string | null;
  /** How long one such token lives (the agent renews it while the job runs). */
  workloadIdentityTokenLifetimeSeconds: number;
};

/** What a create or update request may set; absent means "default" or "unchanged". */
export type SettingsInput = Partial<WorkspaceSettings>;

export type SettingsProblem = { field: keyof WorkspaceSettings; message: string };
export type SettingsResult =
  | { ok: true; value: WorkspaceSettings }
  | { ok: false; problem: SettingsProblem };

const problem = (field: keyof WorkspaceSettings, message: string): SettingsResult => ({
  ok: false,
  problem: { field, message },
});

const DEFAULTS: Omit<WorkspaceSettings, "name" | "engineVersion" | "executionMode"> = {
  description: "",
  poolId: null,
  engine: "terraform",
  stackName: null,
  workingDirectory: "",
  autoApply: false,
  vcsRepoUrl: null,
  vcsBranch: null,
  vcsTriggerPaths: null,
  forkPullRequests: "refuse",
  remoteStateSharing: "none",
  remoteStateConsumerIds: null,
  workloadIdentity: false,
  workloadIdentityAudience: null,
  workloadIdentityTokenLifetimeSeconds: 900,
};

/**
 * The settings of a new workspace. `executionMode` defaults to `agent` when a pool is given and
 * to `local` otherwise; `engineVersion` to `latest` (a local workspace never runs an engine on an
 * agent, so it needs none). Fails with the first rule the combination breaks.
 */
export function settingsForCreate(input: SettingsInput & { name: string }): SettingsResult {
  const executionMode = input.executionMode ?? (input.poolId ? "agent" : "local");
  return checkSettings({
    ...DEFAULTS,
    ...input,
    engineVersion: input.engineVersion ?? DEFAULT_ENGINE_VERSION,
    executionMode,
  });
}

/**
 * The settings after applying `patch` to `current`. Switching to `local` without naming a pool
 * drops the pool; clearing the repository URL drops its branch and trigger paths.
 */
export function settingsForUpdate(
  current: WorkspaceSettings,
  patch: SettingsInput,
): SettingsResult {
  const next: WorkspaceSettings = { ...current, ...patch };
  if (patch.executionMode === "local" && patch.poolId === undefined) {
    next.poolId = null;
  }
  if (patch.engine !== undefined && patch.engine !== "pulumi" && patch.stackName === undefined) {
    next.stackName = null;
  }
  if (patch.vcsRepoUrl === null) {
    next.vcsBranch = patch.vcsBranch ?? null;
    next.vcsTriggerPaths = patch.vcsTriggerPaths ?? null;
  }
  if (
    patch.remoteStateSharing !== undefined &&
    patch.remoteStateSharing !== "workspaces" &&
    patch.remoteStateConsumerIds === undefined
  ) {
    next.remoteStateConsumerIds = null;
  }
  return checkSettings(next);
}

function checkSettings(s: WorkspaceSettings): SettingsResult {
  if (s.executionMode === "agent" && !s.poolId) {
    return problem("poolId", "execution mode agent needs a poolId");
  }
  if (s.executionMode === "local" && s.poolId) {
    return problem("poolId", "a local workspace runs on no pool; omit poolId");
  }
  const versionProblem = engineVersionProblem(s.engine, s.engineVersion);
  if (versionProblem !== null) {
    return problem("engineVersion", versionProblem);
  }
  if (s.engine === "pulumi" && s.stackName === null) {
    return problem("stackName", 'engine "pulumi" needs a stackName');
  }
  if (s.engine !== "pulumi" && s.stackName !== null) {
    return problem("stackName", 'stackName is for engine "pulumi" only');
  }
  if (
    s.engine === "tofu" &&
    SEMVER_PATTERN.test(s.engineVersion) &&
    compareCore(s.engineVersion, [1, 6, 0]) < 0
  ) {
    return problem("engineVersion", "OpenTofu releases start at 1.6.0");
  }
  if (!s.vcsRepoUrl && (s.vcsBranch || (s.vcsTriggerPaths && s.vcsTriggerPaths.length > 0))) {
    return problem("vcsRepoUrl", "vcsBranch and vcsTriggerPaths need vcsRepoUrl");
  }
  const consumers = s.remoteStateConsumerIds ?? [];
  if (s.remoteStateSharing !== "workspaces" && consumers.length > 0) {
    return problem(
      "remoteStateConsumerIds",
      'remoteStateConsumerIds needs remoteStateSharing "workspaces"',
    );
  }
  // Stored sorted and without repeats, so an equal list is an unchanged setting.
  const unique = [...new Set(consumers)].sort();
  return {
    ok: true,
    value: { ...s, remoteStateConsumerIds: unique.length > 0 ? unique : null },
  };
}

/**
 * Why a workspace with state may not move from `before` to `after`, or null: a checkpoint is
 * Pulumi's own format and a Terraform state is not, and a Pulumi checkpoint belongs to its stack.
 * Terraform and OpenTofu share a state format, so moving between them stays allowed.
 */
export function engineSwitchProblem(
  before: Pick<WorkspaceSettings, "engine" | "stackName">,
  after: Pick<WorkspaceSettings, "engine" | "stackName">,
): string | null {
  const isPulumi = (engine: Engine) => engine === "pulumi";
  if (isPulumi(before.engine) !== isPulumi(after.engine)) {
    return `the workspace has ${before.engine} state, which ${after.engine} cannot read; create a new workspace, or delete the state first`;
  }
  if (isPulumi(after.engine) && before.stackName !== after.stackName) {
    return `the workspace holds the checkpoint of stack ${before.stackName}; a new stackName needs a new workspace, or the state deleted first`;
  }
  return null;
}

function compareCore(version: string, other: [number, number, number]): number {
  const parts = version.split(/[-+]/)[0]?.split(".").map(Number) ?? [];
  for (let i = 0; i < 3; i++) {
    const diff = (parts[i] ?? 0) - (other[i] ?? 0);
    if (diff !== 0) {
      return diff;
    }
  }
  return 0;
}

/**
 * Where R2 objects of a workspace live (configuration versions, state versions, run artifacts):
 * deleting the workspace deletes everything under this prefix.
 */
export function workspaceBlobPrefix(orgId: string, workspaceId: string): string {
  return `orgs/${orgId}/workspaces/${workspaceId}/`;
}

/** A workspace's lock holder: a user's token (`tok_…`) or a run (`run_…`). */
export function lockHolderKind(lockedBy: string): "user" | "run" {
  return lockedBy.startsWith("run_") ? "run" : "user";
}

/**
 * Whether `holderId` may release a lock held by `lockedBy`: the holder always may; an admin may
 * only when forcing, so an admin never breaks someone else's lock by accident.
 */
export function unlockDecision(
  lockedBy: string,
  caller: { holderId: string; isAdmin: boolean; force: boolean },
): "release" | "force_release" | "needs_force" | "forbidden" {
  if (lockedBy === caller.holderId) {
    return "release";
  }
  if (!caller.isAdmin) {
    return "forbidden";
  }
  return caller.force ? "force_release" : "needs_force";
}
