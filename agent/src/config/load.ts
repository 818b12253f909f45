import { homedir, hostname } from "node:os";
import path from "node:path";
import { ReleaseKey } from "@outpost/protocol";
import { z } from "zod";
import { UserError } from "../errors.ts";
import { ISOLATION_SETTINGS, type IsolationSetting } from "../exec/sandbox.ts";
import { type ProviderTokenSetting, readVcsTokens, type VcsToken } from "../feedback/tokens.ts";
import { plainHttpRefusal } from "../net/address.ts";
import { toBaseAddress } from "../net/base-address.ts";
import { readCaFile } from "../net/ca.ts";
import { parseDurationSeconds } from "./duration.ts";
import { type FileValue, readConfigFile, type VcsTokensValue } from "./file.ts";
import { parseFlags } from "./flags.ts";
import { type ListenAddress, parseListenAddress } from "./listen-address.ts";
import {
  GITHUB_TOKEN_ENV,
  GITLAB_TOKEN_ENV,
  SETTINGS,
  type SettingFlag,
  type SettingSpec,
  TOKEN_ENV,
  TOKEN_TFC_ENV,
} from "./settings.ts";
import { readToken } from "./token.ts";

const LOG_LEVELS = ["trace", "debug", "info", "warn", "error", "fatal"] as const;
const PHASES = ["plan", "apply"] as const;
/** A host variable name, optionally ending in `*` to forward every variable with that prefix. */
const ENV_PATTERN = /^[A-Za-z_][A-Za-z0-9_]*\*?$/;

/** Everything the agent process is configured with, parsed and validated once at start. */
export type AgentConfig = {
  /**
   * Coordinator origin without a trailing slash, e.g. `https://outpost.example.com`; plain http
   * only to a loopback host, or with `insecureHttp`.
   */
  address: string;
  /** `--insecure-http`: a plain-http address that is not loopback was allowed on purpose. */
  insecureHttp: boolean;
  /** The agent-pool token (`op_agent_…`); never logged. Null when the agent logs in with OIDC. */
  token: string | null;
  /** Where the token came from: a file is read again after an update restarts the agent. */
  tokenFile: string | null;
  /**
   * Log in with OIDC instead: the JWT in `tokenFile` (read again before every exchange) is
   * exchanged for a short-lived agent token of `poolId`, renewed before it expires.
   */
  oidc: { tokenFile: string; poolId: string; tokenExpirationSeconds: number } | null;
  /** Display name shown in the pool listing (the host name unless set). */
  name: string;
  single: boolean;
  logLevel: (typeof LOG_LEVELS)[number];
  logJson: boolean;
  concurrency: number;
  accept: Array<(typeof PHASES)[number]>;
  /** Absolute; holds the engine cache (`engines/`) and job directories (`jobs/`). */
  dataDir: string;
  /** Absolute; a missing directory simply means no hooks. */
  hooksDir: string;
  hookTimeoutMs: number;
  /** After the first SIGTERM/SIGINT, how long running jobs may still take before they are canceled. */
  shutdownGraceMs: number;
  /** Between the first and the second SIGINT of a graceful job cancel. */
  cancelGraceMs: number;
  /** Job sandboxes: `auto` is decided at start (bubblewrap when it works, else none). */
  isolation: IsolationSetting;
  /** If the agent dies, between the SIGINT and the SIGKILL of its jobs' processes. */
  orphanGraceMs: number;
  /** Absolute path of the `--config` file, or null; hidden from jobs. */
  configFile: string | null;
  /** Host variable names (or `PREFIX*` patterns) forwarded into job environments. */
  envForward: string[];
  /** Base URL of a release mirror laid out as `{mirror}/{engine}/{version}/{file}`; null = official sites. */
  releaseMirror: string | null;
  /**
   * Absolute path of OpenPGP public keys trusted to sign engine checksums files besides the
   * vendors' built-in keys (read and checked at start), or null.
   */
  engineKeyringFile: string | null;
  /** Absolute path of extra trusted CA certificates (PEM), or null. */
  caCertFile: string | null;
  /** Proxy variables and CA certificates go on to engines, hooks and git. */
  forwardNetworkEnv: boolean;
  /** Update to the coordinator's agent build between jobs. */
  autoUpdate: boolean;
  /** `--release-key`: release keys trusted besides those compiled into the build. */
  releaseKeys: string[];
  /** Development only: let VCS jobs clone `file://` repositories. */
  allowFileRepos: boolean;
  /** Where `/metrics`, `/healthz` and `/readyz` are served (port 0: any free port); null = off. */
  metricsAddress: ListenAddress | null;
  /** Tokens that post VCS feedback, each bound to its one host; never logged, hidden from jobs. */
  vcsTokens: VcsToken[];
};

