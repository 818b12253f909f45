/**
 * The real agent process with `--metrics-address` against the real coordinator: `/healthz`,
 * `/readyz` through registration, a coordinator outage past the pool's unknown threshold and a
 * SIGTERM drain, and `/metrics` after a run (from the built single-file agent, as shipped),
 * checked by `promtool check metrics`.
 */
import { createServer } from "node:net";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { EXIT_CODES } from "../../agent/src/exit-codes.ts";
import { promtool } from "../node/helpers/promtool.ts";
import { createWorkspace, queueRun, uploadConfiguration, waitForRun } from "./helpers/e2e.ts";
import { type AgentProcess, exitWithin } from "./helpers/processes.ts";
import { useWorld } from "./helpers/world.ts";

/** The pool's unknown threshold here: the smallest a pool takes, so the outage test is short. */
const UNKNOWN_AFTER_SECONDS = 10;

const world = useWorld({ pool: { unknownAfterSeconds: UNKNOWN_AFTER_SECONDS } });
afterEach(async () => {
  await Promise.all(world.processes.map((agent) => agent.stop(15_000)));
});

/** The agent as shipped: esbuild's single file, prom-client bundled in (global setup builds it). */
const BUILT_AGENT = path.resolve(import.meta.dirname, "../../agent/dist/outpost-agent.mjs");

function agentWith(args: string[], env: Record<string, string> = {}, bin?: string): AgentProcess {
  return world.startAgent({ args, env, ...(bin ? { bin } : {}) });
}

/** The URL the agent says it serves its health endpoints on (it was given port 0). */
async function healthUrl(agent: AgentProcess): Promise<string> {
  await agent.waitForOutput(/serving \/metrics, \/healthz and \/readyz \{"url":"http:[^"]+"\}/);
  const match = /serving \/metrics, \/healthz and \/readyz \{"url":"(http:[^"]+)"\}/.exec(
    agent.output(),
  );
  if (!match?.[1]) {
    throw new Error(`no metrics URL in:\n${agent.output()}`);
  }
  return match[1];
}

async function get(url: string): Promise<{ status: number; text: string }> {
  const res = await fetch(url);
  return { status: res.status, text: await res.text() };
}

