import { type DestinationStream, type Logger, pino } from "pino";
import { prettyFactory } from "pino-pretty";

export type { Logger };

/**
 * The agent's own log (not a job log): to stdout, JSON lines with `--log-json`, otherwise one
 * line per event through pino-pretty: `[2026-11-22T06:00:00.000Z] WARN: message: cause {"k":"v"}`,
 * with the `err` field (a string or an Error's message) right after the message, so a failed
 * request always says why. Secrets are never passed to it; `token`/`password` fields are
 * redacted as a second line of defence.
 */
export function createLogger(options: {
  level: string;
  json: boolean;
  destination?: { write(line: string): void };
}): Logger {
  const out = options.destination ?? process.stdout;
  // The factory formats synchronously: no stream between pino and stdout that an exit could
  // cut short before the last lines ("said goodbye") are written.
  const prettify = prettyFactory({
    colorize: false,
    singleLine: true,
    translateTime: "UTC:yyyy-mm-dd'T'HH:MM:ss.l'Z'",
    ignore: "pid,hostname,err",
    messageFormat: (log, messageKey) => withCause(String(log[messageKey] ?? ""), log.err),
  });
  const destination: DestinationStream = options.json
    ? { write: (line: string) => out.write(line) }
    : { write: (line: string) => out.write(prettify(line)) };
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

function withCause(message: string, err: unknown): string {
  const cause =
    typeof err === "string"
      ? err
      : typeof err === "object" && err !== null && "message" in err
        ? String(err.message)
        : null;
  return cause === null || cause === "" ? message : `${message}: ${cause}`;
}
