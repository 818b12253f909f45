import { readFileSync } from "node:fs";
import { homedir } from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { z } from "zod";
import { UserError } from "./errors.ts";

const LOG_LEVELS = ["trace", "debug", "info", "warn", "error", "fatal"] as const;
const PHASES = ["plan", "apply"] as const;
/** A host variable name, optionally ending in `*` to forward every variable with that prefix. */
const ENV_PATTERN = /^[A-Za-z_][A-Za-z0-9_]*\*?$/;

/** Everything the agent process is configured with, parsed and validated once at start. */
export type AgentConfig = {
  /** Coordinator base URL without a trailing slash, e.g. `https://outpost.example.com`. */
  address: string;
  /** The agent-pool token (`op_agent_…`); never logged. */
  token: string;
  /** Display name shown in the pool listing; null lets the coordinator choose. */
  name: string | null;
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
  /** Host variable names (or `PREFIX*` patterns) forwarded into job environments. */
  envForward: string[];
  /** Base URL of a release mirror laid out as `{mirror}/{engine}/{version}/{file}`; null = official sites. */
  releaseMirror: string | null;
  /** Development only: let VCS jobs clone `file://` repositories. */
  allowFileRepos: boolean;
};

const FLAG_OPTIONS = {
  config: { type: "string" },
  single: { type: "boolean" },
  "log-level": { type: "string" },
  "log-json": { type: "boolean" },
  concurrency: { type: "string" },
  accept: { type: "string" },
  "data-dir": { type: "string" },
  "hooks-dir": { type: "string" },
  "hook-timeout": { type: "string" },
  "shutdown-grace": { type: "string" },
  "cancel-grace": { type: "string" },
  "env-forward": { type: "string", multiple: true },
  "release-mirror": { type: "string" },
  "allow-file-repos": { type: "boolean" },
  help: { type: "boolean", short: "h" },
} as const;

const ConfigFile = z.strictObject({
  envForwardAllowlist: z.array(z.string()).optional(),
  dataDir: z.string().optional(),
  hooksDir: z.string().optional(),
  hookTimeoutSeconds: z.number().optional(),
  shutdownGraceSeconds: z.number().optional(),
  cancelGraceSeconds: z.number().optional(),
  concurrency: z.number().optional(),
  accept: z.array(z.string()).optional(),
  releaseMirror: z.string().optional(),
});

