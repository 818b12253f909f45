/** How the agent loop reads refusals and endings it does not retry. */
import type { RunningJob } from "@outpost/protocol";
import type { AgentApi } from "./client/agent-api.ts";
import { CoordinatorError, ProtocolError } from "./client/http.ts";
import { ExitRequest, TransientError, UserError } from "./errors.ts";
import { EXIT_CODES } from "./exit-codes.ts";
import type { JobHandle } from "./job/runner.ts";
import type { JobResult } from "./job/types.ts";

/** Retrying through protocol errors too: a proxy page or a half-deployed coordinator passes. */
export function isPassing(error: unknown): boolean {
  return error instanceof TransientError || error instanceof ProtocolError;
}

/**
 * The exit request for an `exit` instruction. Revoking a token makes the coordinator tell its
 * agents to exit; one more call tells that apart (401 TOKEN_REVOKED), so scripts see exit
 * code 3 for a revoked token and 4 for everything else.
 */
export async function toldToExit(
  api: Pick<AgentApi, "heartbeat">,
  running: RunningJob[],
  reason: string,
): Promise<ExitRequest> {
  try {
    await api.heartbeat(running);
  } catch (error) {
    if (error instanceof ExitRequest) {
      return error;
    }
  }
  return new ExitRequest(
    `the coordinator told this agent to exit: ${reason}`,
    EXIT_CODES.toldToExit,
  );
}

/**
 * What a refused registration means. 410: the pool was deleted (exit 4). Any other refusal
 * (a 404 from a route: the address is not an Outpost coordinator's base URL) is a setting to
 * fix (exit 2), never reported as a deleted pool.
 */
export function registrationRefused(error: unknown): unknown {
  if (!(error instanceof CoordinatorError)) {
    return error;
  }
  if (error.status === 410) {
    return new ExitRequest("the agent pool of this token was deleted", EXIT_CODES.toldToExit);
  }
  if (error.status === 404 || error.status === 405) {
    return new UserError(
      `${error.message}: OUTPOST_ADDRESS does not point at an Outpost coordinator (give its base URL, e.g. https://outpost.example.com)`,
    );
  }
  return error;
}

/** A job the agent cannot run (unreadable spec, no token): it ends at once as failed. */
export function refusedJob(reason: string): JobHandle {
  const result: JobResult = {
    outcome: "failed",
    message: reason,
    exitCode: null,
    planSummary: null,
    logLength: 0,
  };
  return { done: Promise.resolve(result), cancel: () => {} };
}
