/**
 * deploy/prometheus with the real promtool: the alert rules load and pass their unit tests,
 * the scrape configuration loads, and the Grafana dashboard parses, covers what
 * docs/operations.md promises and queries only metrics Outpost exposes, in valid PromQL.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { AgentMetrics } from "../../agent/src/metrics/agent-metrics.ts";
import { AgentHealth } from "../../agent/src/metrics/health.ts";
import { promtool } from "./helpers/promtool.ts";

const PROMETHEUS = path.resolve(import.meta.dirname, "../../deploy/prometheus");
/** The dashboard's data source variable, as Grafana writes a reference to it. */
const DATASOURCE = "$" + "{datasource}";
const work = mkdtempSync(path.join(tmpdir(), "outpost-prometheus-"));
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** The coordinator's metrics (docs/operations.md), as its `/metrics` names them. */
const COORDINATOR_METRICS = [
  "outpost_pool_jobs",
  "outpost_pool_agents",
  "outpost_pool_oldest_queued_job_age_seconds",
  "outpost_pool_desired_agents",
  "outpost_runs_total",
  "outpost_workspace_drifted",
  ...["outpost_job_wait_seconds", "outpost_job_duration_seconds"].flatMap(histogram),
];

function histogram(name: string): string[] {
  return [`${name}_bucket`, `${name}_sum`, `${name}_count`];
}

/** Every `outpost_*` series name the agent's registry writes (histograms with their suffixes). */
async function agentMetricNames(): Promise<string[]> {
  const metrics = new AgentMetrics({ version: "1.0.0", capacity: 1, health: new AgentHealth() });
  const all = await metrics.registry.getMetricsAsJSON();
  return all
    .filter((m) => m.name.startsWith("outpost_"))
    .flatMap((m) => (String(m.type) === "histogram" ? histogram(m.name) : [m.name]));
}

/** The `outpost_*` metric names a PromQL expression reads. */
function metricsIn(expr: string): string[] {
  return [...expr.matchAll(/\boutpost_[a-z_]+\b/g)].map((m) => m[0]);
}

type Panel = {
  type: string;
  title: string;
  datasource?: { type: string; uid: string };
  targets?: Array<{ expr: string; refId: string }>;
  panels?: Panel[];
};

function readDashboard(): { uid: string; panels: Panel[]; templating: { list: unknown[] } } {
  return JSON.parse(readFileSync(path.join(PROMETHEUS, "grafana-dashboard.json"), "utf8"));
}

function queryPanels(panels: Panel[]): Panel[] {
  return panels.flatMap((p) => (p.type === "row" ? queryPanels(p.panels ?? []) : [p]));
}

/** Grafana's variables, as Grafana fills them in before sending a query. */
function asPromQL(expr: string): string {
  return expr.replaceAll("$__rate_interval", "2m").replaceAll("$pool", ".*");
}

describe("deploy/prometheus/alerts.yml", () => {
  it("loads with promtool check rules", async () => {
    const checked = await promtool(["check", "rules", path.join(PROMETHEUS, "alerts.yml")]);
    expect(checked.code, checked.output).toBe(0);
    expect(checked.output).toContain("SUCCESS: 6 rules found");
  });

  it("passes its unit tests with promtool test rules", async () => {
    const tested = await promtool(["test", "rules", "alerts.test.yml"], { cwd: PROMETHEUS });
    expect(tested.code, tested.output).toBe(0);
    expect(tested.output).toContain("SUCCESS");
  });

  it("alerts on the four conditions, every alert tested, on metrics Outpost exposes", async () => {
    const rules = parse(readFileSync(path.join(PROMETHEUS, "alerts.yml"), "utf8")) as {
      groups: Array<{ rules: Array<{ alert: string; expr: string }> }>;
    };
    const alerts = rules.groups.flatMap((g) => g.rules);
    expect(alerts.map((a) => a.alert)).toEqual(
      expect.arrayContaining([
        "OutpostPoolNoAgentOnline",
        "OutpostQueuedJobTooOld",
        "OutpostAgentsErrored",
        "OutpostRunErrorRate",
      ]),
    );
    const tests = readFileSync(path.join(PROMETHEUS, "alerts.test.yml"), "utf8");
    const known = new Set([...COORDINATOR_METRICS, ...(await agentMetricNames())]);
    for (const alert of alerts) {
      expect(tests, `a unit test of ${alert.alert}`).toContain(`alertname: ${alert.alert}\n`);
      expect(
        metricsIn(alert.expr).filter((m) => !known.has(m)),
        alert.alert,
      ).toEqual([]);
    }
  });
});

