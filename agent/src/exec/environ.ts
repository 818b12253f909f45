/**
 * Erasing values from this process's initial environment block. `delete process.env.X` only
 * unlinks the variable from libc's `environ`; the bytes the kernel copied at `execve` stay in
 * place, and `/proc/<pid>/environ` (readable by any process of the same user) shows them for the
 * process's whole life. On Linux this overwrites them through `/proc/self/mem`.
 */
import { closeSync, openSync, readFileSync, readSync, writeSync } from "node:fs";

/** `env_start` and `env_end` are fields 50 and 51 of /proc/<pid>/stat (proc(5)). */
const ENV_START_FIELD = 50;

/** What {@link eraseInitialEnvironment} did. */
export type EraseResult =
  | { erased: string[] }
  | { erased: []; unsupported: string }
  | { erased: []; failed: string };

/**
 * Overwrites with NUL bytes the values of `names` in this process's initial environment block,
 * so `/proc/self/environ` shows `NAME=` and nothing of the value. Call it only once the values
 * were read and removed from `process.env`: nothing may still point at those bytes. Variables
 * set after the start are not in that block and not touched. Never throws.
 */
export function eraseInitialEnvironment(
  names: readonly string[],
  platform: NodeJS.Platform = process.platform,
): EraseResult {
  if (platform !== "linux") {
    return { erased: [], unsupported: `no /proc/self/mem on ${platform}` };
  }
  let fd: number | null = null;
  try {
    const { start, end } = environmentBounds();
    const block = Buffer.alloc(end - start);
    fd = openSync("/proc/self/mem", "r+");
    readSync(fd, block, 0, block.length, start);
    const erased: string[] = [];
    for (const name of names) {
      for (const value of valueRanges(block, name)) {
        writeSync(fd, Buffer.alloc(value.length), 0, value.length, start + value.offset);
        erased.push(name);
      }
    }
    return { erased: [...new Set(erased)] };
  } catch (error) {
    return { erased: [], failed: (error as Error).message };
  } finally {
    if (fd !== null) {
      closeSync(fd);
    }
  }
}

function environmentBounds(): { start: number; end: number } {
  const stat = readFileSync("/proc/self/stat", "utf8");
  // The command name (field 2) is in parentheses and may hold spaces: count from after it.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const start = Number(fields[ENV_START_FIELD - 3]);
  const end = Number(fields[ENV_START_FIELD - 2]);
  if (!Number.isSafeInteger(start) || !Number.isSafeInteger(end) || end <= start) {
    throw new Error("/proc/self/stat shows no environment block");
  }
  return { start, end };
}

/** Where the values of `NAME=value` entries sit in the NUL-separated block. */
function valueRanges(block: Buffer, name: string): { offset: number; length: number }[] {
  const prefix = Buffer.from(`${name}=`);
  const ranges: { offset: number; length: number }[] = [];
  let at = block.indexOf(prefix);
  while (at !== -1) {
    if (at === 0 || block[at - 1] === 0) {
      const offset = at + prefix.length;
      const nul = block.indexOf(0, offset);
      const length = (nul === -1 ? block.length : nul) - offset;
      if (length > 0) {
        ranges.push({ offset, length });
      }
    }
    at = block.indexOf(prefix, at + 1);
  }
  return ranges;
}
