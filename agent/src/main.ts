import { realpathSync } from "node:fs";
import { homedir } from "node:os";
import { fileURLToPath } from "node:url";
import { AgentApi } from "./client/agent-api.ts";
import { ContactMonitor } from "./client/contact.ts";
import { type AgentCredentials, oidcCredentials, staticCredentials } from "./client/credentials.ts";
import { jobPort } from "./client/job-port.ts";
import type { AgentConfig } from "./config/load.ts";
import { offeredEngineVersions } from "./engines/offered.ts";
import { readEngineKeyring } from "./engines/signatures.ts";
import { type ResolvedIsolation, resolveIsolation } from "./exec/sandbox.ts";
import { subreaperLauncher } from "./exec/subreaper.ts";
import type { ExitCode } from "./exit-codes.ts";
import { runFeedbackLoop } from "./feedback/loop.ts";
import type { JobIsolation } from "./job/containment.ts";
import { removeStaleJobDirs } from "./job/workdirs.ts";
import type { Logger } from "./logger.ts";
import { startObservability } from "./metrics/observability.ts";
import { readCaFile, writeCaBundle } from "./net/ca.ts";
import { configureNetwork, PROXY_VARIABLES } from "./net/fetch.ts";
import { AgentLoop } from "./poller.ts";
import { BUILT_RELEASE_KEYS } from "./update/release-keys.ts";
import { Updater } from "./update/updater.ts";
import { AGENT_VERSION, IS_BUILT } from "./version.ts";

/** Configuration tarballs (and their extracted contents) above this are refused. */
const MAX_CONFIGURATION_BYTES = 1024 * 1024 * 1024;

/**
 * The agent process after its configuration was accepted: sets up proxies and CAs, then runs
 * the {@link AgentLoop} until it ends, with SIGTERM/SIGINT wired to its graceful (first signal)
 * and forced (second) shutdown. Resolves with the exit code of a normal end; rejects with an
 * ExitRequest (token revoked, told to exit) or a bug. An update restarts the process in place
 * (`process.execve`) and so never returns.
 */
