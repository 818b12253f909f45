/**
 * The agent's health server and metrics as pieces: request operations, the readiness rule on
 * an injected clock, the HTTP endpoints on a loopback port, the request and job instruments,
 * and `promtool check metrics` on what the registry writes. The real agent process serving
 * them is in test/e2e/agent-metrics.test.ts.
 */
import { createServer } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { UserError } from "../../agent/src/errors.ts";
import type { JobHandle } from "../../agent/src/job/runner.ts";
import type { EngineReady, JobResult } from "../../agent/src/job/types.ts";
import { createLogger } from "../../agent/src/logger.ts";
import { AgentMetrics } from "../../agent/src/metrics/agent-metrics.ts";
import { AgentHealth } from "../../agent/src/metrics/health.ts";
import { operationOf, pollWaitMs } from "../../agent/src/metrics/operations.ts";
import { type HealthServer, startHealthServer } from "../../agent/src/metrics/server.ts";
import {
  meteredStartJob,
  observeRequests,
  watchRegistration,
} from "../../agent/src/metrics/wiring.ts";
import { promtool } from "./helpers/promtool.ts";

const logger = createLogger({ level: "fatal", json: true, destination: { write: () => {} } });
const REGISTRATION = { agentId: "agt_a", poolId: "pool_p", unknownAfterSeconds: 30 };

function clock(start = 1_000_000) {
  const c = { ms: start, now: () => c.ms };
  return c;
}

