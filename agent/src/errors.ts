import { EXIT_CODES, type ExitCode } from "./exit-codes.ts";

/**
 * A mistake the operator can fix (bad flag, missing token, unreadable file). Printed as one
 * line without a stack; the process exits with {@link EXIT_CODES.badConfig}.
 */
export class UserError extends Error {
  override name = "UserError";
}

/**
 * A failure that is expected to go away (network error, 429, 5xx). Callers retry it with the
 * retry helper (`retry.ts`); `retryAfter` carries the `Retry-After` header value, if any.
 */
export class TransientError extends Error {
  override name = "TransientError";
  readonly retryAfter: string | null;

  constructor(message: string, options: { retryAfter?: string | null; cause?: unknown } = {}) {
    super(message, { cause: options.cause });
    this.retryAfter = options.retryAfter ?? null;
  }
}

/** The agent must stop with a specific exit code (token revoked, told to exit by coordinator). */
export class ExitRequest extends Error {
  override name = "ExitRequest";
  readonly exitCode: ExitCode;

  constructor(message: string, exitCode: ExitCode) {
    super(message);
    this.exitCode = exitCode;
  }
}

/**
 * Maps any thrown value to the exit code and the text to print. User errors and exit requests
 * get one line; anything else is a bug and keeps its stack so it can be reported.
 */
export function describeFatal(error: unknown): { exitCode: ExitCode; text: string } {
  if (error instanceof UserError) {
    return { exitCode: EXIT_CODES.badConfig, text: `outpost-agent: ${error.message}` };
  }
  if (error instanceof ExitRequest) {
    return { exitCode: error.exitCode, text: `outpost-agent: ${error.message}` };
  }
  const text = error instanceof Error ? (error.stack ?? error.message) : String(error);
  return { exitCode: EXIT_CODES.bug, text: `outpost-agent: unexpected error\n${text}` };
}
