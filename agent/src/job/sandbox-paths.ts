/**
 * Which host paths a job's sandbox shows, as rules a job's PATH and its "command not found"
 * diagnosis share. The sandbox shows the host read-only but replaces some directories with
 * empty ones (the agent's home, data and hooks directories, and /tmp): a directory of the job's
 * PATH under one of those is shown read-only again, unless showing it would show what the
 * sandbox hides on purpose (the agent's data directory, its token or config file).
 */
import { existsSync, lstatSync, readdirSync, realpathSync } from "node:fs";
import path from "node:path";

/**
 * A directory the sandbox replaces with an empty one, and how a sentence names it (a noun
 * phrase: "the agent's home (/home/outpost)").
 */
export type Shadow = { dir: string; why: string };

/** A path the sandbox must never show, also not through a directory of PATH that holds it. */
export type Protected = { path: string; what: string };

/** A PATH directory left hidden, and why. */
export type Withheld = { dir: string; why: string };

/** Entries of one PATH directory looked at for symlinks (a bound on the work per job). */
const MAX_ENTRIES = 500;

/** True when `child` is `parent` or inside it. */
export function isInside(child: string, parent: string): boolean {
  const relative = path.relative(parent, child);
  return relative === "" || (!relative.startsWith("..") && !path.isAbsolute(relative));
}

function realOrNull(p: string): string | null {
  try {
    return realpathSync(p);
  } catch {
    return null;
  }
}

/**
 * The directories of `searchPath` the sandbox must bind read-only so the job sees them (and,
 * for a symlinked directory or a symlinked executable in one, where it really is), and the ones
 * it leaves hidden with why. Directories outside every shadow are visible already and are not
 * listed. One is withheld when it is inside or holds a protected path, or is a shadowed
 * directory itself (the agent's home as a whole).
 */
export function pathExposure(input: {
  searchPath: string;
  shadows: readonly Shadow[];
  protect: readonly Protected[];
}): { shown: string[]; withheld: Withheld[] } {
  const shown = new Set<string>();
  const withheld = new Map<string, string>();
  const consider = (dir: string, asked: string) => {
    const shadow = input.shadows.find((s) => isInside(dir, s.dir));
    if (shadow === undefined || shown.has(dir)) {
      return;
    }
    const refusal = refusalOf(dir, shadow, input.protect);
    if (refusal !== null) {
      withheld.set(asked, refusal);
      return;
    }
    shown.add(dir);
  };
  for (const dir of input.searchPath.split(path.delimiter)) {
    if (!path.isAbsolute(dir) || !existsSync(dir)) {
      continue;
    }
    const resolved = path.resolve(dir);
    const real = realOrNull(resolved);
    for (const candidate of new Set([resolved, ...(real === null ? [] : [real])])) {
      consider(candidate, resolved);
    }
    if (real !== null && shown.has(real)) {
      for (const target of symlinkTargets(real)) {
        consider(target, resolved);
      }
    }
  }
  return {
    shown: [...shown],
    withheld: [...withheld].map(([dir, why]) => ({ dir, why })),
  };
}

function refusalOf(dir: string, shadow: Shadow, protect: readonly Protected[]): string | null {
  const inside = protect.find((p) => isInside(dir, p.path));
  if (inside !== undefined) {
    return `inside ${inside.what}`;
  }
  const holds = protect.find((p) => isInside(p.path, dir));
  if (holds !== undefined) {
    return `it holds ${holds.what}`;
  }
  return path.resolve(dir) === path.resolve(shadow.dir) ? `it is ${shadow.why} itself` : null;
}

/** The real directories of the symlinked executables in `dir` (nvm's, pipx's links). */
function symlinkTargets(dir: string): string[] {
  let names: string[];
  try {
    names = readdirSync(dir).slice(0, MAX_ENTRIES);
  } catch {
    return [];
  }
  const targets = new Set<string>();
  for (const name of names) {
    const entry = path.join(dir, name);
    try {
      if (lstatSync(entry).isSymbolicLink()) {
        const real = realOrNull(entry);
        if (real !== null) {
          targets.add(path.dirname(real));
        }
      }
    } catch {
      // Gone meanwhile.
    }
  }
  targets.delete(dir);
  return [...targets];
}

/**
 * Why the sandbox does not show `file` (a host path), or null when it does: a protected file
 * is hidden whatever binds it; otherwise a file under a shadow is shown only through a bind.
 */
export function hiddenBecause(
  file: string,
  layout: { shadows: readonly Shadow[]; binds: readonly string[]; hiddenFiles: readonly string[] },
): string | null {
  const candidates = [path.resolve(file), realOrNull(file)].filter((p): p is string => p !== null);
  for (const p of candidates) {
    if (layout.hiddenFiles.some((f) => path.resolve(f) === p)) {
      return `${p} is one of the agent's own files`;
    }
    const shadow = layout.shadows.find((s) => isInside(p, s.dir));
    if (shadow !== undefined && !layout.binds.some((b) => isInside(p, b))) {
      return `${p} is inside ${shadow.why}`;
    }
  }
  return null;
}
