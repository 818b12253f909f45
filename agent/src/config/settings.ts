/**
 * Every setting of `outpost-agent` in one table: its flag, its environment variable, the
 * Terraform Cloud agent's name for it, its config file key and its default. The flag parser,
 * `--help`, the loader and the operator's guide all come from this table, so a setting cannot
 * exist in one place and be missing in another.
 */

/** How a setting's raw text is read. */
export type SettingKind = "string" | "boolean" | "list" | "switch";

export type SettingSpec = {
  /** The long flag without dashes; also the key of the parsed flag values. */
  flag: string;
  /** Placeholder in `--help` for settings that take a value. */
  arg?: string;
  kind: SettingKind;
  /** The `OUTPOST_*` variable. */
  env: string;
  /** Terraform Cloud agent variables accepted as aliases (the `OUTPOST_*` one wins). */
  tfcEnv?: readonly string[];
  /** The config file key (camelCase; snake_case is accepted too). */
  fileKey?: string;
  /** As `--help` and the guide show it. */
  defaultText: string;
  description: string;
};

export const SETTINGS = [
  {
    flag: "address",
    arg: "URL",
    kind: "string",
    env: "OUTPOST_ADDRESS",
    tfcEnv: ["TFC_ADDRESS"],
    fileKey: "address",
    defaultText: "required",
    description: "coordinator base URL, e.g. https://outpost.example.com (no path)",
  },
  {
    flag: "insecure-http",
    kind: "boolean",
    env: "OUTPOST_INSECURE_HTTP",
    fileKey: "insecureHttp",
    defaultText: "off",
    description:
      "allow a plain-http address that is not loopback (the token and jobs cross the network unencrypted)",
  },
  {
    flag: "token-file",
    arg: "FILE",
    kind: "string",
    env: "OUTPOST_TOKEN_FILE",
    fileKey: "tokenFile",
    defaultText: "none",
    description: "read the agent token (op_agent_…) from FILE instead of OUTPOST_TOKEN",
  },
  {
    flag: "oidc-token-file",
    arg: "FILE",
    kind: "string",
    env: "OUTPOST_OIDC_TOKEN_FILE",
    fileKey: "oidcTokenFile",
    defaultText: "none",
    description:
      "log in with the OIDC token (JWT) in FILE instead of an agent token; re-read at each renewal",
  },
  {
    flag: "pool-id",
    arg: "POOL",
    kind: "string",
    env: "OUTPOST_POOL_ID",
    fileKey: "poolId",
    defaultText: "required with --oidc-token-file",
    description: "the pool (pool_…) whose OIDC trust accepts the token",
  },
  {
    flag: "token-expiration",
    arg: "DURATION",
    kind: "string",
    env: "OUTPOST_TOKEN_EXPIRATION",
    fileKey: "tokenExpiration",
    defaultText: "1h",
    description:
      "lifetime asked for each agent token from an OIDC exchange: seconds or 90m, 2h (pool caps it)",
  },
  {
    flag: "name",
    arg: "NAME",
    kind: "string",
    env: "OUTPOST_NAME",
    tfcEnv: ["TFC_AGENT_NAME"],
    fileKey: "name",
    defaultText: "the host name",
    description: "name shown in the pool listing",
  },
  {
    flag: "single",
    kind: "boolean",
    env: "OUTPOST_SINGLE",
    tfcEnv: ["TFC_AGENT_SINGLE"],
    fileKey: "single",
    defaultText: "off",
    description: "take one job, then exit (pair with a restart policy for a clean host per job)",
  },
  {
    flag: "concurrency",
    arg: "N",
    kind: "string",
    env: "OUTPOST_CONCURRENCY",
    fileKey: "concurrency",
    defaultText: "1",
    description: "jobs run at once, 1-64",
  },
  {
    flag: "accept",
    arg: "PHASES",
    kind: "list",
    env: "OUTPOST_ACCEPT",
    fileKey: "accept",
    defaultText: "plan,apply",
    description: "job phases this agent takes",
  },
  {
    flag: "log-level",
    arg: "LEVEL",
    kind: "string",
    env: "OUTPOST_LOG_LEVEL",
    tfcEnv: ["TFC_AGENT_LOG_LEVEL"],
    fileKey: "logLevel",
    defaultText: "info",
    description: "trace, debug, info, warn, error or fatal",
  },
  {
    flag: "log-json",
    kind: "boolean",
    env: "OUTPOST_LOG_JSON",
    tfcEnv: ["TFC_AGENT_LOG_JSON"],
    fileKey: "logJson",
    defaultText: "off",
    description: "log JSON lines instead of text",
  },
  {
    flag: "data-dir",
    arg: "DIR",
    kind: "string",
    env: "OUTPOST_DATA_DIR",
    tfcEnv: ["TFC_AGENT_DATA_DIR"],
    fileKey: "dataDir",
    defaultText: "$XDG_DATA_HOME/outpost-agent",
    description:
      "engine cache, job directories and the agent id (a restart with the same one ends the old process's jobs at once)",
  },
  {
    flag: "hooks-dir",
    arg: "DIR",
    kind: "string",
    env: "OUTPOST_HOOKS_DIR",
    fileKey: "hooksDir",
    defaultText: "{data-dir}/hooks",
    description:
      "hook executables (pre-plan, post-plan, pre-apply, post-apply; terraform-pre-plan … as Terraform Cloud agent names them)",
  },
  {
    flag: "hook-timeout",
    arg: "SECONDS",
    kind: "string",
    env: "OUTPOST_HOOK_TIMEOUT",
    fileKey: "hookTimeoutSeconds",
    defaultText: "60",
    description: "longest a hook may run",
  },
  {
    flag: "shutdown-grace",
    arg: "SECONDS",
    kind: "string",
    env: "OUTPOST_SHUTDOWN_GRACE",
    fileKey: "shutdownGraceSeconds",
    defaultText: "300",
    description: "after SIGTERM/SIGINT, how long running jobs may finish before a cancel",
  },
  {
    flag: "cancel-grace",
    arg: "SECONDS",
    kind: "string",
    env: "OUTPOST_CANCEL_GRACE",
    fileKey: "cancelGraceSeconds",
    defaultText: "30",
    description: "between the first and the second SIGINT of a job cancel",
  },
  {
    flag: "isolation",
    arg: "MODE",
    kind: "string",
    env: "OUTPOST_ISOLATION",
    fileKey: "isolation",
    defaultText: "auto",
    description:
      "job sandboxes: bwrap (bubblewrap, Linux; start fails without it), none, or auto (bwrap when it works)",
  },
  {
    flag: "orphan-grace",
    arg: "SECONDS",
    kind: "string",
    env: "OUTPOST_ORPHAN_GRACE",
    fileKey: "orphanGraceSeconds",
    defaultText: "30",
    description: "if the agent dies, between SIGINT and SIGKILL of its jobs' processes",
  },
  {
    flag: "env-forward",
    arg: "NAME",
    kind: "list",
    env: "OUTPOST_ENV_FORWARD",
    fileKey: "envForwardAllowlist",
    defaultText: "none",
    description: "host variables (or PREFIX*) forwarded into jobs; repeatable, comma lists",
  },
  {
    flag: "release-mirror",
    arg: "URL",
    kind: "string",
    env: "OUTPOST_RELEASE_MIRROR",
    fileKey: "releaseMirror",
    defaultText: "official sites",
    description: "engine mirror laid out as URL/{engine}/{version}/{file}",
  },
  {
    flag: "engine-keyring",
    arg: "FILE",
    kind: "string",
    env: "OUTPOST_ENGINE_KEYRING",
    fileKey: "engineKeyring",
    defaultText: "none",
    description:
      "OpenPGP public keys (armored or binary) also trusted to sign engine checksums, for a mirror that re-signs",
  },
  {
    flag: "ca-cert",
    arg: "FILE",
    kind: "string",
    env: "OUTPOST_CA_CERT",
    fileKey: "caCert",
    defaultText: "none",
    description: "PEM CA certificates trusted for the coordinator, the mirror, engines and git",
  },
  {
    flag: "forward-network-env",
    arg: "on/off",
    kind: "switch",
    env: "OUTPOST_FORWARD_NETWORK_ENV",
    fileKey: "forwardNetworkEnv",
    defaultText: "on",
    description: "pass the proxy variables and CA certificates on to engines, hooks and git",
  },
  {
    flag: "release-key",
    arg: "KEY",
    kind: "list",
    env: "OUTPOST_RELEASE_KEY",
    fileKey: "releaseKey",
    defaultText: "the build's key",
    description:
      "also trust agent releases signed by KEY (ed25519:…) when updating; repeatable, comma lists",
  },
  {
    flag: "auto-update",
    arg: "on/off",
    kind: "switch",
    env: "OUTPOST_AUTO_UPDATE",
    tfcEnv: ["TFC_AGENT_AUTO_UPDATE"],
    fileKey: "autoUpdate",
    defaultText: "on",
    description: "between jobs, update to the agent build the coordinator ships",
  },
  {
    flag: "allow-file-repos",
    kind: "boolean",
    env: "OUTPOST_ALLOW_FILE_REPOS",
    fileKey: "allowFileRepos",
    defaultText: "off",
    description: "development only: VCS jobs may clone file:// repositories",
  },
  {
    flag: "metrics-address",
    arg: "HOST:PORT",
    kind: "string",
    env: "OUTPOST_METRICS_ADDRESS",
    fileKey: "metricsAddress",
    defaultText: "off",
    description:
      "serve /metrics (Prometheus), /healthz and /readyz on HOST:PORT, e.g. 0.0.0.0:9464 (no auth: keep it private)",
  },
  {
    flag: "github-token-file",
    arg: "FILE",
    kind: "string",
    env: "OUTPOST_GITHUB_TOKEN_FILE",
    fileKey: "githubTokenFile",
    defaultText: "none",
    description:
      "read the GitHub token that posts VCS feedback (hooks with feedback: agent) from FILE instead of OUTPOST_GITHUB_TOKEN; used only for --github-host",
  },
  {
    flag: "github-host",
    arg: "HOST",
    kind: "string",
    env: "OUTPOST_GITHUB_HOST",
    fileKey: "githubHost",
    defaultText: "api.github.com",
    description: "the GitHub API host the GitHub token is for (GitHub Enterprise: its host name)",
  },
  {
    flag: "gitlab-token-file",
    arg: "FILE",
    kind: "string",
    env: "OUTPOST_GITLAB_TOKEN_FILE",
    fileKey: "gitlabTokenFile",
    defaultText: "none",
    description:
      "read the GitLab token that posts VCS feedback from FILE instead of OUTPOST_GITLAB_TOKEN; used only for --gitlab-host",
  },
  {
    flag: "gitlab-host",
    arg: "HOST",
    kind: "string",
    env: "OUTPOST_GITLAB_HOST",
    fileKey: "gitlabHost",
    defaultText: "gitlab.com",
    description: "the GitLab host the GitLab token is for",
  },
  {
    flag: "config",
    arg: "FILE",
    kind: "string",
    env: "OUTPOST_CONFIG",
    defaultText: "none",
    description: "YAML or JSON file with any setting above (flags and variables win)",
  },
] as const satisfies readonly SettingSpec[];

export type SettingFlag = (typeof SETTINGS)[number]["flag"];

/**
 * The agent token comes from the environment only (never a flag: it would show in `ps`), or from
 * `--token-file`, or is obtained by exchanging the OIDC token of `--oidc-token-file`.
 */
export const TOKEN_ENV = "OUTPOST_TOKEN";
export const TOKEN_TFC_ENV = "TFC_AGENT_TOKEN";

/** VCS tokens for agent-mode feedback: from the environment only, or from their token files. */
export const GITHUB_TOKEN_ENV = "OUTPOST_GITHUB_TOKEN";
export const GITLAB_TOKEN_ENV = "OUTPOST_GITLAB_TOKEN";
