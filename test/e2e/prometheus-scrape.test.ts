/**
 * A real Prometheus scrapes the real coordinator (`GET /metrics` with an organization's reader
 * token, negotiated to OpenMetrics as Prometheus asks) and a real agent (`--metrics-address`) on
 * loopback; its query API shows the queued-jobs series follow the queue up and back down, and the
 * run, job and agent series that the runs leave. promtool checks both of the coordinator's
 * exposition formats as served.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../../scripts/local-coordinator.ts";
import { promtool } from "../node/helpers/promtool.ts";
import {
  createWorkspace,
  expectStatus,
  queueRun,
  uploadConfiguration,
  waitForRun,
} from "./helpers/e2e.ts";
import { PrometheusServer } from "./helpers/prometheus.ts";
import { useWorld } from "./helpers/world.ts";

/** What Prometheus 2.x asks for when it scrapes. */
const PROMETHEUS_ACCEPT =
  "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
const RUNS = 3;

const world = useWorld();
let readerToken: string;
let agentPort: number;
const prometheus = new PrometheusServer();

beforeAll(async () => {
  const reader = await expectStatus(
    world.api("POST", "/api/v1/tokens", { role: "reader", description: "prometheus" }),
    201,
  );
  readerToken = String(reader.token);
  agentPort = await freePort();
  const scrape = { scrape_interval: "1s", scrape_timeout: "1s" };
  await prometheus.start({
    global: { scrape_interval: "1s", evaluation_interval: "1s" },
    scrape_configs: [
      {
        job_name: "outpost-coordinator",
        ...scrape,
        metrics_path: "/metrics",
        authorization: {
          type: "Bearer",
          credentials_file: prometheus.writeFile("outpost-token", readerToken),
        },
        static_configs: [{ targets: [new URL(world.coordinator.url).host] }],
      },
      {
        job_name: "outpost-agents",
        ...scrape,
        static_configs: [{ targets: [`127.0.0.1:${agentPort}`] }],
      },
    ],
  });
}, 120_000);
afterEach((context) => {
  // The agent's output is in the world's failure log; Prometheus's is not.
  if (context.task.result?.state === "fail") {
    console.log(prometheus.logs());
  }
});
afterAll(() => prometheus.stop(), 60_000);

async function served(accept?: string): Promise<{ text: string; type: string | null }> {
  const res = await fetch(`${world.coordinator.url}/metrics`, {
    headers: { authorization: `Bearer ${readerToken}`, ...(accept ? { accept } : {}) },
  });
  expect(res.status).toBe(200);
  return { text: await res.text(), type: res.headers.get("content-type") };
}

