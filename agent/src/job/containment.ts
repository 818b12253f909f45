/**
 * What each kind of job process may see and what becomes of it if the agent dies: the
 * {@link Containment} handed to `startProcess` for the engine, a hook and git.
 */
import { existsSync, realpathSync } from "node:fs";
import path from "node:path";
import type { Containment } from "../exec/process.ts";
import { bubblewrapArgs, type IsolationMode } from "../exec/sandbox.ts";
import { FALLBACK_PATH, isForwarded } from "./environment.ts";
import {
  hiddenBecause,
  isInside,
  type Protected,
  pathExposure,
  type Shadow,
  type Withheld,
} from "./sandbox-paths.ts";
import type { JobSettings } from "./types.ts";
import { type JobDir, recordOwner } from "./workdirs.ts";

/** How the agent confines its jobs (decided once at start). */
export type JobIsolation = {
  mode: IsolationMode;
  /** The bubblewrap executable (absolute) when `mode` is `bwrap`. */
  bwrap: string;
  /** Files no job process may read: the agent's token file and config file. */
  secretFiles: string[];
  /** The agent user's home: hidden from engines and hooks; git reads its credentials there. */
  agentHome: string | null;
  /** If the agent dies: SIGINT to every job process, SIGKILL this long after. */
  orphanGraceMs: number;
};

/** Containments for one job's processes. */
export type JobContainment = {
  /** The engine and its providers: the engine's directories read-only, plus `readOnly`. */
  engine(cwd: string, enginePath: string, readOnly?: string[]): Containment;
  /** A hook: as the engine, plus the hooks directory read-only. */
  hook(cwd: string, enginePath: string): Containment;
  /**
   * git: the agent's home readable (its credentials and SSH configuration), no engine;
   * `readOnly` adds a local repository (development's file:// URLs).
   */
  git(cwd: string, readOnly?: string[]): Containment;
  /** Directories of the job's PATH the engine's sandbox leaves hidden, and why (none unsandboxed). */
  readonly withheldPath: readonly Withheld[];
  /** Why the engine's sandbox (engine at `enginePath`) does not show `file`, or null if it does. */
  hiddenBecause(file: string, enginePath: string): string | null;
};

/**
 * Builds the containments of the job in `dir`. Every process gets a watchdog that, should the
 * agent die, stops it (SIGINT, then SIGKILL after the grace period) and removes the job's
 * directory. With `bwrap` each process also runs in a sandbox where only `dir.root` is writable
 * and the agent's data directory, hooks, token and config files are not visible (see
 * docs/security.md, "Job isolation"); every directory of the job's PATH the sandbox would hide
 * (in the agent's home, under /tmp) is shown read-only unless it is, is inside or holds one of
 * those (`sandbox-paths.ts`). `isFork`: the job of a fork's pull request, which gets no host
 * paths from `--env-forward`.
 */
export function jobContainment(settings: JobSettings, dir: JobDir, isFork = false): JobContainment {
  const isolation = settings.isolation;
  const watch = {
    orphanGraceMs: isolation.orphanGraceMs,
    orphanCleanup: [dir.root, dir.ownerFile],
    onWatchdog: (pid: number) => recordOwner(dir, pid),
  };
  const networkFiles = ["SSL_CERT_FILE", "GIT_SSL_CAINFO", "NODE_EXTRA_CA_CERTS"]
    .map((name) => settings.networkEnv[name])
    .filter((value): value is string => value !== undefined && path.isAbsolute(value));
  const engineFiles = enginePaths(settings, isFork);
  const home = isolation.agentHome;
  const { shadows, protect } = sandboxRules(settings);
  const searchPath = settings.hostEnv.PATH || FALLBACK_PATH;
  const exposure = (hideHome: boolean) =>
    pathExposure({ searchPath, shadows: shadows(hideHome), protect });
  const engineExposure = isolation.mode === "bwrap" ? exposure(true) : null;
  const sandboxed = (
    cwd: string,
    hideHome: boolean,
    readOnly: string[],
  ): Containment["sandbox"] => {
    if (isolation.mode !== "bwrap") {
      return null;
    }
    const hiddenDirs = existing([
      settings.dataDir,
      settings.hooksDir,
      ...(hideHome && home !== null ? [home] : []),
    ]).filter((d) => path.resolve(d) !== path.parse(path.resolve(d)).root);
    const isHidden = (p: string) => hiddenDirs.some((d) => isInside(p, d));
    const pathDirs = (hideHome ? engineExposure : null) ?? exposure(hideHome);
    return {
      bwrap: isolation.bwrap,
      args: bubblewrapArgs({
        hiddenDirs,
        hiddenFiles: existing(isolation.secretFiles).filter((f) => !isHidden(f)),
        readOnly: existing([...readOnly, ...networkFiles, ...pathDirs.shown]),
        writable: [dir.root],
        cwd,
      }),
    };
  };
  const engineDirs = (enginePath: string) => {
    const dirs = [path.dirname(enginePath)];
    try {
      dirs.push(path.dirname(realpathSync(enginePath)));
    } catch {
      // Missing engine: the start fails with the engine's own error.
    }
    return dirs;
  };
  return {
    engine: (cwd, enginePath, readOnly = []) => ({
      ...watch,
      sandbox: sandboxed(cwd, true, [...engineDirs(enginePath), ...engineFiles, ...readOnly]),
    }),
    hook: (cwd, enginePath) => ({
      ...watch,
      sandbox: sandboxed(cwd, true, [settings.hooksDir, ...engineDirs(enginePath), ...engineFiles]),
    }),
    git: (cwd, readOnly = []) => ({
      ...watch,
      sandbox: sandboxed(cwd, false, [...readOnly, ...hostGitPaths(settings.hostEnv)]),
    }),
    withheldPath: engineExposure?.withheld ?? [],
    hiddenBecause: (file, enginePath) =>
      engineExposure === null
        ? null
        : hiddenBecause(file, {
            shadows: shadows(true),
            binds: [...engineDirs(enginePath), ...engineFiles, ...engineExposure.shown, dir.root],
            hiddenFiles: isolation.secretFiles,
          }),
  };
}