/** The value of one sample of the registry's text exposition, or undefined. */
function sample(text: string, series: string): number | undefined {
  const line = text.split("\n").find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

describe("operationOf: a fixed label per agent API route, never an id", () => {
  it.each([
    ["POST", "/agent/v1/register", "register"],
    ["POST", "/agent/v1/jobs/next?wait=50", "jobs_next"],
    ["POST", "/agent/v1/jobs/run_1%3Aplan/leases/lease_2/start", "start"],
    ["POST", "/agent/v1/heartbeat", "heartbeat"],
    ["PUT", "/agent/v1/jobs/run_1%3Aplan/leases/lease_2/logs?offset=10", "logs"],
    ["POST", "/agent/v1/jobs/run_1%3Aplan/leases/lease_2/finish", "finish"],
    ["POST", "/agent/v1/goodbye", "goodbye"],
    ["GET", "/agent/v1/jobs/run_1%3Aplan/configuration", "configuration"],
    ["PUT", "/agent/v1/jobs/run_1%3Aplan/artifacts/plan.tfplan", "artifact_upload"],
    ["GET", "/agent/v1/jobs/run_1%3Aapply/artifacts/plan.tfplan", "artifact_download"],
    ["GET", "/state/v1/ws_1", "state_read"],
    ["POST", "/state/v1/ws_1", "state_write"],
    ["POST", "/agent/v1/oidc/exchange", "oidc_exchange"],
    ["GET", "/agent/v1/release", "release"],
    ["GET", "/agent/v1/releases/0.2.0/outpost-agent.mjs", "release"],
    ["GET", "/agent/v1/register", "other"],
    ["DELETE", "/api/v1/anything/ws_secret", "other"],
  ])("%s %s is %s", (method, path, operation) => {
    expect(operationOf(method, path)).toBe(operation);
  });

  it("reads the long-poll's wait from its query", () => {
    expect(pollWaitMs("/agent/v1/jobs/next?wait=50")).toBe(50_000);
    expect(pollWaitMs("/agent/v1/jobs/next")).toBe(0);
    expect(pollWaitMs("/agent/v1/jobs/next?wait=nope")).toBe(0);
  });
});

describe("AgentHealth: ready while registered and in contact within the pool's unknown threshold", () => {
  it("is not ready before registering, after a goodbye, or once stopping", () => {
    const c = clock();
    const health = new AgentHealth(c.now);
    expect(health.readiness()).toEqual({
      isReady: false,
      reason: "not registered with the coordinator",
    });
    health.registered(REGISTRATION);
    expect(health.readiness()).toEqual({
      isReady: true,
      reason: "registered as agt_a in pool_p; last contact 0 s ago",
    });
    health.left();
    expect(health.readiness().isReady).toBe(false);
    health.registered(REGISTRATION);
    health.stopping();
    expect(health.readiness()).toEqual({ isReady: false, reason: "shutting down" });
  });

  it("turns unready past the threshold without contact, and ready again on an answer", () => {
    const c = clock();
    const health = new AgentHealth(c.now);
    health.registered(REGISTRATION);
    c.ms += 30_000;
    expect(health.readiness().isReady).toBe(true);
    c.ms += 1;
    expect(health.readiness()).toEqual({
      isReady: false,
      reason:
        "no contact with the coordinator for 30 s; the pool calls an agent unknown after 30 s",
    });
    health.contacted();
    expect(health.readiness().isReady).toBe(true);
    expect(health.lastContact()).toBe(c.ms);
  });

  it("counts a held long-poll as contact until its wait ends, as the coordinator does", () => {
    const c = clock();
    const health = new AgentHealth(c.now);
    health.registered(REGISTRATION);
    const ended = health.pollSent(50_000);
    c.ms += 45_000;
    expect(health.readiness().isReady).toBe(true);
    expect(health.lastContact()).toBe(c.ms);
    // Held past its wait: the answer is overdue, contact stopped when the hold should have.
    c.ms += 40_000;
    expect(health.lastContact()).toBe(1_000_000 + 50_000);
    expect(health.readiness().isReady).toBe(false);
    ended();
    expect(health.lastContact()).toBe(1_000_000 + 50_000);
    // A poll cut off early (the coordinator went away) was contact until it was cut.
    const cut = health.pollSent(50_000);
    c.ms += 5_000;
    cut();
    expect(health.lastContact()).toBe(c.ms);
    c.ms += 30_001;
    expect(health.readiness().isReady).toBe(false);
  });
});

describe("the health server", () => {
  let server: HealthServer | null = null;
  afterEach(async () => {
    await server?.close();
    server = null;
  });

  async function start(health: AgentHealth, metrics: AgentMetrics) {
    server = await startHealthServer({
      address: { host: "127.0.0.1", port: 0 },
      metrics,
      health,
      logger,
    });
    return server.url;
  }

  it("answers /healthz, /readyz (503 with the reason, then 200) and /metrics", async () => {
    const health = new AgentHealth();
    const metrics = new AgentMetrics({ version: "9.9.9", capacity: 2, health });
    const url = await start(health, metrics);
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const alive = await fetch(`${url}/healthz`);
    expect([alive.status, await alive.text()]).toEqual([200, "ok\n"]);
    const notYet = await fetch(`${url}/readyz`);
    expect([notYet.status, await notYet.text()]).toEqual([
      503,
      "not registered with the coordinator\n",
    ]);
    health.registered(REGISTRATION);
    const ready = await fetch(`${url}/readyz?verbose=1`);
    expect(ready.status).toBe(200);
    expect(await ready.text()).toMatch(/^registered as agt_a in pool_p; last contact/);
    const scraped = await fetch(`${url}/metrics`);
    expect(scraped.status).toBe(200);
    expect(scraped.headers.get("content-type")).toBe("text/plain; version=0.0.4; charset=utf-8");
    const text = await scraped.text();
    expect(sample(text, 'outpost_agent_info{version="9.9.9"}')).toBe(1);
    expect(sample(text, "outpost_agent_capacity")).toBe(2);
    expect(sample(text, "outpost_agent_ready")).toBe(1);
    expect(sample(text, "process_start_time_seconds")).toBeGreaterThan(0);
  });

  it("answers HEAD without a body, 405 for other methods and 404 for other paths", async () => {
    const health = new AgentHealth();
    const url = await start(health, new AgentMetrics({ version: "1.0.0", capacity: 1, health }));
    const head = await fetch(`${url}/healthz`, { method: "HEAD" });
    expect([head.status, await head.text()]).toEqual([200, ""]);
    const post = await fetch(`${url}/metrics`, { method: "POST", body: "x".repeat(1000) });
    expect(post.status).toBe(405);
    expect(post.headers.get("allow")).toBe("GET, HEAD");
    const other = await fetch(`${url}/api/v1/pools`);
    expect(other.status).toBe(404);
    expect(await other.text()).not.toContain("api/v1");
  });

  it("refuses an address already in use with a UserError naming it", async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, "127.0.0.1", resolve));
    const address = taken.address();
    const port = typeof address === "object" && address !== null ? address.port : 0;
    const health = new AgentHealth();
    try {
      const failed = startHealthServer({
        address: { host: "127.0.0.1", port },
        metrics: new AgentMetrics({ version: "1.0.0", capacity: 1, health }),
        health,
        logger,
      });
      await expect(failed).rejects.toThrow(UserError);
      await expect(failed).rejects.toThrow(
        `metrics address 127.0.0.1:${port}: cannot listen (EADDRINUSE)`,
      );
    } finally {
      await new Promise((resolve) => taken.close(resolve));
    }
  });
});

