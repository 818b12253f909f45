import { CoordinatorError, ProtocolError } from "../client/http.ts";
import { TransientError } from "../errors.ts";

/**
 * Exit codes of `outpost`, for CI scripts. A value never changes meaning once shipped
 * (documented in agent/README.md).
 */
export const CLI_EXIT = {
  /** Done: the run applied, or planned without changes, or the command succeeded. */
  ok: 0,
  /** The run errored (or an unexpected error in the CLI itself). */
  runErrored: 1,
  /** Bad usage: unknown command or flag, missing argument, not logged in. */
  usage: 2,
  /** The run was canceled, force-canceled or discarded. */
  runCanceled: 3,
  /** The coordinator refused the request, or could not be reached. */
  requestFailed: 4,
  /** Interrupted with Ctrl-C while following. */
  interrupted: 130,
} as const;

export type CliExitCode = (typeof CLI_EXIT)[keyof typeof CLI_EXIT];

/** A mistake on the command line; printed as one line with a hint, exit 2. */
export class UsageError extends Error {
  override name = "UsageError";
}

/** Where the CLI's token came from, so a refusal's hint says what to fix. */
export type TokenSource = "environment" | "login";

/** Maps a thrown value to the exit code and the one line (or stack, for bugs) to print. */
export function describeCliError(
  error: unknown,
  tokenSource: TokenSource = "login",
): { exitCode: CliExitCode; text: string } {
  if (error instanceof UsageError) {
    return { exitCode: CLI_EXIT.usage, text: `outpost: ${error.message}` };
  }
  if (error instanceof CoordinatorError) {
    return { exitCode: CLI_EXIT.requestFailed, text: `outpost: ${refusal(error, tokenSource)}` };
  }
  if (error instanceof TransientError || error instanceof ProtocolError) {
    return { exitCode: CLI_EXIT.requestFailed, text: `outpost: ${error.message}` };
  }
  const text = error instanceof Error ? (error.stack ?? error.message) : String(error);
  return { exitCode: CLI_EXIT.runErrored, text: `outpost: unexpected error\n${text}` };
}

function refusal(error: CoordinatorError, tokenSource: TokenSource): string {
  // "POST /api/v1/x answered 404 NOT_FOUND: workspace y not found" → the coordinator's words.
  const words = error.message.replace(/^\S+ \S+ answered \d+ [A-Z_0-9]+: /, "");
  if (error.status === 401) {
    return tokenSource === "environment"
      ? `${words} (the token comes from OUTPOST_TOKEN: set it to a valid org token, or unset it to use your \`outpost login\`)`
      : `${words} (log in again with \`outpost login\`)`;
  }
  return words;
}