/** One sample's value in a Prometheus text exposition, or undefined when absent. */
function sample(text: string, series: string): number | undefined {
  const line = text.split("\n").find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

const resource = (name: string) => `resource "null_resource" "${name}" {}\n`;

describe("the agent's health server", () => {
  it("is alive at once, ready once registered, and counts a run's job, requests and polls", async () => {
    const agent = agentWith(["--metrics-address", "127.0.0.1:0"], {}, BUILT_AGENT);
    const url = await healthUrl(agent);
    expect(await get(`${url}/healthz`)).toEqual({ status: 200, text: "ok\n" });
    await expect
      .poll(() => get(`${url}/readyz`), { timeout: 20_000, interval: 100 })
      .toMatchObject({ status: 200 });
    const ready = await get(`${url}/readyz`);
    expect(ready.text).toMatch(
      new RegExp(
        `^registered as agt_[a-z2-7]{26} in ${world.poolId}; last contact [\\d.]+ s ago\n$`,
      ),
    );

    const ws = await createWorkspace(world, "metrics-run");
    await uploadConfiguration(world, ws, { "main.tf": resource("a") });
    const runId = await queueRun(world, ws, { operation: "plan" });
    expect((await waitForRun(world, runId, ["planned_and_finished", "errored"])).status).toBe(
      "planned_and_finished",
    );
    // The finish's own answer is timed once its headers are back: the run may be ahead of it.
    const finished = 'outpost_agent_request_duration_seconds_count{operation="finish",code="200"}';
    await expect
      .poll(async () => sample((await get(`${url}/metrics`)).text, finished), { timeout: 10_000 })
      .toBe(1);
    const { status, text } = await get(`${url}/metrics`);
    expect(status).toBe(200);
    expect(
      sample(text, 'outpost_agent_jobs_finished_total{phase="plan",outcome="succeeded"}'),
    ).toBe(1);
    expect(
      sample(text, 'outpost_agent_job_duration_seconds_count{phase="plan",outcome="succeeded"}'),
    ).toBe(1);
    expect(sample(text, 'outpost_agent_jobs_running{phase="plan"}')).toBe(0);
    for (const [operation, code] of [
      ["register", "201"],
      ["start", "200"],
      ["configuration", "200"],
      ["logs", "200"],
      ["artifact_upload", "200"],
    ]) {
      const series = `outpost_agent_request_duration_seconds_count{operation="${operation}",code="${code}"}`;
      expect(sample(text, series) ?? 0, `${series} in\n${text}`).toBeGreaterThanOrEqual(1);
    }
    // The world's mirror served the engine: a verified download, the first time.
    expect(
      sample(
        text,
        'outpost_agent_engine_install_duration_seconds_count{engine="terraform",source="download"}',
      ),
    ).toBe(1);
    // The job was handed over a held long-poll.
    expect(sample(text, 'outpost_agent_poll_duration_seconds_count{code="200"}')).toBe(1);
    const lastContact = sample(text, "outpost_agent_last_contact_timestamp_seconds") ?? 0;
    expect(Math.abs(Date.now() / 1000 - lastContact)).toBeLessThan(30);
    expect(sample(text, "outpost_agent_ready")).toBe(1);
    expect(sample(text, 'outpost_agent_update_state{state="current"}')).toBe(1);
    expect(text).not.toContain(world.agentToken);
    expect(text).not.toContain(runId);

    const checked = await promtool(["check", "metrics"], { stdin: text });
    expect(checked, checked.output).toEqual({ code: 0, output: "" });
  });

  it("turns unready once the coordinator is gone past the pool's unknown threshold, and ready when it is back", {
    timeout: 120_000,
  }, async () => {
    const agent = agentWith(["--metrics-address", "127.0.0.1:0"]);
    const url = await healthUrl(agent);
    await expect
      .poll(() => get(`${url}/readyz`), { timeout: 20_000, interval: 100 })
      .toMatchObject({ status: 200 });
    await world.coordinator.stop();
    try {
      // The threshold has not passed: the poll the coordinator held was contact until now.
      expect((await get(`${url}/readyz`)).status).toBe(200);
      await expect
        .poll(() => get(`${url}/readyz`), {
          timeout: (UNKNOWN_AFTER_SECONDS + 15) * 1000,
          interval: 250,
        })
        .toMatchObject({ status: 503 });
      expect((await get(`${url}/readyz`)).text).toMatch(
        /^no contact with the coordinator for [\d.]+ s; the pool calls an agent unknown after 10 s\n$/,
      );
      expect((await get(`${url}/healthz`)).status).toBe(200);
    } finally {
      await world.coordinator.restart();
    }
    await expect
      .poll(() => get(`${url}/readyz`), { timeout: 30_000, interval: 250 })
      .toMatchObject({ status: 200 });
  });

  it("says shutting down while a SIGTERM drains a job, stays alive, then exits 0", async () => {
    const agent = agentWith(["--metrics-address", "127.0.0.1:0"]);
    const url = await healthUrl(agent);
    await agent.waitForOutput(/registered/);
    const ws = await createWorkspace(world, "metrics-drain", {
      env: { STANDIN_PLAN_SLEEP_MS: "4000" },
    });
    await uploadConfiguration(world, ws, { "main.tf": resource("b") });
    const runId = await queueRun(world, ws, { operation: "plan" });
    await waitForRun(world, runId, ["planning"]);
    await agent.waitForOutput(/job started/);
    agent.kill("SIGTERM");
    await agent.waitForOutput(/shutting down/);
    expect(await get(`${url}/readyz`)).toEqual({ status: 503, text: "shutting down\n" });
    expect((await get(`${url}/healthz`)).status).toBe(200);
    const running = sample(
      (await get(`${url}/metrics`)).text,
      'outpost_agent_jobs_running{phase="plan"}',
    );
    expect(running).toBe(1);
    expect(await exitWithin(agent, 30_000)).toEqual({ code: EXIT_CODES.ok, signal: null });
    expect((await waitForRun(world, runId, ["planned_and_finished", "errored"])).status).toBe(
      "planned_and_finished",
    );
    await expect(fetch(`${url}/healthz`)).rejects.toThrow();
  });

  it("answers /readyz 503 while it cannot register, and /healthz 200", async () => {
    const closed = await freePort();
    const agent = agentWith(["--metrics-address", "127.0.0.1:0"], {
      OUTPOST_ADDRESS: `http://127.0.0.1:${closed}`,
    });
    const url = await healthUrl(agent);
    await agent.waitForOutput(/lost contact with the coordinator/);
    expect(await get(`${url}/readyz`)).toEqual({
      status: 503,
      text: "not registered with the coordinator\n",
    });
    expect((await get(`${url}/healthz`)).status).toBe(200);
  });

  it("is off by default, and an address in use stops the agent with exit code 2", async () => {
    const quiet = agentWith([]);
    await quiet.waitForOutput(/outpost-agent starting/);
    expect(quiet.output()).toContain('"metrics":"off"');
    expect(quiet.output()).not.toContain("serving /metrics");

    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, "127.0.0.1", resolve));
    try {
      const address = taken.address();
      const port = typeof address === "object" && address !== null ? address.port : 0;
      const agent = agentWith(["--metrics-address", `127.0.0.1:${port}`]);
      expect(await exitWithin(agent, 20_000)).toEqual({
        code: EXIT_CODES.badConfig,
        signal: null,
      });
      expect(agent.output()).toContain(
        `outpost-agent: metrics address 127.0.0.1:${port}: cannot listen (EADDRINUSE)`,
      );
    } finally {
      await new Promise((resolve) => taken.close(resolve));
    }
  });
});

/** A loopback port nothing listens on (taken, then released). */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  return typeof address === "object" && address !== null ? address.port : 0;
}
