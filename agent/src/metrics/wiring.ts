import type { AgentApi } from "../client/agent-api.ts";
import type { RequestObserver } from "../client/http.ts";
import type { startJob } from "../job/runner.ts";
import type { AgentMetrics } from "./agent-metrics.ts";
import type { AgentHealth } from "./health.ts";
import { operationOf, pollWaitMs } from "./operations.ts";

export type LoopApi = Pick<
  AgentApi,
  "register" | "next" | "start" | "heartbeat" | "finish" | "goodbye"
>;

/**
 * Times every coordinator request into `metrics` and tells `health` of the coordinator's
 * answers (5xx come from proxies as often as from the coordinator, so they are not contact)
 * and of the long-polls it holds (a poll that never reached it was never held). A request the
 * agent itself abandoned (a shutdown) is not counted as a failure.
 */
export function observeRequests(
  metrics: AgentMetrics,
  health: AgentHealth,
  now: () => number = performance.now.bind(performance),
): RequestObserver {
  return ({ method, path }) => {
    const operation = operationOf(method, path);
    const started = now();
    const pollEnded = operation === "jobs_next" ? health.pollSent(pollWaitMs(path)) : null;
    return (outcome) => {
      pollEnded?.(outcome !== "unreachable");
      if (typeof outcome === "number" && outcome < 500) {
        health.contacted();
      }
      if (outcome !== "aborted") {
        const code = typeof outcome === "number" ? String(outcome) : "error";
        metrics.requestDone(operation, code, (now() - started) / 1000);
      }
    };
  };
}

/**
 * The agent loop's API, telling `health` when the agent registered (with the pool's unknown
 * threshold) and when it said goodbye. Every call is passed through unchanged.
 */
export function watchRegistration(api: LoopApi, health: AgentHealth): LoopApi {
  return {
    register: async (body) => {
      const answer = await api.register(body);
      health.registered(answer);
      return answer;
    },
    next: (waitSeconds, signal) => api.next(waitSeconds, signal),
    start: (jobId, leaseId) => api.start(jobId, leaseId),
    heartbeat: (running) => api.heartbeat(running),
    finish: (jobId, leaseId, body) => api.finish(jobId, leaseId, body),
    goodbye: async (reason) => {
      const answer = await api.goodbye(reason);
      health.left();
      return answer;
    },
  };
}

/**
 * `start`, counting each job while it runs, its ending, duration and phase once it ends, and
 * how long its engine took to be ready.
 */
export function meteredStartJob(
  start: typeof startJob,
  metrics: AgentMetrics,
  now: () => number = performance.now.bind(performance),
): typeof startJob {
  return (assignment, port, settings) => {
    const handle = start(assignment, port, {
      ...settings,
      onEngineReady: (ready) => metrics.engineInstalled(ready.engine, ready.source, ready.seconds),
    });
    const phase = assignment.phase;
    const started = now();
    metrics.jobStarted(phase);
    const seconds = () => (now() - started) / 1000;
    handle.done.then(
      (result) => metrics.jobEnded(phase, result.outcome, seconds()),
      () => metrics.jobEnded(phase, "errored", seconds()),
    );
    return handle;
  };
}
