/**
 * Job directories under `<data-dir>/jobs`: one per job, named after it, each with an owner file
 * next to it (`<dir>.owner`, outside the directory a sandboxed job can write) that lists the pids
 * of the agent that made it and of the watchdogs of its processes. A directory whose owners
 * are all gone was left by a dead agent.
 */
import { appendFileSync } from "node:fs";
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import path from "node:path";

const OWNER_SUFFIX = ".owner";

export type JobDir = {
  /** The job's directory: everything the job writes is in it. */
  root: string;
  /** Its owner file (pids, one a line). */
  ownerFile: string;
};

/** A fresh, empty directory for `jobId`, owned by this process. */
export async function createJobDir(dataDir: string, jobId: string): Promise<JobDir> {
  const jobsDir = path.join(dataDir, "jobs");
  await mkdir(jobsDir, { recursive: true, mode: 0o700 });
  const root = await mkdtemp(path.join(jobsDir, `${jobId.replace(/[^\w-]/g, "_")}-`));
  const ownerFile = `${root}${OWNER_SUFFIX}`;
  await writeFile(ownerFile, `${process.pid}\n`, { mode: 0o600 });
  return { root, ownerFile };
}

/** Records a watchdog of one of the job's processes: the directory is in use while it lives. */
export function recordOwner(dir: JobDir, pid: number): void {
  appendFileSync(dir.ownerFile, `${pid}\n`);
}

/** Removes the job's directory and then its owner file. */
export async function removeJobDir(dir: JobDir): Promise<void> {
  await rm(dir.root, { recursive: true, force: true });
  await rm(dir.ownerFile, { force: true });
}

export type StaleDirs = {
  /** Removed: every owner is gone (or the directory has no owner file). */
  removed: string[];
  /** Kept: an owner still runs (another agent on this data dir, a watchdog still stopping). */
  inUse: { dir: string; pids: number[] }[];
};

/**
 * At start: removes the job directories (and owner files) a dead agent left behind, so no
 * job is ever resumed and no secret it held stays on disk. A directory is left alone while any
 * process listed in its owner file still runs, other than this one (pids repeat across
 * container restarts).
 */
export async function removeStaleJobDirs(
  dataDir: string,
  isAlive: (pid: number) => boolean = isProcessAlive,
): Promise<StaleDirs> {
  const jobsDir = path.join(dataDir, "jobs");
  let entries: string[];
  try {
    entries = await readdir(jobsDir);
  } catch {
    return { removed: [], inUse: [] };
  }
  const result: StaleDirs = { removed: [], inUse: [] };
  const names = new Set(
    entries.map((e) => (e.endsWith(OWNER_SUFFIX) ? e.slice(0, -OWNER_SUFFIX.length) : e)),
  );
  for (const name of names) {
    const root = path.join(jobsDir, name);
    const owners = await readOwners(`${root}${OWNER_SUFFIX}`);
    const alive = owners.filter((pid) => pid !== process.pid && isAlive(pid));
    if (alive.length > 0) {
      result.inUse.push({ dir: root, pids: alive });
      continue;
    }
    await removeJobDir({ root, ownerFile: `${root}${OWNER_SUFFIX}` });
    if (entries.includes(name)) {
      result.removed.push(root);
    }
  }
  return result;
}

async function readOwners(file: string): Promise<number[]> {
  try {
    const text = await readFile(file, "utf8");
    return text
      .split("\n")
      .map((line) => Number(line.trim()))
      .filter((pid) => Number.isInteger(pid) && pid > 0);
  } catch {
    return [];
  }
}

/** True while a process with this pid exists (also one of another user). */
export function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}
