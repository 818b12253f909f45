/**
 * How an unsandboxed job process's watchdog becomes a child subreaper (prctl
 * `PR_SET_CHILD_SUBREAPER`): a process of the job that leaves its process group and session
 * (`setsid`, a daemon's double fork) is then re-parented to the watchdog instead of init, so the
 * watchdog still finds it among its descendants and kills it with the rest (`watchdog-main.ts`).
 *
 * Node cannot call prctl itself, so a tiny launcher sets the flag and then `exec`s the watchdog
 * (the flag survives `execve`): perl (part of every Debian and Ubuntu, and of the agent's
 * container image) through its `syscall`, else python3 through ctypes. Neither present: there is
 * no subreaper, and the agent says so when it starts with `--isolation none`.
 */
import { spawnSync } from "node:child_process";
import { accessSync, constants } from "node:fs";
import { arch } from "node:os";
import path from "node:path";

const PR_SET_CHILD_SUBREAPER = 36;

/** prctl(2)'s system call number, per Node's name of the architecture (perl needs it). */
const PRCTL_SYSCALL: Partial<Record<string, number>> = {
  x64: 157,
  arm64: 167,
  riscv64: 167,
  loong64: 167,
  arm: 172,
  ia32: 172,
  s390x: 172,
  ppc64: 171,
};

/** A command that makes itself a subreaper and then runs its arguments in its place. */
export type SubreaperLauncher = {
  /** What it is, for the agent's start message ("perl", "python3"). */
  via: string;
  command: string;
  /** The launcher's own arguments; the program to run and its arguments follow. */
  args: string[];
};

function candidates(): SubreaperLauncher[] {
  const found: SubreaperLauncher[] = [];
  const number = PRCTL_SYSCALL[arch()];
  if (number !== undefined) {
    const script = `syscall(${number}, ${PR_SET_CHILD_SUBREAPER}, 1, 0, 0, 0) == 0 or die "prctl: $!\\n"; exec { $ARGV[0] } @ARGV or die "exec $ARGV[0]: $!\\n";`;
    found.push({ via: "perl", command: "perl", args: ["-e", script, "--"] });
  }
  const python = [
    "import ctypes, os, sys",
    "libc = ctypes.CDLL(None, use_errno=True)",
    `if libc.prctl(${PR_SET_CHILD_SUBREAPER}, 1, 0, 0, 0) != 0: sys.exit("prctl: " + os.strerror(ctypes.get_errno()))`,
    "os.execv(sys.argv[1], sys.argv[1:])",
  ].join("\n");
  found.push({ via: "python3", command: "python3", args: ["-c", python] });
  return found;
}

/**
 * `name` in the agent's PATH, or null. Relative entries (an empty one means the working
 * directory) are skipped: the launcher must not be whatever a directory happens to hold.
 */
function onPath(name: string): string | null {
  for (const dir of (process.env.PATH ?? "/usr/bin:/bin").split(":")) {
    if (!path.isAbsolute(dir)) {
      continue;
    }
    const file = path.join(dir, name);
    try {
      accessSync(file, constants.X_OK);
      return file;
    } catch {
      // Not here.
    }
  }
  return null;
}

let chosen: SubreaperLauncher | null | undefined;

/**
 * The first launcher that works here (tried once: it must set the flag and exec Node), or null
 * when none does. Linux only: elsewhere there is no subreaper.
 */
export function subreaperLauncher(): SubreaperLauncher | null {
  if (chosen !== undefined) {
    return chosen;
  }
  chosen = null;
  if (process.platform !== "linux") {
    return chosen;
  }
  for (const candidate of candidates()) {
    const command = onPath(candidate.command);
    if (command === null) {
      continue;
    }
    const launcher = { ...candidate, command };
    // A failing prctl or exec makes the launcher exit non-zero: the answer proves both.
    const ran = spawnSync(
      command,
      [...launcher.args, process.execPath, "-e", "console.log('ok')"],
      {
        encoding: "utf8",
        timeout: 10_000,
        env: {},
      },
    );
    if (ran.status === 0 && ran.stdout === "ok\n") {
      chosen = launcher;
      break;
    }
  }
  return chosen;
}
