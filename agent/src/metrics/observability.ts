import type { RequestObserver } from "../client/http.ts";
import type { ListenAddress } from "../config/listen-address.ts";
import { startJob } from "../job/runner.ts";
import type { Logger } from "../logger.ts";
import type { UpdateState } from "../update/updater.ts";
import { AgentMetrics } from "./agent-metrics.ts";
import { AgentHealth } from "./health.ts";
import { startHealthServer } from "./server.ts";
import { type LoopApi, meteredStartJob, observeRequests, watchRegistration } from "./wiring.ts";

/** What the agent plugs into its clients and loop so its health server sees them. */
export type Observability = {
  /** Where `/metrics`, `/healthz` and `/readyz` are served. */
  url: string;
  /** For every HTTP target of the agent (agent API, job ports, OIDC exchanges). */
  observe: RequestObserver;
  /** The loop's API, watched for registrations and goodbyes. */
  loopApi(api: LoopApi): LoopApi;
  /** The job runner, counted. */
  startJob: typeof startJob;
  /** A shutdown began: `/readyz` says so from now on. */
  stopping(): void;
  close(): Promise<void>;
};

/**
 * Starts the health server on `address` with fresh metrics (nothing when `address` is null:
 * `--metrics-address` is off by default). Rejects with a UserError when it cannot listen.
 */
export async function startObservability(options: {
  address: ListenAddress | null;
  version: string;
  capacity: number;
  updateState: () => UpdateState;
  logger: Logger;
}): Promise<Observability | null> {
  if (options.address === null) {
    return null;
  }
  const health = new AgentHealth();
  const metrics = new AgentMetrics({
    version: options.version,
    capacity: options.capacity,
    health,
    updateState: options.updateState,
  });
  const server = await startHealthServer({
    address: options.address,
    metrics,
    health,
    logger: options.logger,
  });
  return {
    url: server.url,
    observe: observeRequests(metrics, health),
    loopApi: (api) => watchRegistration(api, health),
    startJob: meteredStartJob(startJob, metrics),
    stopping: () => health.stopping(),
    close: () => server.close(),
  };
}
