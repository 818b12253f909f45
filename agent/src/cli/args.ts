import { type ParseArgsOptionsConfig, parseArgs } from "node:util";
import { UsageError } from "./errors.ts";

/** `--help` on a command: its usage goes to stdout and the exit code is 0. */
export class HelpRequested extends Error {
  override name = "HelpRequested";
}

/** The flags every command understands. */
const COMMON = { json: { type: "boolean" }, help: { type: "boolean", short: "h" } } as const;

export type CommandSpec<O extends ParseArgsOptionsConfig> = {
  /** One line, e.g. `outpost vars set WS KEY VALUE [--env] [--sensitive]`. */
  usage: string;
  options: O;
  /** Names of the positional arguments; the first `required` of them must be given. */
  positionals: string[];
  required: number;
};

/**
 * Parses one command's arguments. Unknown flags, missing or extra positionals throw a
 * UsageError whose single line ends with the command's usage.
 */
export function parseCommand<O extends ParseArgsOptionsConfig>(
  args: string[],
  spec: CommandSpec<O>,
) {
  const options = { ...spec.options, ...COMMON };
  let parsed: ReturnType<
    typeof parseArgs<{
      args: string[];
      options: typeof options;
      strict: true;
      allowPositionals: true;
    }>
  >;
  try {
    parsed = parseArgs({ args, options, strict: true, allowPositionals: true });
  } catch (error) {
    const message = error instanceof Error ? (error.message.split("\n")[0] ?? "") : String(error);
    throw new UsageError(`${message.replace(/\. To specify.*$/, "")} (usage: ${spec.usage})`);
  }
  const { positionals } = parsed;
  const common = parsed.values as { help?: boolean; json?: boolean };
  if (common.help === true) {
    throw new HelpRequested(`usage: ${spec.usage}`);
  }
  if (positionals.length < spec.required) {
    const missing = spec.positionals[positionals.length] ?? "an argument";
    throw new UsageError(`missing ${missing} (usage: ${spec.usage})`);
  }
  if (positionals.length > spec.positionals.length) {
    throw new UsageError(
      `unexpected argument ${JSON.stringify(positionals[spec.positionals.length])} (usage: ${spec.usage})`,
    );
  }
  return { values: parsed.values, positionals };
}

/** A whole number of seconds from a flag, or undefined when absent. */
export function secondsFlag(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) {
    return undefined;
  }
  if (!/^\d+$/.test(value)) {
    throw new UsageError(`${flag} must be a whole number of seconds`);
  }
  return Number(value);
}
