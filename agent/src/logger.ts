import { type DestinationStream, type Logger, pino } from "pino";

export type { Logger };

const LEVEL_NAMES: Record<number, string> = {
  10: "TRACE",
  20: "DEBUG",
  30: "INFO",
  40: "WARN",
  50: "ERROR",
  60: "FATAL",
};

/**
 * The agent's own log (not a job log): to stdout, JSON lines with `--log-json`, otherwise one
 * readable line per event (`2026-11-22T06:00:00.000Z INFO message key=value`). Secrets are
 * never passed to it; `token`/`password` fields are redacted as a second line of defence.
 */
export function createLogger(options: {
  level: string;
  json: boolean;
  destination?: { write(line: string): void };
}): Logger {
  const out = options.destination ?? process.stdout;
  const destination: DestinationStream = options.json
    ? { write: (line: string) => out.write(line) }
    : { write: (line: string) => out.write(formatLine(line)) };
  return pino(
    {
      level: options.level,
      base: undefined,
      timestamp: pino.stdTimeFunctions.isoTime,
      redact: { paths: ["token", "password", "*.token", "*.password"], censor: "***" },
    },
    destination,
  );
}

function formatLine(line: string): string {
  let record: Record<string, unknown>;
  try {
    record = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return line;
  }
  const { time, level, msg, err, ...rest } = record;
  const fields = Object.entries(rest)
    .map(([key, value]) => `${key}=${typeof value === "string" ? value : JSON.stringify(value)}`)
    .join(" ");
  const levelName = typeof level === "number" ? (LEVEL_NAMES[level] ?? String(level)) : "";
  const stack =
    typeof err === "object" && err !== null && "stack" in err ? `\n${String(err.stack)}` : "";
  return `${String(time)} ${levelName} ${String(msg ?? "")}${fields ? ` ${fields}` : ""}${stack}\n`;
}
