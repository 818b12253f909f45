import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { formatListenAddress, type ListenAddress } from "../config/listen-address.ts";
import { UserError } from "../errors.ts";
import type { Logger } from "../logger.ts";
import type { AgentMetrics } from "./agent-metrics.ts";
import type { AgentHealth } from "./health.ts";

/** The running health server: where it listens, and how to stop it. */
export type HealthServer = { url: string; close(): Promise<void> };

/** Slow or idle clients are cut off: the endpoints answer from memory in microseconds. */
const REQUEST_TIMEOUT_MS = 10_000;

/**
 * Serves `GET /metrics` (Prometheus text format), `GET /healthz` (200 while the process runs)
 * and `GET /readyz` (200 when {@link AgentHealth.readiness} says ready, else 503; the body says
 * why) on `address`, without authentication: bind it where only the scraper and the kubelet
 * reach it. Other paths answer 404, other methods 405; no request body is read and nothing from
 * the request is echoed. Rejects with a {@link UserError} when the address cannot be bound.
 */
export async function startHealthServer(options: {
  address: ListenAddress;
  metrics: AgentMetrics;
  health: AgentHealth;
  logger: Logger;
}): Promise<HealthServer> {
  const server = createServer((req, res) => {
    answer(req, res, options).catch((error: unknown) => {
      options.logger.error({ err: String(error) }, "the metrics endpoint failed");
      if (!res.headersSent) {
        reply(res, 500, "text/plain; charset=utf-8", "internal error\n");
      } else {
        res.destroy();
      }
    });
  });
  server.requestTimeout = REQUEST_TIMEOUT_MS;
  server.headersTimeout = REQUEST_TIMEOUT_MS;
  server.keepAliveTimeout = 5_000;
  const where = formatListenAddress(options.address);
  await new Promise<void>((resolve, reject) => {
    server.once("error", (error: NodeJS.ErrnoException) => {
      reject(
        new UserError(`metrics address ${where}: cannot listen (${error.code ?? error.message})`),
      );
    });
    server.listen(options.address.port, options.address.host, () => resolve());
  });
  const bound = server.address() as AddressInfo;
  const url = `http://${formatListenAddress({ host: bound.address, port: bound.port })}`;
  options.logger.info({ url }, "serving /metrics, /healthz and /readyz");
  return {
    url,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

async function answer(
  req: IncomingMessage,
  res: ServerResponse,
  o: { metrics: AgentMetrics; health: AgentHealth },
): Promise<void> {
  const path = (req.url ?? "/").split("?")[0];
  if (path !== "/metrics" && path !== "/healthz" && path !== "/readyz") {
    reply(res, 404, "text/plain; charset=utf-8", "not found: try /metrics, /healthz or /readyz\n");
    return;
  }
  if (req.method !== "GET" && req.method !== "HEAD") {
    res.setHeader("allow", "GET, HEAD");
    reply(res, 405, "text/plain; charset=utf-8", "method not allowed\n");
    return;
  }
  if (path === "/metrics") {
    const { contentType, body } = await o.metrics.text();
    reply(res, 200, contentType, body);
  } else if (path === "/healthz") {
    reply(res, 200, "text/plain; charset=utf-8", "ok\n");
  } else {
    const readiness = o.health.readiness();
    reply(res, readiness.isReady ? 200 : 503, "text/plain; charset=utf-8", `${readiness.reason}\n`);
  }
}

function reply(res: ServerResponse, status: number, contentType: string, body: string): void {
  res.writeHead(status, {
    "content-type": contentType,
    "content-length": Buffer.byteLength(body),
    "cache-control": "no-store",
    "x-content-type-options": "nosniff",
  });
  res.end(res.req.method === "HEAD" ? undefined : body);
}