export async function runAgent(config: AgentConfig, logger: Logger): Promise<ExitCode> {
  const userAgent = `outpost-agent/${AGENT_VERSION} (${process.platform}; ${process.arch}; node ${process.version})`;
  const extraCas = config.caCertFile === null ? [] : readCaFile(config.caCertFile, "--ca-cert");
  configureNetwork({ extraCas });
  // Read and checked before anything starts: a bad keyring is a configuration error (exit 2).
  const engineKeyring =
    config.engineKeyringFile === null
      ? []
      : await readEngineKeyring(config.engineKeyringFile, "--engine-keyring");
  const updater = new Updater({
    enabled: config.autoUpdate,
    currentVersion: AGENT_VERSION,
    agentFile: IS_BUILT ? realpathSync(fileURLToPath(import.meta.url)) : null,
    address: config.address,
    trustedKeys: [...new Set([...BUILT_RELEASE_KEYS, ...config.releaseKeys])],
    userAgent,
    logger,
  });
  if (config.insecureHttp && new URL(config.address).protocol === "http:") {
    logger.warn(
      { address: config.address },
      "--insecure-http: talking to the coordinator over plain http; the agent token and jobs' secrets cross the network unencrypted (agent updates are still checked against the release key)",
    );
  }
  // First, so a liveness probe is answered while the agent sets up and registers.
  const observability = await startObservability({
    address: config.metricsAddress,
    version: AGENT_VERSION,
    capacity: config.single ? 1 : config.concurrency,
    updateState: () => updater.state,
    logger,
  });
  const observe = observability?.observe;
  const target = { address: config.address, userAgent, ...(observe ? { observe } : {}) };
  const isolation = await resolveIsolation(config.isolation);
  warnIfUnisolated(isolation, logger);
  await cleanUpAfterDeadAgents(config.dataDir, logger);
  const contact = new ContactMonitor(logger);
  const credentials = credentialsOf(config, target, logger);
  const api = new AgentApi({
    address: config.address,
    credentials,
    userAgent,
    contact,
    onAgentVersion: (version) => updater.offer(version),
    ...(observe ? { observe } : {}),
  });
  const loop = new AgentLoop({
    api: observability ? observability.loopApi(api) : api,
    ...(observability ? { startJob: observability.startJob } : {}),
    logger,
    address: config.address,
    name: config.name,
    concurrency: config.concurrency,
    accept: config.accept,
    single: config.single,
    isolation: isolation.mode,
    offeredEngines: () =>
      offeredEngineVersions({
        releaseMirror: config.releaseMirror,
        dataDir: config.dataDir,
        searchPath: process.env.PATH ?? "",
      }),
    shutdownGraceMs: config.shutdownGraceMs,
    settings: {
      dataDir: config.dataDir,
      hooksDir: config.hooksDir,
      hookTimeoutMs: config.hookTimeoutMs,
      envForward: config.envForward,
      hostEnv: process.env,
      networkEnv: await jobNetworkEnv(config, extraCas),
      releaseMirror: config.releaseMirror,
      engineKeyring,
      allowFileRepos: config.allowFileRepos,
      cancelGraceMs: config.cancelGraceMs,
      maxConfigurationBytes: MAX_CONFIGURATION_BYTES,
      isolation: jobIsolation(config, isolation),
    },
    portFor: (job) =>
      jobPort({
        target,
        jobId: job.jobId,
        leaseId: job.leaseId,
        runToken: job.runToken ?? "",
        contact,
      }),
    updater,
    restart: () => restartInPlace(config),
  });
  const feedbackStop = new AbortController();
  const feedback =
    config.vcsTokens.length === 0
      ? null
      : runFeedbackLoop({
          api,
          tokens: config.vcsTokens,
          logger,
          signal: feedbackStop.signal,
        });
  logger.info(
    {
      address: config.address,
      agentName: config.name,
      version: AGENT_VERSION,
      concurrency: config.single ? 1 : config.concurrency,
      accept: config.accept.join(","),
      single: config.single,
      dataDir: config.dataDir,
      isolation: isolation.mode,
      autoUpdate: config.autoUpdate,
      releaseKeys: [...new Set([...BUILT_RELEASE_KEYS, ...config.releaseKeys])].join(",") || "none",
      proxy: proxySummary(),
      engineKeyring: engineKeyring.map((k) => k.label).join("; ") || "none",
      login: config.oidc === null ? "agent token" : `OIDC token file for ${config.oidc.poolId}`,
      metrics: observability?.url ?? "off",
      vcsFeedbackHosts: config.vcsTokens.map((t) => t.host).join(",") || "none",
    },
    "outpost-agent starting",
  );
  const onSignal = (signal: NodeJS.Signals) => {
    logger.info({ signal }, "signal received");
    observability?.stopping();
    loop.stop();
  };
  process.on("SIGTERM", onSignal);
  process.on("SIGINT", onSignal);
  try {
    return await loop.run();
  } finally {
    feedbackStop.abort();
    await feedback;
    credentials.stop();
    process.off("SIGTERM", onSignal);
    process.off("SIGINT", onSignal);
    await observability?.close();
  }
}

/** A static agent token, or OIDC logins renewed before each token expires. */
function credentialsOf(
  config: AgentConfig,
  target: { address: string; userAgent: string },
  logger: Logger,
): AgentCredentials {
  if (config.oidc !== null) {
    return oidcCredentials({ target, ...config.oidc, logger });
  }
  if (config.token === null) {
    throw new Error("configuration without a token or an OIDC token file");
  }
  return staticCredentials(config.token);
}

/**
 * `auto` found no working bubblewrap: said once, loudly, because every job on this agent can
 * then read the agent's token and the other jobs' files. Unsandboxed without a subreaper, a job's
 * process that leaves its session could outlive the job: said too.
 */
function warnIfUnisolated(isolation: ResolvedIsolation, logger: Logger): void {
  if (isolation.mode === "none" && subreaperLauncher() === null) {
    logger.warn(
      { isolation: "none" },
      "no subreaper: neither perl nor python3 (with ctypes) can set PR_SET_CHILD_SUBREAPER here, so a job's process that leaves its session (setsid, a daemon) may outlive its job; install perl, or use bubblewrap (see docs/security.md)",
    );
  }
  if (isolation.mode === "none" && isolation.unavailable !== null) {
    logger.warn(
      { isolation: "none", reason: isolation.unavailable },
      "jobs run WITHOUT a sandbox: bubblewrap is unavailable, so a job's code (engine, providers, hooks) can read this agent's token, its data directory and other running jobs' files and tokens; install bubblewrap (or run one job per container), and see docs/security.md",
    );
  }
}

