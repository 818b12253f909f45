import { AgentApi } from "./client/agent-api.ts";
import { PACKAGE_VERSION } from "./client/http.ts";
import { jobPort } from "./client/job-port.ts";
import type { AgentConfig } from "./config.ts";
import type { ExitCode } from "./exit-codes.ts";
import type { Logger } from "./logger.ts";
import { AgentLoop } from "./poller.ts";

/** Configuration tarballs (and their extracted contents) above this are refused. */
const MAX_CONFIGURATION_BYTES = 1024 * 1024 * 1024;

/**
 * The agent process after its configuration was accepted: runs the {@link AgentLoop} until it
 * ends, with SIGTERM/SIGINT wired to its graceful (first signal) and forced (second) shutdown.
 * Resolves with the exit code of a normal end; rejects with an ExitRequest (token revoked, told
 * to exit) or a bug.
 */
export async function runAgent(config: AgentConfig, logger: Logger): Promise<ExitCode> {
  const userAgent = `outpost-agent/${PACKAGE_VERSION} (${process.platform}; ${process.arch}; node ${process.version})`;
  const target = { address: config.address, userAgent };
  const loop = new AgentLoop({
    api: new AgentApi({ address: config.address, token: config.token, userAgent }),
    logger,
    address: config.address,
    name: config.name,
    concurrency: config.concurrency,
    accept: config.accept,
    single: config.single,
    shutdownGraceMs: config.shutdownGraceMs,
    settings: {
      dataDir: config.dataDir,
      hooksDir: config.hooksDir,
      hookTimeoutMs: config.hookTimeoutMs,
      envForward: config.envForward,
      hostEnv: process.env,
      releaseMirror: config.releaseMirror,
      allowFileRepos: config.allowFileRepos,
      cancelGraceMs: config.cancelGraceMs,
      maxConfigurationBytes: MAX_CONFIGURATION_BYTES,
    },
    portFor: (job) =>
      jobPort({ target, jobId: job.jobId, leaseId: job.leaseId, runToken: job.runToken ?? "" }),
  });
  logger.info(
    {
      address: config.address,
      name: config.name,
      version: PACKAGE_VERSION,
      concurrency: config.single ? 1 : config.concurrency,
      accept: config.accept.join(","),
      single: config.single,
      dataDir: config.dataDir,
    },
    "outpost-agent starting",
  );
  const onSignal = (signal: NodeJS.Signals) => {
    logger.info({ signal }, "signal received");
    loop.stop();
  };
  process.on("SIGTERM", onSignal);
  process.on("SIGINT", onSignal);
  try {
    return await loop.run();
  } finally {
    process.off("SIGTERM", onSignal);
    process.off("SIGINT", onSignal);
  }
}