describe("deploy/prometheus/prometheus.yml", () => {
  it("loads with promtool check config (Debian's build has no Kubernetes discovery)", async () => {
    const original = readFileSync(path.join(PROMETHEUS, "prometheus.yml"), "utf8");
    const config = parse(original) as {
      rule_files: string[];
      scrape_configs: Array<Record<string, unknown>>;
    };
    expect(config.rule_files).toEqual(["alerts.yml"]);
    const coordinator = config.scrape_configs.find((c) => c.job_name === "outpost-coordinator");
    expect(coordinator).toMatchObject({
      metrics_path: "/metrics",
      authorization: { type: "Bearer", credentials_file: expect.any(String) },
    });
    const agents = config.scrape_configs.find((c) => c.job_name === "outpost-agents");
    expect(agents?.kubernetes_sd_configs).toEqual([{ role: "pod" }]);
    expect(JSON.stringify(agents?.relabel_configs)).toContain(
      '"source_labels":["__meta_kubernetes_pod_container_port_name"],"regex":"metrics","action":"keep"',
    );
    // promtool wants the token file to exist, and this promtool cannot parse kubernetes_sd.
    const token = path.join(work, "outpost-token");
    writeFileSync(token, "op_org_test\n");
    const checkable = original
      .replace(
        (coordinator?.authorization as { credentials_file: string } | undefined)
          ?.credentials_file ?? "",
        token,
      )
      .replace(
        "kubernetes_sd_configs:\n      - role: pod",
        `file_sd_configs:\n      - files: [${work}/none/*.yml]`,
      );
    expect(checkable).not.toContain("kubernetes_sd_configs");
    writeFileSync(path.join(work, "prometheus.yml"), checkable);
    writeFileSync(path.join(work, "alerts.yml"), readFileSync(path.join(PROMETHEUS, "alerts.yml")));
    const checked = await promtool(["check", "config", path.join(work, "prometheus.yml")]);
    expect(checked.code, checked.output).toBe(0);
    expect(checked.output).toContain("SUCCESS: 1 rule files found");
  });
});

describe("deploy/prometheus/grafana-dashboard.json", () => {
  it("parses, and every panel queries the Prometheus data source variable", () => {
    const dashboard = readDashboard();
    expect(dashboard.uid).toBe("outpost-overview");
    const panels = queryPanels(dashboard.panels);
    expect(panels.length).toBeGreaterThanOrEqual(8);
    for (const panel of panels) {
      expect(panel.datasource, panel.title).toEqual({ type: "prometheus", uid: DATASOURCE });
      expect(panel.targets?.length, panel.title).toBeGreaterThan(0);
    }
  });

  it("shows queue depth, agents by status, wait and duration quantiles and runs by outcome", () => {
    const exprs = queryPanels(readDashboard().panels).flatMap((p) =>
      (p.targets ?? []).map((t) => t.expr),
    );
    const has = (pattern: RegExp) => exprs.some((e) => pattern.test(e));
    expect(has(/outpost_pool_jobs\{state="queued"/)).toBe(true);
    expect(has(/sum by \(status\) \(outpost_pool_agents\b/)).toBe(true);
    for (const histogram of ["outpost_job_wait_seconds", "outpost_job_duration_seconds"]) {
      for (const q of ["0.5", "0.9", "0.99"]) {
        expect(exprs).toContain(
          `histogram_quantile(${q}, sum by (le) (rate(${histogram}_bucket[$__rate_interval])))`,
        );
      }
    }
    expect(has(/sum by \(outcome\) \(increase\(outpost_runs_total\[/)).toBe(true);
  });

  it("queries only metrics Outpost exposes, in PromQL promtool parses", async () => {
    const known = new Set([...COORDINATOR_METRICS, ...(await agentMetricNames())]);
    const targets = queryPanels(readDashboard().panels).flatMap((p) =>
      (p.targets ?? []).map((t) => ({ panel: p.title, expr: t.expr })),
    );
    for (const { panel, expr } of targets) {
      expect(metricsIn(expr).length, `${panel}: ${expr}`).toBeGreaterThan(0);
      expect(
        metricsIn(expr).filter((m) => !known.has(m)),
        `${panel}: ${expr}`,
      ).toEqual([]);
    }
    // Each query as a recording rule: promtool check rules parses its PromQL.
    const rules = {
      groups: [
        {
          name: "dashboard",
          rules: targets.map((t, i) => ({
            record: `dashboard:query_${i}`,
            expr: asPromQL(t.expr),
          })),
        },
      ],
    };
    const file = path.join(work, "dashboard-queries.yml");
    writeFileSync(file, JSON.stringify(rules));
    const checked = await promtool(["check", "rules", file]);
    expect(checked.code, checked.output).toBe(0);
    expect(checked.output).toContain(`SUCCESS: ${targets.length} rules found`);
  });

  it("the PromQL check fails on a broken query (so the one above can fail)", async () => {
    const file = path.join(work, "broken.yml");
    writeFileSync(
      file,
      JSON.stringify({
        groups: [
          { name: "x", rules: [{ record: "x:y", expr: "sum by (pool (outpost_pool_jobs)" }] },
        ],
      }),
    );
    expect((await promtool(["check", "rules", file])).code).not.toBe(0);
  });
});