describe("the instruments", () => {
  it("times requests by operation and status, holds polls as contact, and skips abandoned ones", async () => {
    const c = clock(0);
    const health = new AgentHealth(() => 5_000 + c.ms);
    health.registered(REGISTRATION);
    const metrics = new AgentMetrics({ version: "1.0.0", capacity: 1, health });
    const observe = observeRequests(metrics, health, c.now);

    const poll = observe({ method: "POST", path: "/agent/v1/jobs/next?wait=50" });
    c.ms += 40_000;
    expect(health.readiness().isReady).toBe(true);
    poll(204);
    const finish = observe({ method: "POST", path: "/agent/v1/jobs/j/leases/l/finish" });
    c.ms += 250;
    finish(200);
    const abandoned = observe({ method: "POST", path: "/agent/v1/jobs/next?wait=50" });
    abandoned("aborted");
    const lost = observe({ method: "POST", path: "/agent/v1/register" });
    lost("failed");
    // A poll refused before it reached the coordinator was never held: no contact.
    c.ms += 20_000;
    const refused = observe({ method: "POST", path: "/agent/v1/jobs/next?wait=50" });
    refused("unreachable");
    const down = observe({ method: "POST", path: "/agent/v1/heartbeat" });
    c.ms += 11_000;
    down(503);

    const text = (await metrics.text()).body;
    expect(sample(text, 'outpost_agent_poll_duration_seconds_count{code="204"}')).toBe(1);
    expect(sample(text, 'outpost_agent_poll_duration_seconds_sum{code="204"}')).toBe(40);
    expect(
      sample(text, 'outpost_agent_request_duration_seconds_sum{operation="finish",code="200"}'),
    ).toBe(0.25);
    expect(
      sample(
        text,
        'outpost_agent_request_duration_seconds_count{operation="heartbeat",code="503"}',
      ),
    ).toBe(1);
    expect(
      sample(
        text,
        'outpost_agent_request_duration_seconds_count{operation="register",code="error"}',
      ),
    ).toBe(1);
    expect(sample(text, 'outpost_agent_poll_duration_seconds_count{code="error"}')).toBe(1);
    expect(text).not.toContain('code="aborted"');
    // Neither the refused poll nor the 503 was contact: the last one was the finish, 31 s before.
    expect(health.readiness().isReady).toBe(false);
    expect(sample(text, "outpost_agent_ready")).toBe(0);
  });

  it("counts a job while it runs, its engine install, then its ending and duration", async () => {
    const c = clock(0);
    const health = new AgentHealth();
    const metrics = new AgentMetrics({ version: "1.0.0", capacity: 1, health });
    let end: (outcome: JobResult) => void = () => {};
    const fakeStart = (
      _assignment: unknown,
      _port: unknown,
      settings: { onEngineReady?: (ready: EngineReady) => void },
    ): JobHandle => {
      settings.onEngineReady?.({ engine: "tofu", source: "cache", seconds: 0.02 });
      return {
        done: new Promise<JobResult>((resolve) => {
          end = resolve;
        }),
        cancel: () => {},
      };
    };
    const start = meteredStartJob(fakeStart, metrics, c.now);
    const handle = start(
      { phase: "apply" } as Parameters<typeof start>[0],
      {} as Parameters<typeof start>[1],
      {} as Parameters<typeof start>[2],
    );
    let text = (await metrics.text()).body;
    expect(sample(text, 'outpost_agent_jobs_running{phase="apply"}')).toBe(1);
    expect(
      sample(
        text,
        'outpost_agent_engine_install_duration_seconds_bucket{le="0.05",engine="tofu",source="cache"}',
      ),
    ).toBe(1);
    c.ms += 90_000;
    end({ outcome: "failed", message: "x", exitCode: 1, planSummary: null, logLength: 0 });
    await handle.done;
    text = (await metrics.text()).body;
    expect(sample(text, 'outpost_agent_jobs_running{phase="apply"}')).toBe(0);
    expect(sample(text, 'outpost_agent_jobs_finished_total{phase="apply",outcome="failed"}')).toBe(
      1,
    );
    expect(
      sample(
        text,
        'outpost_agent_job_duration_seconds_bucket{le="120",phase="apply",outcome="failed"}',
      ),
    ).toBe(1);
    expect(
      sample(
        text,
        'outpost_agent_job_duration_seconds_bucket{le="60",phase="apply",outcome="failed"}',
      ),
    ).toBe(0);
  });

  it("tells health of registrations and goodbyes passing through the loop's API", async () => {
    const health = new AgentHealth();
    const answer = {
      agentId: "agt_b",
      poolId: "pool_q",
      heartbeatIntervalSeconds: 10,
      pollWaitSeconds: 50,
      leaseStartTimeoutSeconds: 30,
      unknownAfterSeconds: 45,
      agentVersion: null,
    };
    const api = watchRegistration(
      {
        register: async () => answer,
        next: async () => null,
        start: async () => ({ jobId: "j", leaseId: "l", state: "started" as const }),
        heartbeat: async () => ({ cancel: [], exit: null, heartbeatIntervalSeconds: 10 }),
        finish: async () => {
          throw new Error("not called");
        },
        goodbye: async () => ({ agentId: "agt_b", status: "exited" as const }),
      },
      health,
    );
    await api.register({
      version: "1.0.0",
      os: "linux",
      arch: "x64",
      capacity: 1,
      acceptedPhases: ["plan"],
    });
    expect(health.readiness().reason).toMatch(/^registered as agt_b in pool_q/);
    await api.goodbye("done");
    expect(health.readiness().reason).toBe("not registered with the coordinator");
  });

  it("writes an exposition `promtool check metrics` accepts", async () => {
    const health = new AgentHealth();
    health.registered(REGISTRATION);
    const metrics = new AgentMetrics({
      version: "1.0.0",
      capacity: 1,
      health,
      updateState: () => "pending",
    });
    metrics.jobStarted("plan");
    metrics.jobEnded("plan", "succeeded", 12);
    metrics.requestDone("logs", "200", 0.02);
    metrics.requestDone("jobs_next", "204", 50);
    metrics.engineInstalled("terraform", "download", 3.5);
    const text = (await metrics.text()).body;
    expect(sample(text, 'outpost_agent_update_state{state="pending"}')).toBe(1);
    expect(sample(text, 'outpost_agent_update_state{state="current"}')).toBe(0);
    const checked = await promtool(["check", "metrics"], { stdin: text });
    expect(checked, checked.output).toEqual({ code: 0, output: "" });
  });
});