/** Where a raw value came from, to name it in an error. */
type Sourced = { value: FileValue | undefined; source: string };

const seconds = (min: number, max: number) => {
  const message = `must be a number of seconds between ${min} and ${max}`;
  return z.coerce.number({ error: message }).min(min, message).max(max, message);
};
const httpUrl = z
  .string()
  .regex(/^https?:\/\/[^\s/]+/i, "must be an http(s) URL")
  .transform((v) => v.replace(/\/+$/, ""));
const concurrency = "must be an integer between 1 and 64";
const expiration = "must be seconds or a duration like 90m or 2h, between 10 s and 24 h";
const phases = "must list plan and/or apply, e.g. plan,apply";

/** The validator of each setting, fed the raw value (flag text, variable text or file value). */
const VALIDATORS = {
  address: z.string().transform(toBaseAddress),
  "token-file": z.string().min(1),
  "oidc-token-file": z.string().min(1),
  "pool-id": z.string().regex(/^pool_[a-z2-7]{26}$/, "must be a pool id (pool_…)"),
  "token-expiration": z
    .union([z.string(), z.number()])
    .transform((v) => parseDurationSeconds(v))
    .pipe(z.number({ error: expiration }).min(10, expiration).max(86_400, expiration))
    .transform(Math.round),
  name: z.string().trim().min(1).max(100, "must be at most 100 characters"),
  single: z.boolean(),
  concurrency: z.coerce
    .number({ error: concurrency })
    .int(concurrency)
    .min(1, concurrency)
    .max(64, concurrency),
  accept: z
    .array(z.enum(PHASES, { error: phases }))
    .min(1, phases)
    .transform((v) => [...new Set(v)]),
  "log-level": z.enum(LOG_LEVELS, { error: `must be one of ${LOG_LEVELS.join(", ")}` }),
  "log-json": z.boolean(),
  "data-dir": z.string().min(1),
  "hooks-dir": z.string().min(1),
  "hook-timeout": z.coerce
    .number({ error: "must be a positive number of seconds" })
    .positive("must be a positive number of seconds")
    .max(86_400, "must be at most 86400 seconds"),
  "shutdown-grace": seconds(0, 86_400),
  "cancel-grace": seconds(1, 3_600),
  isolation: z.enum(ISOLATION_SETTINGS, {
    error: `must be one of ${ISOLATION_SETTINGS.join(", ")}`,
  }),
  "orphan-grace": seconds(1, 3_600),
  "env-forward": z.array(
    z.string().regex(ENV_PATTERN, "must be variable names like AWS_REGION or prefixes like AWS_*"),
  ),
  "release-mirror": httpUrl,
  "engine-keyring": z.string().min(1),
  "ca-cert": z.string().min(1),
  "forward-network-env": z.boolean(),
  "auto-update": z.boolean(),
  "release-key": z.array(ReleaseKey),
  "insecure-http": z.boolean(),
  "allow-file-repos": z.boolean(),
  "metrics-address": z.string().transform(parseListenAddress),
  "github-token-file": z.string().min(1),
  "github-host": z.string().min(1),
  "gitlab-token-file": z.string().min(1),
  "gitlab-host": z.string().min(1),
  config: z.string().min(1),
} satisfies Record<SettingFlag, z.ZodType>;

/**
 * Parses flags, environment and config file into an {@link AgentConfig}: for each setting the
 * flag wins, then its `OUTPOST_*` variable, then its Terraform Cloud alias, then the config file,
 * then the default. Throws {@link UserError} with one line naming the offending setting and
 * where it came from; returns `{ print }` for `--help` and `--version`.
 */
