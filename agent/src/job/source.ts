import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";
import { mkdir, realpath, stat } from "node:fs/promises";
import path from "node:path";
import { pipeline } from "node:stream/promises";
import { extract, type ReadEntry } from "tar";

/** A configuration that cannot be used; the job fails with this message. */
export class ConfigurationError extends Error {
  override name = "ConfigurationError";
}

const ALLOWED_TYPES = new Set(["File", "OldFile", "ContiguousFile", "Directory"]);
const MAX_ENTRIES = 100_000;

/** Hex SHA-256 of a file, streamed. */
export async function sha256File(file: string): Promise<string> {
  const hash = createHash("sha256");
  await pipeline(createReadStream(file), hash);
  return hash.digest("hex");
}

/**
 * Checks `archive` against `expectedSha256`, then extracts it into `dest` with node-tar in
 * strict mode: owners not preserved, only regular files and directories (symbolic and hard
 * links, devices and FIFOs are dropped), no absolute or `..` paths (refused), and at most
 * `maxBytes` of content. Throws {@link ConfigurationError} for anything it refuses; `dest`
 * is then left for the caller to delete with the job dir. Returns the names of dropped links.
 */
export async function extractConfiguration(input: {
  archive: string;
  expectedSha256: string;
  dest: string;
  maxBytes: number;
}): Promise<{ droppedLinks: string[] }> {
  const { size } = await stat(input.archive);
  if (size > input.maxBytes) {
    throw new ConfigurationError(
      `configuration archive is ${size} bytes, over the ${input.maxBytes} limit`,
    );
  }
  const actual = await sha256File(input.archive);
  if (actual !== input.expectedSha256.toLowerCase()) {
    throw new ConfigurationError(
      `configuration archive sha256 ${actual} does not match the expected ${input.expectedSha256}`,
    );
  }
  await mkdir(input.dest, { recursive: true });
  let total = 0;
  let entries = 0;
  let refusal: string | null = null;
  const droppedLinks: string[] = [];
  const filter = (entryPath: string, entry: ReadEntry | { type?: string; size?: number }) => {
    const type = "type" in entry ? String(entry.type) : "File";
    entries += 1;
    if (entries > MAX_ENTRIES) {
      refusal ??= `configuration archive has more than ${MAX_ENTRIES} entries`;
      return false;
    }
    if (path.isAbsolute(entryPath) || entryPath.split(/[\\/]/).includes("..")) {
      refusal ??= `configuration archive entry "${entryPath}" points outside the configuration`;
      return false;
    }
    if (!ALLOWED_TYPES.has(type)) {
      if (type === "SymbolicLink" || type === "Link") {
        droppedLinks.push(entryPath);
      }
      return false;
    }
    total += entry.size ?? 0;
    if (total > input.maxBytes) {
      refusal ??= `configuration archive expands to more than ${input.maxBytes} bytes`;
      return false;
    }
    return refusal === null;
  };
  try {
    await extract({
      file: input.archive,
      cwd: input.dest,
      strict: true,
      preserveOwner: false,
      preservePaths: false,
      filter,
    });
  } catch (error) {
    throw new ConfigurationError(
      `configuration archive cannot be extracted: ${(error as Error).message}`,
    );
  }
  if (refusal !== null) {
    throw new ConfigurationError(refusal);
  }
  return { droppedLinks };
}

/**
 * The directory to run the engine in: `workingDirectory` under `root`. Throws
 * {@link ConfigurationError} if it escapes `root` (by `..`, an absolute path or a symlink) or
 * is not a directory.
 */
export async function resolveWorkingDirectory(
  root: string,
  workingDirectory: string,
): Promise<string> {
  const realRoot = await realpath(root);
  const candidate = path.resolve(realRoot, workingDirectory);
  const inside = (p: string) => p === realRoot || p.startsWith(`${realRoot}${path.sep}`);
  if (path.isAbsolute(workingDirectory) || !inside(candidate)) {
    throw new ConfigurationError(
      `working directory "${workingDirectory}" is outside the configuration`,
    );
  }
  let resolved: string;
  try {
    resolved = await realpath(candidate);
  } catch {
    throw new ConfigurationError(
      `working directory "${workingDirectory}" does not exist in the configuration`,
    );
  }
  if (!inside(resolved)) {
    throw new ConfigurationError(
      `working directory "${workingDirectory}" is outside the configuration`,
    );
  }
  if (!(await stat(resolved)).isDirectory()) {
    throw new ConfigurationError(`working directory "${workingDirectory}" is not a directory`);
  }
  return resolved;
}
