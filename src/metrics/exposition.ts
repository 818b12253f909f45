/**
 * Writes metric families in the Prometheus text format (0.0.4) or OpenMetrics 1.0.0. Written
 * here rather than taken from a library: prom-client needs Node's runtime, and the libraries
 * that run in workerd only count observations they make themselves, while the coordinator's
 * histograms come from D1 already bucketed. Pure: families in, text out.
 */

export type Labels = Readonly<Record<string, string>>;
export type Sample = { readonly labels: Labels; readonly value: number };

/** One histogram series: cumulative counts at each bound of its family, its count and sum. */
export type HistogramSeries = {
  readonly labels: Labels;
  readonly buckets: readonly number[];
  readonly count: number;
  readonly sum: number;
};

type Common = { readonly name: string; readonly help: string; readonly unit?: "seconds" };

/**
 * A metric family. A counter's `name` is without `_total` (its samples carry it), as OpenMetrics
 * names the family; a histogram's `bounds` are its finite bucket bounds, ascending (`+Inf` is
 * implied).
 */
export type MetricFamily =
  | (Common & { readonly type: "gauge"; readonly samples: readonly Sample[] })
  | (Common & { readonly type: "counter"; readonly samples: readonly Sample[] })
  | (Common & {
      readonly type: "histogram";
      readonly bounds: readonly number[];
      readonly series: readonly HistogramSeries[];
    });

export type ExpositionFormat = "text" | "openmetrics";

/** The media types a scraper names in `Accept`, and the `Content-Type` of each answer. */
export const EXPOSITION_MEDIA_TYPES = {
  text: "text/plain",
  openmetrics: "application/openmetrics-text",
} as const;
export const EXPOSITION_CONTENT_TYPES: Record<ExpositionFormat, string> = {
  text: "text/plain; version=0.0.4; charset=utf-8",
  openmetrics: "application/openmetrics-text; version=1.0.0; charset=utf-8",
};

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

/**
 * The families as one exposition. Names and label names are checked (a bad one is a bug and
 * throws); label values and help are escaped, so any pool or workspace name is safe.
 */
export function formatExposition(families: readonly MetricFamily[], format: ExpositionFormat) {
  const lines: string[] = [];
  for (const family of families) {
    if (!METRIC_NAME.test(family.name)) {
      throw new Error(`invalid metric name ${JSON.stringify(family.name)}`);
    }
    lines.push(...header(family, format), ...samples(family, format));
  }
  if (format === "openmetrics") {
    lines.push("# EOF");
  }
  return `${lines.join("\n")}\n`;
}

function header(family: MetricFamily, format: ExpositionFormat): string[] {
  // The text format names a counter's family as its samples; OpenMetrics without `_total`.
  const name =
    family.type === "counter" && format === "text" ? `${family.name}_total` : family.name;
  const help = escapeHelp(family.help, format);
  const lines = [`# HELP ${name} ${help}`, `# TYPE ${name} ${family.type}`];
  if (family.unit && format === "openmetrics") {
    lines.push(`# UNIT ${name} ${family.unit}`);
  }
  return lines;
}

function samples(family: MetricFamily, format: ExpositionFormat): string[] {
  switch (family.type) {
    case "gauge":
      return family.samples.map((s) => line(family.name, s.labels, s.value));
    case "counter":
      return family.samples.map((s) => line(`${family.name}_total`, s.labels, s.value));
    case "histogram":
      return family.series.flatMap((series) => histogramLines(family, series, format));
  }
}

function histogramLines(
  family: { name: string; bounds: readonly number[] },
  series: HistogramSeries,
  format: ExpositionFormat,
): string[] {
  if (series.buckets.length !== family.bounds.length) {
    throw new Error(
      `${family.name}: ${series.buckets.length} buckets for ${family.bounds.length} bounds`,
    );
  }
  const buckets = family.bounds.map((bound, i) =>
    line(
      `${family.name}_bucket`,
      { ...series.labels, le: formatBound(bound, format) },
      series.buckets[i] ?? 0,
    ),
  );
  return [
    ...buckets,
    line(`${family.name}_bucket`, { ...series.labels, le: "+Inf" }, series.count),
    line(`${family.name}_sum`, series.labels, series.sum),
    line(`${family.name}_count`, series.labels, series.count),
  ];
}

function line(name: string, labels: Labels, value: number): string {
  const pairs = Object.entries(labels).map(([key, v]) => {
    if (!LABEL_NAME.test(key)) {
      throw new Error(`invalid label name ${JSON.stringify(key)}`);
    }
    return `${key}="${escapeLabelValue(v)}"`;
  });
  return `${name}${pairs.length > 0 ? `{${pairs.join(",")}}` : ""} ${formatNumber(value)}`;
}

/** A bucket bound as `le`: OpenMetrics writes a float canonically (`1.0`), the text format `1`. */
export function formatBound(bound: number, format: ExpositionFormat): string {
  const text = formatNumber(bound);
  return format === "openmetrics" && Number.isInteger(bound) ? `${text}.0` : text;
}

function formatNumber(value: number): string {
  if (Number.isNaN(value)) {
    return "NaN";
  }
  if (!Number.isFinite(value)) {
    return value > 0 ? "+Inf" : "-Inf";
  }
  return String(value);
}

function escapeLabelValue(value: string): string {
  return value.replaceAll("\\", "\\\\").replaceAll("\n", "\\n").replaceAll('"', '\\"');
}

function escapeHelp(help: string, format: ExpositionFormat): string {
  const escaped = help.replaceAll("\\", "\\\\").replaceAll("\n", "\\n");
  return format === "openmetrics" ? escaped.replaceAll('"', '\\"') : escaped;
}
