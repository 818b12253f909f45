/**
 * Process exit codes of `outpost-agent`. Scripts and service managers branch on these, so a
 * value never changes meaning once shipped (documented in agent/README.md).
 */
export const EXIT_CODES = {
  /** `--single` finished its one job (whatever the job's outcome), or a clean shutdown. */
  ok: 0,
  /** A bug: an unexpected error, printed with its stack. */
  bug: 1,
  /** Bad or missing configuration (env, flags or config file): one line on stderr. */
  badConfig: 2,
  /** The coordinator answered that the agent token is revoked (or unknown). */
  tokenRevoked: 3,
  /** The coordinator told the agent to exit (e.g. it was marked errored while away). */
  toldToExit: 4,
} as const;

export type ExitCode = (typeof EXIT_CODES)[keyof typeof EXIT_CODES];