describe("Prometheus scraping the coordinator and an agent", () => {
  // Three plans and Prometheus's 1 s scrapes following them: past the 60 s default under load.
  it("sees the queued jobs follow the queue, and the runs, jobs and agent that drained it", async () => {
    const queued = `outpost_pool_jobs{pool_id="${world.poolId}",phase="plan",state="queued"}`;
    // The pool's series are there, at zero, before anything is queued.
    await expect.poll(() => prometheus.value(queued), { timeout: 30_000, interval: 500 }).toBe(0);
    const runIds: string[] = [];
    for (let i = 0; i < RUNS; i += 1) {
      const ws = await createWorkspace(world, `scraped-${i}`);
      await uploadConfiguration(world, ws, { "main.tf": `resource "null_resource" "r${i}" {}\n` });
      runIds.push(await queueRun(world, ws, { operation: "plan" }));
    }
    await expect
      .poll(() => prometheus.value(queued), { timeout: 30_000, interval: 500 })
      .toBe(RUNS);
    expect(await prometheus.value(`outpost_pool_desired_agents{pool_id="${world.poolId}"}`)).toBe(
      RUNS,
    );
    expect(await prometheus.value(`up{job="outpost-agents"}`)).toBe(0);

    world.startAgent({ args: ["--metrics-address", `127.0.0.1:${agentPort}`] });
    for (const runId of runIds) {
      expect(
        (await waitForRun(world, runId, ["planned_and_finished", "errored"], 60_000)).status,
      ).toBe("planned_and_finished");
    }
    await expect.poll(() => prometheus.value(queued), { timeout: 30_000, interval: 500 }).toBe(0);
    await expect
      .poll(() => prometheus.value(`sum(outpost_runs_total{outcome="planned_and_finished"})`), {
        timeout: 30_000,
        interval: 500,
      })
      .toBe(RUNS);
    expect(
      await prometheus.value(
        `sum(outpost_job_wait_seconds_count{pool_id="${world.poolId}",phase="plan"})`,
      ),
    ).toBe(RUNS);
    expect(
      await prometheus.value(
        `sum(outpost_job_duration_seconds_bucket{pool_id="${world.poolId}",le="+Inf"})`,
      ),
    ).toBe(RUNS);
    // The agent's own series, from its health port.
    await expect
      .poll(
        () =>
          prometheus.value(
            `outpost_agent_jobs_finished_total{job="outpost-agents",phase="plan",outcome="succeeded"}`,
          ),
        { timeout: 30_000, interval: 500 },
      )
      .toBe(RUNS);
    expect(await prometheus.value(`up{job="outpost-agents"}`)).toBe(1);
    expect(
      await prometheus.value(`outpost_pool_agents{pool_id="${world.poolId}",status="idle"}`),
    ).toBe(1);

    // Prometheus negotiated OpenMetrics: only that format carries units.
    const metadata = await prometheus.api<Record<string, { type: string; unit: string }[]>>(
      "/api/v1/metadata?metric=outpost_job_wait_seconds",
    );
    expect(metadata.outpost_job_wait_seconds?.[0]).toMatchObject({
      type: "histogram",
      unit: "seconds",
    });
    const targets = await prometheus.api<{
      activeTargets: { labels: { job: string }; health: string; lastError: string }[];
    }>("/api/v1/targets");
    expect(targets.activeTargets.map((t) => [t.labels.job, t.health, t.lastError]).sort()).toEqual([
      ["outpost-agents", "up", ""],
      ["outpost-coordinator", "up", ""],
    ]);
  }, 180_000);

  it("serves both formats so that promtool check metrics accepts them", async () => {
    const text = await served();
    expect(text.type).toBe("text/plain; version=0.0.4; charset=utf-8");
    expect(text.text).toContain(`pool_id="${world.poolId}"`);
    expect(await promtool(["check", "metrics"], { stdin: text.text })).toEqual({
      code: 0,
      output: "",
    });

    const om = await served(PROMETHEUS_ACCEPT);
    expect(om.type).toBe("application/openmetrics-text; version=1.0.0; charset=utf-8");
    expect(om.text.endsWith("# EOF\n")).toBe(true);
    // promtool reads the text format only (prometheus/prometheus#8932): the one family it cannot
    // place is the counter, which OpenMetrics 1.0 names without `_total`. Prometheus itself
    // ingested this format above.
    const checked = await promtool(["check", "metrics"], { stdin: om.text });
    expect(checked.output.trim().split("\n")).toEqual(["outpost_runs_total no help text"]);
    expect(om.text.replace(/^# UNIT .*\n/gm, "").replace("# EOF\n", "")).toEqual(
      omAsText(text.text),
    );
  });
});

/**
 * The text exposition as OpenMetrics writes the same families: counter families without
 * `_total`, whole bucket bounds as floats. With the units and EOF taken off the OpenMetrics one,
 * both must then be the same document, so the text format's promtool check covers the samples.
 */
function omAsText(text: string): string {
  return text
    .replace(/^# (HELP|TYPE) outpost_runs_total /gm, "# $1 outpost_runs ")
    .replace(/le="(\d+)"/g, 'le="$1.0"');
}
