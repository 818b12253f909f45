import type { AgentConfig } from "./config.ts";
import type { ExitCode } from "./exit-codes.ts";
import type { Logger } from "./logger.ts";

/**
 * The agent process after its configuration was accepted. The coordinator loop (register,
 * long-poll, start, heartbeat, goodbye) needs the wire schemas of `src/protocol/` and is wired
 * here once they exist; until then starting fails loudly instead of pretending to work.
 */
export async function runAgent(config: AgentConfig, logger: Logger): Promise<ExitCode> {
  logger.info(
    {
      address: config.address,
      name: config.name,
      concurrency: config.concurrency,
      accept: config.accept.join(","),
      dataDir: config.dataDir,
    },
    "outpost-agent configured",
  );
  throw new Error("the coordinator loop is not wired yet (it needs src/protocol)");
}
