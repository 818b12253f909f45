/**
 * The agent's VCS feedback loop (only when it holds VCS tokens): every interval the coordinator
 * gives, claim the pool's feedback for the hosts it holds tokens for (host names only), post each
 * item with that host's token ({@link postFeedback}), and report the outcome, which the run then
 * shows. A failed claim or report waits for the next round; it never disturbs jobs.
 */
import type { FeedbackItem } from "@outpost/protocol";
import type { AgentApi } from "../client/agent-api.ts";
import { TransientError } from "../errors.ts";
import type { Logger } from "../logger.ts";
import { sleep } from "../sleep.ts";
import { type PostOptions, type PostOutcome, postFeedback } from "./poster.ts";
import type { VcsToken } from "./tokens.ts";

/** Until the coordinator names an interval. */
const DEFAULT_INTERVAL_MS = 5_000;

export type FeedbackLoopDeps = {
  api: Pick<AgentApi, "id" | "claimFeedback" | "reportFeedback">;
  tokens: readonly VcsToken[];
  logger: Logger;
  /** Aborted when the agent stops. */
  signal: AbortSignal;
  post?: PostOptions;
};

/** Runs until `signal` aborts; resolves then. */
export async function runFeedbackLoop(deps: FeedbackLoopDeps): Promise<void> {
  const hosts = [...new Set(deps.tokens.map((t) => t.host))];
  let intervalMs = DEFAULT_INTERVAL_MS;
  while (!deps.signal.aborted) {
    await sleep(intervalMs, deps.signal);
    if (deps.signal.aborted || deps.api.id === null) {
      continue;
    }
    try {
      const answer = await deps.api.claimFeedback(hosts);
      intervalMs = answer.pollIntervalSeconds * 1000;
      for (const item of answer.items) {
        await postAndReport(deps, item);
      }
    } catch (error) {
      if (!(error instanceof TransientError)) {
        deps.logger.warn({ err: errorText(error) }, "VCS feedback: claim failed; retrying later");
      }
    }
  }
}

async function postAndReport(deps: FeedbackLoopDeps, item: FeedbackItem): Promise<void> {
  const host = safeHost(item.apiUrl);
  const token = deps.tokens.find((t) => t.host === host);
  const outcome: PostOutcome =
    token === undefined
      ? { posted: false, message: `this agent holds no token for ${host ?? item.apiUrl}` }
      : await postFeedback(item, token.token, {
          ...deps.post,
          signal: deps.signal,
        });
  if (deps.signal.aborted) {
    // Stopping: the claim lapses and another agent of the pool posts it.
    return;
  }
  const fields = { runId: item.runId, kind: item.kind, host: host ?? item.apiUrl };
  if (outcome.posted) {
    deps.logger.info(fields, `VCS feedback posted: ${item.kind}`);
  } else {
    deps.logger.warn({ ...fields, err: outcome.message }, `VCS feedback not posted: ${item.kind}`);
  }
  try {
    await deps.api.reportFeedback(
      item.id,
      outcome.posted ? { posted: true } : { posted: false, message: outcome.message },
    );
  } catch (error) {
    deps.logger.warn({ ...fields, err: errorText(error) }, "VCS feedback: report failed");
  }
}

function safeHost(apiUrl: string): string | null {
  try {
    return new URL(apiUrl).host.toLowerCase();
  } catch {
    return null;
  }
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
