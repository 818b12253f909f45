import type { AgentApi } from "./client/agent-api.ts";
import { isAgentUnknown } from "./client/agent-api.ts";
import { ExitRequest, TransientError } from "./errors.ts";
import type { Logger } from "./logger.ts";
import { toldToExit } from "./loop-outcomes.ts";
import { errorText, type RunningJobs } from "./running-jobs.ts";
import { sleep } from "./sleep.ts";

export type HeartbeatDeps = {
  api: Pick<AgentApi, "heartbeat">;
  logger: Logger;
  running: RunningJobs;
  /** Aborted when heartbeats stop (the agent is leaving). */
  signal: AbortSignal;
  intervalMs(): number;
  /** The coordinator sets the interval with every answer. */
  setIntervalMs(ms: number): void;
  /** True while a long-poll is held: it counts as contact, so an idle agent stays quiet. */
  isPolling(): boolean;
  /** True once the agent takes no more work. */
  isStopping(): boolean;
  end(request: ExitRequest): void;
  register(): Promise<boolean>;
};

/**
 * Heartbeats every interval the coordinator gives while jobs run (or no poll is held), listing
 * every running job; relays cancel requests to the jobs and turns an `exit` instruction or a
 * refused token into the agent's end. An unknown agent registers again. Transient failures
 * wait for the next interval (the client logs an outage once).
 */
export async function runHeartbeats(deps: HeartbeatDeps): Promise<void> {
  while (!deps.signal.aborted) {
    await sleep(deps.intervalMs(), deps.signal);
    if (deps.signal.aborted || (deps.running.size === 0 && deps.isPolling())) {
      continue;
    }
    await heartbeat(deps);
  }
}

async function heartbeat(deps: HeartbeatDeps): Promise<void> {
  const log = deps.logger;
  try {
    const answer = await deps.api.heartbeat(deps.running.list());
    deps.setIntervalMs(answer.heartbeatIntervalSeconds * 1000);
    for (const request of answer.cancel) {
      if (deps.running.cancel(request.jobId, request.leaseId, request.mode === "force")) {
        log.info({ jobId: request.jobId, mode: request.mode }, `cancel: ${request.reason}`);
      }
    }
    if (answer.exit !== null) {
      deps.end(await toldToExit(deps.api, deps.running.list(), answer.exit.reason));
    }
  } catch (error) {
    if (error instanceof ExitRequest) {
      deps.end(error);
    } else if (isAgentUnknown(error) && !deps.isStopping()) {
      log.warn("heartbeat: the coordinator does not know this agent; registering again");
      await deps.register().catch((e: unknown) => {
        if (e instanceof ExitRequest) {
          deps.end(e);
        }
      });
    } else if (!(error instanceof TransientError)) {
      log.warn({ err: errorText(error) }, "heartbeat failed; retrying next interval");
    }
  }
}
