/**
 * The VCS tokens this agent posts feedback with (hooks with `feedback: "agent"`). Each token is
 * bound to one VCS API host and is sent to that host only, never to the coordinator (which
 * learns the host names, nothing else) and never into a job: the variables are removed from the
 * environment once read, and the files are among those the job sandbox hides.
 *
 * Sources: `OUTPOST_GITHUB_TOKEN` or `--github-token-file` for `--github-host` (default
 * `api.github.com`), `OUTPOST_GITLAB_TOKEN` or `--gitlab-token-file` for `--gitlab-host`
 * (default `gitlab.com`), and the config file's `vcsTokens: { "<host>": { tokenFile } }`.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { VcsHost } from "@outpost/protocol";
import type { VcsTokensValue } from "../config/file.ts";
import { GITHUB_TOKEN_ENV, GITLAB_TOKEN_ENV } from "../config/settings.ts";
import { UserError } from "../errors.ts";

/** A token and the one host it may be sent to. */
export type VcsToken = {
  /** `host` or `host:port`, lowercase, as in the API URL. */
  host: string;
  token: string;
  /** The file it was read from (hidden from jobs), or null for an environment variable. */
  file: string | null;
  /** The variable it was read from (given back to the process an update restarts), or null. */
  variable: string | null;
};

/** The variables that may hold VCS tokens; removed from the environment once read. */
export const VCS_TOKEN_VARIABLES = [GITHUB_TOKEN_ENV, GITLAB_TOKEN_ENV] as const;

/** A provider's token as configured: the variable's value or the file, and the host. */
export type ProviderTokenSetting = {
  variable: string;
  file: { path: string; source: string } | null;
  host: { value: string; source: string };
};

/**
 * `github.com` names the API host `api.github.com`; anything else is a host (`host:port`) as the
 * API URL spells it. Throws {@link UserError} naming `source` for a URL or a path.
 */
export function normalizeHost(text: string, source: string): string {
  const lower = text.trim().toLowerCase();
  const host = lower === "github.com" ? "api.github.com" : lower;
  if (!VcsHost.safeParse(host).success) {
    throw new UserError(
      `${source} must be a host name such as github.example.com (no scheme or path), not ${JSON.stringify(text)}`,
    );
  }
  return host;
}

function readTokenFile(file: string, source: string): string {
  let text: string;
  try {
    text = readFileSync(file, "utf8").trim();
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? "unreadable";
    throw new UserError(`${source} ${file}: cannot read the file (${code})`);
  }
  if (!/^\S+$/.test(text)) {
    throw new UserError(`${source} ${file}: must hold one token on one line`);
  }
  return text;
}

/**
 * Reads every configured VCS token. Refused: a provider's variable and token file both given on
 * the command line or in the environment (a file named in the config file yields to the
 * variable, like every setting), a malformed host, an unreadable or empty file, one host twice.
 */
export function readVcsTokens(
  env: NodeJS.ProcessEnv,
  providers: readonly ProviderTokenSetting[],
  perHost: { value: VcsTokensValue; source: string } | null,
): VcsToken[] {
  const tokens: VcsToken[] = [];
  const add = (token: VcsToken, source: string) => {
    if (tokens.some((t) => t.host === token.host)) {
      throw new UserError(`${source}: a token for ${token.host} is configured twice; keep one`);
    }
    tokens.push(token);
  };
  for (const provider of providers) {
    const fromEnv = env[provider.variable] || undefined;
    const { file } = provider;
    if (fromEnv !== undefined && file !== null && !file.source.startsWith("--config")) {
      throw new UserError(`${provider.variable} and ${file.source} are both set; keep one`);
    }
    if (fromEnv === undefined && file === null) {
      continue;
    }
    const host = normalizeHost(provider.host.value, provider.host.source);
    if (fromEnv !== undefined) {
      add(
        { host, token: fromEnv.trim(), file: null, variable: provider.variable },
        provider.variable,
      );
    } else if (file !== null) {
      const resolved = path.resolve(file.path);
      const token = readTokenFile(resolved, file.source);
      add({ host, token, file: resolved, variable: null }, file.source);
    }
  }
  for (const [name, entry] of Object.entries(perHost?.value ?? {})) {
    const source = `${perHost?.source ?? "vcsTokens"}.${name}`;
    const file = path.resolve(entry.tokenFile);
    const host = normalizeHost(name, source);
    add({ host, token: readTokenFile(file, source), file, variable: null }, source);
  }
  return tokens;
}

/** Removes the VCS token variables from `env`, so nothing the agent starts inherits them. */
export function forgetVcsTokens(env: NodeJS.ProcessEnv): void {
  for (const name of VCS_TOKEN_VARIABLES) {
    delete env[name];
  }
}