/** Job directories a dead agent left behind are removed (never resumed), each one logged. */
async function cleanUpAfterDeadAgents(dataDir: string, logger: Logger): Promise<void> {
  const { removed, inUse } = await removeStaleJobDirs(dataDir);
  for (const dir of removed) {
    logger.warn({ dir }, "removed a job directory left by an agent that died");
  }
  for (const { dir, pids } of inUse) {
    logger.info({ dir, pids: pids.join(",") }, "job directory still in use; left alone");
  }
}

/**
 * The agent's own files a job's sandbox hides even where the host is shown: the agent token
 * file, the config file and every VCS token file.
 */
export function jobSecretFiles(
  config: Pick<AgentConfig, "tokenFile" | "configFile" | "vcsTokens">,
): string[] {
  return [config.tokenFile, config.configFile, ...config.vcsTokens.map((t) => t.file)].filter(
    (f): f is string => f !== null,
  );
}

/** How jobs are confined: what the sandbox hides and how long an orphan may take to stop. */
function jobIsolation(config: AgentConfig, isolation: ResolvedIsolation): JobIsolation {
  const home = process.env.HOME || homedir();
  return {
    mode: isolation.mode,
    bwrap: isolation.mode === "bwrap" ? isolation.bwrap : "",
    secretFiles: jobSecretFiles(config),
    agentHome: home ? home : null,
    orphanGraceMs: config.orphanGraceMs,
  };
}

/**
 * What jobs get of the agent's network settings (unless `--forward-network-env=off`): the
 * proxy variables as set, and with extra CAs a full trust bundle for engines and git
 * (`SSL_CERT_FILE`, `GIT_SSL_CAINFO`) plus `NODE_EXTRA_CA_CERTS` for Node-based hooks.
 */
async function jobNetworkEnv(
  config: AgentConfig,
  extraCas: readonly string[],
): Promise<Record<string, string>> {
  if (!config.forwardNetworkEnv) {
    return {};
  }
  const env: Record<string, string> = {};
  for (const name of PROXY_VARIABLES) {
    const value = process.env[name];
    if (value) {
      env[name] = value;
    }
  }
  const nodeExtra = process.env.NODE_EXTRA_CA_CERTS;
  if (extraCas.length > 0 || nodeExtra) {
    const bundle = await writeCaBundle(config.dataDir, extraCas);
    env.SSL_CERT_FILE = bundle;
    env.GIT_SSL_CAINFO = bundle;
    env.NODE_EXTRA_CA_CERTS = config.caCertFile ?? nodeExtra ?? bundle;
  }
  return env;
}

/** Proxy settings for the start line, without credentials a proxy URL may carry. */
function proxySummary(): string {
  const names = PROXY_VARIABLES.filter((name) => process.env[name]);
  return names.length === 0 ? "none" : names.join(",");
}

/**
 * Replaces this process with the updated agent file: same PID, arguments and environment, so
 * a service manager or container keeps supervising it. A token read from the environment was
 * removed from it at start and is handed back to the new image only.
 */
function restartInPlace(config: AgentConfig): void {
  const env: NodeJS.ProcessEnv = { ...process.env };
  // An OIDC agent logs in again from its token file; a file-given token is read again.
  if (config.tokenFile === null && config.token !== null) {
    env.OUTPOST_TOKEN = config.token;
  }
  for (const vcs of config.vcsTokens) {
    if (vcs.variable !== null) {
      env[vcs.variable] = vcs.token;
    }
  }
  const script = realpathSync(fileURLToPath(import.meta.url));
  try {
    process.execve?.(
      process.execPath,
      [process.execPath, ...process.execArgv, script, ...process.argv.slice(2)],
      env,
    );
  } catch {
    // Reported by the loop, which registers this process again.
  }
}
