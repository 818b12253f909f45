#!/usr/bin/env node
import { loadConfig, USAGE } from "../src/config.ts";
import { describeFatal } from "../src/errors.ts";
import { EXIT_CODES } from "../src/exit-codes.ts";
import { createLogger } from "../src/logger.ts";
import { runAgent } from "../src/main.ts";

try {
  const config = loadConfig(process.argv.slice(2), process.env);
  if (config === "help") {
    process.stdout.write(`${USAGE}\n`);
    process.exit(EXIT_CODES.ok);
  }
  const logger = createLogger({ level: config.logLevel, json: config.logJson });
  // Exit now: idle keep-alive sockets or timers must not hold a finished agent open.
  process.exit(await runAgent(config, logger));
} catch (error) {
  const { exitCode, text } = describeFatal(error);
  process.stderr.write(`${text}\n`);
  process.exit(exitCode);
}