const httpUrl = z
  .string()
  .url("must be an http(s) URL")
  .refine((v) => /^https?:\/\//i.test(v), "must be an http(s) URL")
  .transform((v) => v.replace(/\/+$/, ""));

/** A number of seconds in [min, max], from a flag (string) or the config file (number). */
function seconds(min: number, max: number) {
  const message = `must be a number of seconds between ${min} and ${max}`;
  return z.coerce.number({ error: message }).min(min, message).max(max, message);
}

const Settings = z.object({
  OUTPOST_ADDRESS: z.string({ error: "is required" }).pipe(httpUrl),
  OUTPOST_TOKEN: z
    .string({ error: "is required" })
    .regex(/^op_agent_[A-Za-z0-9_-]+$/, "must be an agent token (op_agent_…)"),
  OUTPOST_NAME: z.string().min(1).max(100, "must be at most 100 characters").nullable(),
  "--log-level": z.enum(LOG_LEVELS, { error: `must be one of ${LOG_LEVELS.join(", ")}` }),
  "--concurrency": z.coerce
    .number({ error: "must be an integer between 1 and 64" })
    .int("must be an integer between 1 and 64")
    .min(1, "must be an integer between 1 and 64")
    .max(64, "must be an integer between 1 and 64"),
  "--accept": z
    .array(z.enum(PHASES, { error: "must list plan and/or apply, e.g. plan,apply" }))
    .min(1, "must list plan and/or apply, e.g. plan,apply")
    .transform((v) => [...new Set(v)]),
  "--hook-timeout": z.coerce
    .number({ error: "must be a positive number of seconds" })
    .positive("must be a positive number of seconds")
    .max(86_400, "must be at most 86400 seconds"),
  "--shutdown-grace": seconds(0, 86_400),
  "--cancel-grace": seconds(1, 3_600),
  "--env-forward": z.array(
    z.string().regex(ENV_PATTERN, "must be variable names like AWS_REGION or prefixes like AWS_*"),
  ),
  "--release-mirror": httpUrl.nullable(),
  "--data-dir": z.string().min(1),
  "--hooks-dir": z.string().min(1),
});

export const USAGE = `Usage: outpost-agent [flags]

Environment: OUTPOST_ADDRESS (required), OUTPOST_TOKEN (required, op_agent_…), OUTPOST_NAME
Flags:
  --single                 take one job, then exit
  --log-level LEVEL        trace|debug|info|warn|error|fatal (default info)
  --log-json               log JSON lines instead of text
  --concurrency N          concurrent jobs, 1-64 (default 1)
  --accept PHASES          plan,apply (default both)
  --data-dir DIR           engine cache and job dirs (default $XDG_DATA_HOME/outpost-agent)
  --hooks-dir DIR          hook executables (default <data-dir>/hooks)
  --hook-timeout SECONDS   per hook (default 60)
  --shutdown-grace SECONDS after SIGTERM/SIGINT, time running jobs get before a cancel (default 300)
  --cancel-grace SECONDS   between the first and second SIGINT of a job cancel (default 30)
  --env-forward NAME       forward a host variable (or PREFIX*) to jobs; repeatable
  --release-mirror URL     engine mirror laid out as URL/{engine}/{version}/{file}
  --config FILE            JSON file: envForwardAllowlist, dataDir, hooksDir, hookTimeoutSeconds,
                           shutdownGraceSeconds, cancelGraceSeconds, concurrency, accept,
                           releaseMirror (flags win)
  --allow-file-repos       development only: allow file:// VCS repositories`;

/**
 * Parses flags and environment into an {@link AgentConfig}. Throws {@link UserError} with one
 * line naming the offending setting for anything unknown, missing or malformed; returns
 * `"help"` when `--help` was asked for.
 */
export function loadConfig(argv: string[], env: NodeJS.ProcessEnv): AgentConfig | "help" {
  const flags = parseFlags(argv);
  if (flags.help === true) {
    return "help";
  }
  const file = flags.config === undefined ? {} : readConfigFile(flags.config);
  const dataDir = flags["data-dir"] ?? file.dataDir ?? defaultDataDir(env);
  const raw = {
    OUTPOST_ADDRESS: nonEmpty(env.OUTPOST_ADDRESS),
    OUTPOST_TOKEN: nonEmpty(env.OUTPOST_TOKEN),
    OUTPOST_NAME: nonEmpty(env.OUTPOST_NAME) ?? null,
    "--log-level": flags["log-level"] ?? "info",
    "--concurrency": flags.concurrency ?? file.concurrency ?? 1,
    "--accept": flags.accept?.split(",").map((p) => p.trim()) ?? file.accept ?? [...PHASES],
    "--hook-timeout": flags["hook-timeout"] ?? file.hookTimeoutSeconds ?? 60,
    "--shutdown-grace": flags["shutdown-grace"] ?? file.shutdownGraceSeconds ?? 300,
    "--cancel-grace": flags["cancel-grace"] ?? file.cancelGraceSeconds ?? 30,
    "--env-forward": [
      ...(flags["env-forward"] ?? []).flatMap((v) => v.split(",")).map((v) => v.trim()),
      ...(file.envForwardAllowlist ?? []),
    ],
    "--release-mirror": flags["release-mirror"] ?? file.releaseMirror ?? null,
    "--data-dir": dataDir,
    "--hooks-dir": flags["hooks-dir"] ?? file.hooksDir ?? path.join(dataDir, "hooks"),
  };
  const parsed = Settings.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const setting = String(issue?.path[0] ?? "configuration");
    throw new UserError(`${setting} ${issue?.message ?? "is invalid"}`);
  }
  const s = parsed.data;
  return {
    address: s.OUTPOST_ADDRESS,
    token: s.OUTPOST_TOKEN,
    name: s.OUTPOST_NAME,
    single: flags.single === true,
    logLevel: s["--log-level"],
    logJson: flags["log-json"] === true,
    concurrency: s["--concurrency"],
    accept: s["--accept"],
    dataDir: path.resolve(s["--data-dir"]),
    hooksDir: path.resolve(s["--hooks-dir"]),
    hookTimeoutMs: Math.round(s["--hook-timeout"] * 1000),
    shutdownGraceMs: Math.round(s["--shutdown-grace"] * 1000),
    cancelGraceMs: Math.round(s["--cancel-grace"] * 1000),
    envForward: [...new Set(s["--env-forward"])],
    releaseMirror: s["--release-mirror"],
    allowFileRepos: flags["allow-file-repos"] === true,
  };
}

function parseFlags(argv: string[]) {
  try {
    return parseArgs({ args: argv, options: FLAG_OPTIONS, strict: true, allowPositionals: false })
      .values;
  } catch (error) {
    // parseArgs messages are already one clear sentence ("Unknown option '--x'…").
    const message = error instanceof Error ? error.message.split("\n")[0] : String(error);
    throw new UserError(message ?? "invalid flags");
  }
}

function readConfigFile(file: string): z.infer<typeof ConfigFile> {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? "unreadable";
    throw new UserError(`--config ${file}: cannot read the file (${code})`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new UserError(`--config ${file}: not valid JSON`);
  }
  const parsed = ConfigFile.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue?.path.join(".") || "(top level)";
    throw new UserError(`--config ${file}: ${where}: ${issue?.message ?? "is invalid"}`);
  }
  return parsed.data;
}

function defaultDataDir(env: NodeJS.ProcessEnv): string {
  const base = nonEmpty(env.XDG_DATA_HOME) ?? path.join(homedir(), ".local", "share");
  return path.join(base, "outpost-agent");
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value === "" ? undefined : value;
}
