#!/usr/bin/env node
import { loadConfig } from "../config/load.ts";
import { forgetToken, TOKEN_VARIABLES } from "../config/token.ts";
import { describeFatal } from "../errors.ts";
import { eraseInitialEnvironment } from "../exec/environ.ts";
import { EXIT_CODES } from "../exit-codes.ts";
import { forgetVcsTokens, VCS_TOKEN_VARIABLES } from "../feedback/tokens.ts";
import { createLogger } from "../logger.ts";
import { runAgent } from "../main.ts";

try {
  const config = loadConfig(process.argv.slice(2), process.env);
  if ("print" in config) {
    process.stdout.write(config.print);
    process.exit(EXIT_CODES.ok);
  }
  // Nothing the agent starts (git, hooks) may inherit the token, nor read it in /proc.
  const secretVariables = [...TOKEN_VARIABLES, ...VCS_TOKEN_VARIABLES];
  const hadToken = secretVariables.some((name) => process.env[name] !== undefined);
  forgetToken(process.env);
  forgetVcsTokens(process.env);
  const erased = hadToken ? eraseInitialEnvironment(secretVariables) : null;
  const logger = createLogger({ level: config.logLevel, json: config.logJson });
  if (erased !== null && "failed" in erased) {
    logger.warn(
      { reason: erased.failed },
      "could not erase the agent token (or a VCS token) from /proc/self/environ; use token files, or isolation bwrap, so jobs cannot read them",
    );
  }
  // Exit now: idle keep-alive sockets or timers must not hold a finished agent open.
  process.exit(await runAgent(config, logger));
} catch (error) {
  const { exitCode, text } = describeFatal(error);
  process.stderr.write(`${text}\n`);
  process.exit(exitCode);
}
