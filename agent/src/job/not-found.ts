/**
 * "Command not found", explained: which command a failed job process could not find (from what
 * the shell, `env`, Go, Node or bubblewrap printed), where the job looked (its PATH), and
 * whether it exists on the host but the sandbox hid it.
 */
import { accessSync, constants, statSync } from "node:fs";
import path from "node:path";

/** How each common runtime says a command is missing; the command is the first group. */
const NOT_FOUND = [
  // sh (dash): "sh: 1: node: not found"; bash: "bash: node: command not found"; a script's:
  // "./wrapper: line 3: node: command not found" or "./wrapper: 3: node: not found".
  /^[^\n]*?:(?: line)? ?\d*:? ?([^\s:'"]+): (?:command )?not found\s*$/gm,
  // coreutils env: "/usr/bin/env: 'node': No such file or directory" (‘node’ in a UTF-8
  // locale); busybox and BSD: "env: node: No such file or directory".
  /\benv: ['‘]?([^'‘’\s:]+)['’]?: No such file or directory/g,
  // Go's exec.LookPath, as the pulumi language hosts report it.
  /exec: "([^"]+)": executable file not found in \$PATH/g,
  // bubblewrap could not start the command itself.
  /bwrap: execvp ([^:\s]+): No such file or directory/g,
  // Node's child_process.
  /\bspawn (\S+) ENOENT/g,
];

/** Exit status of a shell whose command was not found. */
export const NOT_FOUND_EXIT = 127;

/** The last command `output` says was not found, or null. */
export function missingCommand(output: string): string | null {
  let last: { command: string; at: number } | null = null;
  for (const pattern of NOT_FOUND) {
    for (const match of output.matchAll(pattern)) {
      const command = match[1];
      if (command !== undefined && (last === null || match.index >= last.at)) {
        last = { command, at: match.index };
      }
    }
  }
  return last?.command ?? null;
}

function isExecutableFile(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return statSync(file).isFile();
  } catch {
    return false;
  }
}

/**
 * A sentence about `command`, which a job process could not find: where it looked (`searchPath`,
 * the job's PATH), where the host has it, and whether the sandbox hides that (`hiddenBecause`
 * answers why a host path is not shown, or null).
 */
export function explainNotFound(
  command: string,
  searchPath: string,
  hiddenBecause: (file: string) => string | null,
): string {
  const head = `command not found: ${command}`;
  if (command.includes("/")) {
    if (!path.isAbsolute(command) || !isExecutableFile(command)) {
      return `${head}; no such executable on this host either`;
    }
    const hidden = hiddenBecause(command);
    return hidden === null
      ? `${head}; it exists on this host and the sandbox shows it: check what it runs in turn`
      : `${head}; it exists on this host but the sandbox hides it: ${hidden}`;
  }
  const dirs = searchPath.split(path.delimiter).filter((d) => path.isAbsolute(d));
  const where = `the job's PATH is ${dirs.join(path.delimiter) || "(empty)"}`;
  const found = dirs.map((d) => path.join(d, command)).find(isExecutableFile);
  if (found === undefined) {
    return `${head}; ${where}, and none of those directories has it on this host either: install it there, or start the agent with its directory on PATH`;
  }
  const hidden = hiddenBecause(found);
  return hidden === null
    ? `${head}; ${where}; the host has it at ${found}, which the sandbox shows: check what it runs in turn`
    : `${head}; ${where}; the host has it at ${found}, but the sandbox hides it: ${hidden}`;
}