/**
 * What the sandbox replaces with empty directories (the agent's home only for engines and
 * hooks), and what it must never show through a directory of PATH.
 */
function sandboxRules(settings: JobSettings): {
  shadows: (hideHome: boolean) => Shadow[];
  protect: Protected[];
} {
  const { dataDir, hooksDir, isolation } = settings;
  const home = isolation.agentHome;
  return {
    shadows: (hideHome) => [
      { dir: dataDir, why: `the agent's data directory (${dataDir})` },
      { dir: hooksDir, why: `the hooks directory (${hooksDir})` },
      ...(hideHome && home !== null ? [{ dir: home, why: `the agent's home (${home})` }] : []),
      { dir: "/tmp", why: "/tmp, which the sandbox replaces with its own" },
    ],
    protect: [
      { path: dataDir, what: "the agent's data directory" },
      { path: hooksDir, what: "the hooks directory" },
      ...isolation.secretFiles.map((f) => ({
        path: f,
        what: `the agent's token or config (${f})`,
      })),
    ],
  };
}

/**
 * Host variables naming files the engine reads besides its binary: a provider plugin cache and a
 * CLI configuration (e.g. a `filesystem_mirror`). Only the host's values, and only when
 * `--env-forward` hands them to the job (never for a fork's job): a workspace variable of the
 * same name must not open a path of its choosing into the sandbox.
 */
export const ENGINE_PATH_VARIABLES = ["TF_PLUGIN_CACHE_DIR", "TF_CLI_CONFIG_FILE"] as const;

/**
 * What of {@link ENGINE_PATH_VARIABLES} the engine sees, read-only: shared by every job, so no
 * job can plant a provider that a later job runs.
 */
function enginePaths(settings: JobSettings, isFork: boolean): string[] {
  if (isFork) {
    return [];
  }
  return ENGINE_PATH_VARIABLES.filter((name) => isForwarded(name, settings.envForward))
    .map((name) => settings.hostEnv[name])
    .filter((value): value is string => value !== undefined && path.isAbsolute(value));
}

/**
 * The agent host's own git settings that name files or sockets (CA bundles, a global config, the
 * SSH agent): git runs with the host's environment, so it must see them (read-only) wherever
 * they are, also under the host's /tmp, which the sandbox replaces.
 */
const HOST_GIT_PATH_VARIABLES = [
  "GIT_SSL_CAINFO",
  "GIT_SSL_CAPATH",
  "SSL_CERT_FILE",
  "SSL_CERT_DIR",
  "GIT_CONFIG_GLOBAL",
  "SSH_AUTH_SOCK",
] as const;

function hostGitPaths(hostEnv: NodeJS.ProcessEnv): string[] {
  return HOST_GIT_PATH_VARIABLES.map((name) => hostEnv[name]).filter(
    (value): value is string => value !== undefined && path.isAbsolute(value),
  );
}

function existing(paths: string[]): string[] {
  return [...new Set(paths.map((p) => path.resolve(p)))].filter((p) => existsSync(p));
}
