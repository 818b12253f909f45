/**
 * Job sandboxes with bubblewrap (Linux): which isolation an agent runs with, and the `bwrap`
 * command line for one job process. Nothing here runs on other systems: there `auto` means
 * `none` and `bwrap` is refused at start.
 */
import { execFile } from "node:child_process";
import { accessSync, constants } from "node:fs";
import path from "node:path";
import { promisify } from "node:util";
import { UserError } from "../errors.ts";

const execFileAsync = promisify(execFile);

/** What `--isolation` accepts. */
export const ISOLATION_SETTINGS = ["auto", "bwrap", "none"] as const;
export type IsolationSetting = (typeof ISOLATION_SETTINGS)[number];
/** What an agent runs with once `auto` is decided. */
export type IsolationMode = "bwrap" | "none";

/**
 * Every sandbox: its own mount, PID, IPC, UTS (and, where the kernel has it, cgroup) namespace;
 * a new session (no terminal to push input into); no capabilities, even for root; killed
 * with its watchdog. Unprivileged bubblewrap adds a user namespace by itself. The network is
 * the host's: engines and providers need it.
 */
const NAMESPACES = [
  "--die-with-parent",
  "--new-session",
  "--unshare-pid",
  "--unshare-ipc",
  "--unshare-uts",
  "--unshare-cgroup-try",
  "--cap-drop",
  "ALL",
];

/** The host read-only, a fresh /dev and /proc (only the sandbox's processes), a private /tmp. */
const BASE = ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"];

export type BubblewrapProbe = { ok: true; bwrap: string } | { ok: false; reason: string };

/**
 * Whether bubblewrap can build this agent's sandboxes here: installed, on Linux, and allowed to
 * create the namespaces (user namespaces, /proc). The reason says what to fix.
 */
export async function probeBubblewrap(
  searchPath = process.env.PATH ?? "",
  platform: NodeJS.Platform = process.platform,
): Promise<BubblewrapProbe> {
  if (platform !== "linux") {
    return { ok: false, reason: `bubblewrap sandboxes need Linux; this host runs ${platform}` };
  }
  const bwrap = findExecutable("bwrap", searchPath);
  if (bwrap === null) {
    return {
      ok: false,
      reason: "bubblewrap (bwrap) is not installed: install the bubblewrap package",
    };
  }
  try {
    await execFileAsync(bwrap, [...NAMESPACES, ...BASE, "--", "/bin/sh", "-c", ":"], {
      timeout: 15_000,
      env: {},
    });
    return { ok: true, bwrap };
  } catch (error) {
    const stderr = String((error as { stderr?: unknown }).stderr ?? "").trim();
    return { ok: false, reason: explainFailure(stderr || (error as Error).message) };
  }
}

/** bubblewrap's refusals, with what usually causes each. */
function explainFailure(text: string): string {
  if (/setting up uid map: Permission denied/i.test(text)) {
    return `${text} (unprivileged user namespaces are restricted, e.g. Ubuntu's kernel.apparmor_restrict_unprivileged_userns=1: load the bwrap-userns-restrict AppArmor profile or allow them)`;
  }
  if (/(creating new namespace|No permissions to create)/i.test(text)) {
    return `${text} (user namespaces are disabled, e.g. user.max_user_namespaces=0, or a container's seccomp profile blocks them)`;
  }
  if (/Can't mount proc/i.test(text)) {
    return `${text} (/proc is masked, as in an unprivileged container)`;
  }
  return text;
}

function findExecutable(name: string, searchPath: string): string | null {
  for (const dir of searchPath.split(path.delimiter)) {
    if (!path.isAbsolute(dir)) {
      continue;
    }
    const candidate = path.join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // Not here.
    }
  }
  return null;
}

/** The isolation an agent runs with, and why it has none when `auto` found no bubblewrap. */
export type ResolvedIsolation =
  | { mode: "bwrap"; bwrap: string }
  | { mode: "none"; unavailable: string | null };

/**
 * Decides `--isolation`: `none` as asked; `bwrap` only if the probe passes (else a
 * {@link UserError} saying why, so the agent does not start); `auto` bubblewrap when the probe
 * passes, otherwise `none` with the reason (the caller warns once).
 */
export async function resolveIsolation(
  setting: IsolationSetting,
  probe: () => Promise<BubblewrapProbe> = () => probeBubblewrap(),
): Promise<ResolvedIsolation> {
  if (setting === "none") {
    return { mode: "none", unavailable: null };
  }
  const result = await probe();
  if (result.ok) {
    return { mode: "bwrap", bwrap: result.bwrap };
  }
  if (setting === "bwrap") {
    throw new UserError(`--isolation bwrap: job sandboxes cannot be built: ${result.reason}`);
  }
  return { mode: "none", unavailable: result.reason };
}

/** What one job process may see, as host paths (the sandbox shows each at the same path). */
export type SandboxLayout = {
  /** Directories replaced by an empty, read-only one (the agent's data, other jobs' files). */
  hiddenDirs: string[];
  /** Files replaced by an empty one (the agent's token and config files). */
  hiddenFiles: string[];
  /** Shown read-only, also inside a hidden directory (the engine, CA bundles, hooks). */
  readOnly: string[];
  /** Shown writable (the job's own directory). */
  writable: string[];
  cwd: string;
};

/**
 * The `bwrap` arguments, up to `--`, for a process laid out as `layout`. Hidden directories are
 * mounted shallowest first and every bind comes after them, so a path shown inside a hidden
 * directory shows through; the hidden directories are then made read-only. Every path must
 * exist.
 */
export function bubblewrapArgs(layout: SandboxLayout): string[] {
  const args = [...NAMESPACES, ...BASE];
  for (const dir of byDepth(layout.hiddenDirs)) {
    args.push("--tmpfs", dir);
  }
  for (const file of layout.hiddenFiles) {
    args.push("--ro-bind", "/dev/null", file);
  }
  const binds = [
    ...layout.readOnly.map((p) => ({ path: p, flag: "--ro-bind" })),
    ...layout.writable.map((p) => ({ path: p, flag: "--bind" })),
  ].sort((a, b) => depth(a.path) - depth(b.path));
  for (const bind of binds) {
    args.push(bind.flag, bind.path, bind.path);
  }
  // Empty and read-only: nothing written there could pass for the agent's own files.
  for (const dir of layout.hiddenDirs) {
    args.push("--remount-ro", dir);
  }
  args.push("--chdir", layout.cwd);
  return args;
}

function depth(p: string): number {
  return path.resolve(p).split(path.sep).length;
}

function byDepth(paths: string[]): string[] {
  return [...paths].sort((a, b) => depth(a) - depth(b));
}