export function loadConfig(
  argv: string[],
  env: NodeJS.ProcessEnv,
): AgentConfig | { print: string } {
  const flags = parseFlags(argv);
  if (flags.kind === "print") {
    return { print: flags.text };
  }
  const configSpec = SETTINGS.find((s) => s.flag === "config") as SettingSpec;
  const configFile = pick(configSpec, flags.values, env, {});
  const file = configFile.value === undefined ? {} : readConfigFile(String(configFile.value));
  const raw = (flag: SettingFlag): Sourced => {
    const spec = SETTINGS.find((s) => s.flag === flag) as SettingSpec;
    return pick(spec, flags.values, env, file, String(configFile.value));
  };
  const get = <F extends SettingFlag>(
    flag: F,
    fallback: unknown,
  ): z.output<(typeof VALIDATORS)[F]> => {
    const { value, source } = raw(flag);
    const input = value === undefined ? fallback : coerce(flag, value);
    const parsed = VALIDATORS[flag].safeParse(input);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      const missing = value === undefined && fallback === undefined;
      throw new UserError(
        `${source} ${missing ? "is required" : (issue?.message ?? "is invalid")}`,
      );
    }
    return parsed.data as z.output<(typeof VALIDATORS)[F]>;
  };
  const dataDir = path.resolve(get("data-dir", defaultDataDir(env)));
  const caCertFile = raw("ca-cert").value === undefined ? null : path.resolve(get("ca-cert", null));
  if (caCertFile !== null) {
    readCaFile(caCertFile, raw("ca-cert").source);
  }
  const address = get("address", undefined);
  const insecureHttp = get("insecure-http", false);
  const refusal = plainHttpRefusal(address, insecureHttp);
  if (refusal !== null) {
    throw new UserError(`${raw("address").source} ${refusal}`);
  }
  return {
    address,
    insecureHttp,
    ...credentials(env, raw, get),
    name: get("name", hostname() || "outpost-agent"),
    single: get("single", false),
    logLevel: get("log-level", "info"),
    logJson: get("log-json", false),
    concurrency: get("concurrency", 1),
    accept: get("accept", [...PHASES]),
    dataDir,
    hooksDir: path.resolve(get("hooks-dir", path.join(dataDir, "hooks"))),
    hookTimeoutMs: Math.round(get("hook-timeout", 60) * 1000),
    shutdownGraceMs: Math.round(get("shutdown-grace", 300) * 1000),
    cancelGraceMs: Math.round(get("cancel-grace", 30) * 1000),
    isolation: get("isolation", "auto"),
    orphanGraceMs: Math.round(get("orphan-grace", 30) * 1000),
    configFile: configFile.value === undefined ? null : path.resolve(String(configFile.value)),
    envForward: [...new Set(get("env-forward", []))],
    releaseMirror: raw("release-mirror").value === undefined ? null : get("release-mirror", null),
    engineKeyringFile:
      raw("engine-keyring").value === undefined ? null : path.resolve(get("engine-keyring", null)),
    caCertFile,
    forwardNetworkEnv: get("forward-network-env", true),
    autoUpdate: get("auto-update", true),
    releaseKeys: [...new Set(get("release-key", []))],
    allowFileRepos: get("allow-file-repos", false),
    metricsAddress:
      raw("metrics-address").value === undefined ? null : get("metrics-address", null),
    vcsTokens: vcsTokens(env, raw, get, file, String(configFile.value)),
  };
}

/** The VCS tokens of `--github-token-file`, `--gitlab-token-file`, their variables, `vcsTokens`. */
function vcsTokens(
  env: NodeJS.ProcessEnv,
  raw: (flag: SettingFlag) => Sourced,
  get: Getter,
  file: Record<string, FileValue | undefined>,
  fileName: string,
): VcsToken[] {
  const provider = (
    variable: string,
    fileFlag: "github-token-file" | "gitlab-token-file",
    hostFlag: "github-host" | "gitlab-host",
    defaultHost: string,
  ): ProviderTokenSetting => ({
    variable,
    file:
      raw(fileFlag).value === undefined
        ? null
        : { path: get(fileFlag, null), source: raw(fileFlag).source },
    host: { value: get(hostFlag, defaultHost), source: raw(hostFlag).source },
  });
  const perHost = file.vcsTokens as VcsTokensValue | undefined;
  return readVcsTokens(
    env,
    [
      provider(GITHUB_TOKEN_ENV, "github-token-file", "github-host", "api.github.com"),
      provider(GITLAB_TOKEN_ENV, "gitlab-token-file", "gitlab-host", "gitlab.com"),
    ],
    perHost === undefined ? null : { value: perHost, source: `--config ${fileName}: vcsTokens` },
  );
}

