import { readFileSync } from "node:fs";
import path from "node:path";
import { UserError } from "../errors.ts";
import { TOKEN_ENV, TOKEN_TFC_ENV } from "./settings.ts";

const AGENT_TOKEN = /^op_agent_[A-Za-z0-9_-]+$/;

/** The agent token from `OUTPOST_TOKEN` (or `TFC_AGENT_TOKEN`) or from the token file. */
export function readToken(
  env: NodeJS.ProcessEnv,
  fileSetting: { file: string; isFromConfigFile: boolean } | null,
): { token: string; tokenFile: string | null } {
  const fromEnv = env[TOKEN_ENV] || env[TOKEN_TFC_ENV] || undefined;
  const name = env[TOKEN_ENV] ? TOKEN_ENV : TOKEN_TFC_ENV;
  if (fileSetting !== null && !fileSetting.isFromConfigFile && fromEnv !== undefined) {
    throw new UserError(`${name} and --token-file are both set; keep one`);
  }
  // The environment wins over a token file named in the config file, like every setting.
  const tokenFile = fromEnv !== undefined ? null : (fileSetting?.file ?? null);
  if (tokenFile === null) {
    if (fromEnv === undefined) {
      throw new UserError(`${TOKEN_ENV} is required (or --token-file FILE)`);
    }
    if (!AGENT_TOKEN.test(fromEnv)) {
      throw new UserError(`${name} must be an agent token (op_agent_…)`);
    }
    return { token: fromEnv, tokenFile: null };
  }
  const file = path.resolve(tokenFile);
  let text: string;
  try {
    text = readFileSync(file, "utf8").trim();
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? "unreadable";
    throw new UserError(`--token-file ${file}: cannot read the file (${code})`);
  }
  if (!AGENT_TOKEN.test(text)) {
    throw new UserError(`--token-file ${file}: does not hold an agent token (op_agent_…)`);
  }
  return { token: text, tokenFile: file };
}

/** The variables that may hold the agent token. */
export const TOKEN_VARIABLES = [TOKEN_ENV, TOKEN_TFC_ENV] as const;

/**
 * Removes the agent token from the process environment, so nothing the agent starts (git,
 * credential helpers, hooks) inherits it. Called once the configuration is loaded; the agent
 * then also erases it from its initial environment block (`exec/environ.ts`), which
 * `/proc/<pid>/environ` would otherwise show for the agent's whole life.
 */
export function forgetToken(env: NodeJS.ProcessEnv): void {
  for (const name of TOKEN_VARIABLES) {
    delete env[name];
  }
}
