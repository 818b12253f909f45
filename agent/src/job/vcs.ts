import { mkdir } from "node:fs/promises";
import { type Containment, startProcess } from "../exec/process.ts";
import { PROXY_VARIABLES } from "../net/fetch.ts";
import { ConfigurationError } from "./source.ts";

const COMMIT = /^[0-9a-f]{40}(?:[0-9a-f]{24})?$/;
const GIT_TIMEOUT_MS = 10 * 60_000;

/**
 * Clones `repoUrl` at exactly `commitSha` into `dest` (shallow fetch of that commit; a full
 * fetch if the server refuses fetching by id). Runs git with the agent's own environment, so
 * credential helpers and SSH agents of the agent host work, never with the job's variables.
 * Only https, http, ssh and scp-like URLs are allowed (plus file:// and local paths when
 * `allowFileRepos`, for development); git's own protocol allowlist enforces the same for
 * submodules and redirects. Each git command runs as a job process (`containment`: sandboxed
 * with the agent's isolation, stopped should the agent die). Throws {@link ConfigurationError}
 * with git's message on failure.
 */
export async function cloneAtCommit(input: {
  repoUrl: string;
  commitSha: string;
  dest: string;
  allowFileRepos: boolean;
  hostEnv: NodeJS.ProcessEnv;
  /** Proxy and CA settings for git; the host's proxy variables are dropped when absent. */
  networkEnv?: Record<string, string>;
  containment?: Containment;
}): Promise<void> {
  const sha = input.commitSha.toLowerCase();
  if (!COMMIT.test(sha)) {
    throw new ConfigurationError(`"${input.commitSha}" is not a full commit id`);
  }
  const isRemote =
    /^(https?|ssh):\/\//i.test(input.repoUrl) || /^[\w.-]+@[\w.-]+:/.test(input.repoUrl);
  const isFile = /^file:\/\//i.test(input.repoUrl) || input.repoUrl.startsWith("/");
  if (!(isRemote || (isFile && input.allowFileRepos))) {
    throw new ConfigurationError(
      isFile
        ? `repository ${input.repoUrl} is a local path; start the agent with --allow-file-repos to allow it`
        : `repository URL ${input.repoUrl} is not https, http or ssh`,
    );
  }
  const hostEnv = { ...input.hostEnv };
  if (input.networkEnv !== undefined) {
    for (const name of PROXY_VARIABLES) {
      delete hostEnv[name];
    }
  }
  const env: Record<string, string> = {
    ...definedOnly(hostEnv),
    ...input.networkEnv,
    GIT_TERMINAL_PROMPT: "0",
    GIT_ALLOW_PROTOCOL: input.allowFileRepos ? "https:http:ssh:file" : "https:http:ssh",
  };
  const git = (...args: string[]) => runGit(args, input.dest, env, input.containment);
  await mkdir(input.dest, { recursive: true });
  await git("init", "--quiet");
  await git("remote", "add", "origin", input.repoUrl);
  try {
    await git("fetch", "--quiet", "--depth", "1", "--no-tags", "origin", sha);
  } catch {
    // The server refuses wants of unadvertised commits: fetch everything the commit can be
    // reachable from, including pull/merge request heads (a fork's commits live only there).
    await git(
      "fetch",
      "--quiet",
      "--no-tags",
      "origin",
      "+refs/heads/*:refs/remotes/origin/*",
      "+refs/pull/*/head:refs/remotes/origin/pull/*",
      "+refs/merge-requests/*/head:refs/remotes/origin/merge-requests/*",
    );
  }
  await git("-c", "advice.detachedHead=false", "checkout", "--quiet", "--detach", sha);
}

/** The directory of a local repository URL (file:// or a path), or null for a remote one. */
export function localRepositoryPath(repoUrl: string): string | null {
  if (/^file:\/\//i.test(repoUrl)) {
    try {
      return decodeURIComponent(new URL(repoUrl).pathname);
    } catch {
      return null;
    }
  }
  return repoUrl.startsWith("/") ? repoUrl : null;
}

/** Runs one git command; throws {@link ConfigurationError} with the last line git printed. */
async function runGit(
  args: string[],
  cwd: string,
  env: Record<string, string>,
  containment: Containment | undefined,
): Promise<void> {
  let output = "";
  const child = startProcess({
    command: "git",
    args,
    cwd,
    env,
    onOutput: (chunk) => {
      output = (output + chunk.toString()).slice(-4096);
    },
    ...(containment === undefined ? {} : { containment }),
  });
  const timer = setTimeout(() => child.forceKill(), GIT_TIMEOUT_MS);
  let exit: Awaited<typeof child.exited>;
  try {
    exit = await child.exited.finally(() => clearTimeout(timer));
  } catch (error) {
    throw new ConfigurationError(`git ${args[0]} failed: ${(error as Error).message}`);
  }
  if (exit.code !== 0) {
    const last = output.trim().split("\n").pop();
    const how = exit.code === null ? `was killed by ${exit.signal}` : `exited with ${exit.code}`;
    throw new ConfigurationError(`git ${args[0]} failed: ${last || how}`);
  }
}

function definedOnly(env: NodeJS.ProcessEnv): Record<string, string> {
  return Object.fromEntries(
    Object.entries(env).filter((entry): entry is [string, string] => entry[1] !== undefined),
  );
}