type Getter = <F extends SettingFlag>(
  flag: F,
  fallback: unknown,
) => z.output<(typeof VALIDATORS)[F]>;

/**
 * How the agent authenticates: an agent token (environment or `--token-file`), or an OIDC token
 * file with the pool to log in to. Naming both is refused, as is an OIDC file without a pool.
 */
function credentials(
  env: NodeJS.ProcessEnv,
  raw: (flag: SettingFlag) => Sourced,
  get: Getter,
): Pick<AgentConfig, "token" | "tokenFile" | "oidc"> {
  const oidcFile = raw("oidc-token-file");
  if (oidcFile.value === undefined) {
    const tokenFile = raw("token-file");
    return {
      ...readToken(
        env,
        tokenFile.value === undefined
          ? null
          : {
              file: get("token-file", null),
              isFromConfigFile: tokenFile.source.startsWith("--config"),
            },
      ),
      oidc: null,
    };
  }
  const staticToken =
    raw("token-file").value !== undefined
      ? "--token-file"
      : [TOKEN_ENV, TOKEN_TFC_ENV].find((name) => env[name]);
  if (staticToken !== undefined) {
    throw new UserError(`${oidcFile.source} and ${staticToken} are both set; keep one`);
  }
  if (raw("pool-id").value === undefined) {
    throw new UserError(`${oidcFile.source} needs the pool to log in to: --pool-id pool_…`);
  }
  return {
    token: null,
    tokenFile: null,
    oidc: {
      tokenFile: path.resolve(get("oidc-token-file", null)),
      poolId: get("pool-id", null),
      tokenExpirationSeconds: get("token-expiration", 3600),
    },
  };
}

/** The raw value of one setting from the first source that has it. */
function pick(
  spec: SettingSpec,
  flags: Record<string, string | string[] | boolean | undefined>,
  env: NodeJS.ProcessEnv,
  file: Record<string, FileValue | undefined>,
  fileName = "",
): Sourced {
  const flag = flags[spec.flag];
  if (flag !== undefined) {
    return { value: flag, source: `--${spec.flag}` };
  }
  for (const name of [spec.env, ...(spec.tfcEnv ?? [])]) {
    const value = env[name];
    if (value !== undefined && value !== "") {
      return { value, source: name };
    }
  }
  const key = spec.fileKey;
  if (key !== undefined && file[key] !== undefined) {
    return { value: file[key], source: `--config ${fileName}: ${key}` };
  }
  return { value: undefined, source: spec.env };
}

/** Turns text from a flag or variable into the shape its validator takes. */
function coerce(flag: SettingFlag, value: FileValue): unknown {
  const spec = SETTINGS.find((s) => s.flag === flag) as SettingSpec;
  if (spec.kind === "list") {
    const items = Array.isArray(value) ? value : [String(value)];
    return items.flatMap((v) => v.split(/[\s,]+/)).filter((v) => v !== "");
  }
  if (spec.kind === "boolean" || spec.kind === "switch") {
    return typeof value === "boolean" ? value : toBoolean(String(value));
  }
  return typeof value === "number" ? value : String(value);
}

/** true/false, on/off, yes/no, 1/0; Terraform Cloud's auto-update `disabled` is off. */
function toBoolean(text: string): boolean | string {
  const lower = text.trim().toLowerCase();
  if (["1", "true", "on", "yes", "minor", "patch"].includes(lower)) {
    return true;
  }
  if (["0", "false", "off", "no", "disabled"].includes(lower)) {
    return false;
  }
  return text;
}

function defaultDataDir(env: NodeJS.ProcessEnv): string {
  const base = env.XDG_DATA_HOME || path.join(env.HOME || homedir(), ".local", "share");
  return path.join(base, "outpost-agent");
}
