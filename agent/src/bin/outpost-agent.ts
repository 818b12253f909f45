#!/usr/bin/env node
import { loadConfig } from "../config/load.ts";
import { forgetToken } from "../config/token.ts";
import { describeFatal } from "../errors.ts";
import { EXIT_CODES } from "../exit-codes.ts";
import { createLogger } from "../logger.ts";
import { runAgent } from "../main.ts";

try {
  const config = loadConfig(process.argv.slice(2), process.env);
  if ("print" in config) {
    process.stdout.write(config.print);
    process.exit(EXIT_CODES.ok);
  }
  // Nothing the agent starts (git, hooks) may inherit the token.
  forgetToken(process.env);
  const logger = createLogger({ level: config.logLevel, json: config.logJson });
  // Exit now: idle keep-alive sockets or timers must not hold a finished agent open.
  process.exit(await runAgent(config, logger));
} catch (error) {
  const { exitCode, text } = describeFatal(error);
  process.stderr.write(`${text}\n`);
  process.exit(exitCode);
}
