import { type Command as Commander, CommanderError, Option } from "commander";
import type { CliContext } from "./context.ts";
import { type CliExitCode, UsageError } from "./errors.ts";

/**
 * One flag of a command: a value (`--pool ID`), a value that may repeat (`--claim a=b --claim
 * c=d`, read back as a list in the order given) or a switch (`--force`).
 */
export type OptionSpec = {
  type: "string" | "strings" | "boolean";
  short?: string;
  description?: string;
};
export type OptionsSpec = Record<string, OptionSpec>;

/** Parsed flag values by flag name (`engine-version`), plus the `--json` every command has. */
export type Values<O extends OptionsSpec> = {
  [K in keyof O]?: O[K]["type"] extends "string"
    ? string
    : O[K]["type"] extends "strings"
      ? string[]
      : boolean;
} & { json?: boolean };

export type CommandSpec<O extends OptionsSpec> = {
  /** One line for `--help` listings. */
  summary: string;
  options: O;
  /** Names of the positional arguments; the first `required` of them must be given. */
  positionals: string[];
  required: number;
};

/** A subcommand: its flags and arguments (parsed by commander) and what it does. */
export type CliCommand = {
  spec: CommandSpec<OptionsSpec>;
  run(
    ctx: CliContext,
    parsed: { values: Values<OptionsSpec>; positionals: string[] },
  ): Promise<CliExitCode>;
};

/** A command with subcommands (`outpost pools list`). */
export type CliGroup = { summary: string; commands: Record<string, CliCommand> };

/** Declares a command; `run` gets its flags by name and its positional arguments in order. */
export function command<O extends OptionsSpec>(
  spec: CommandSpec<O>,
  run: (
    ctx: CliContext,
    parsed: { values: Values<O>; positionals: string[] },
  ) => Promise<CliExitCode>,
): CliCommand {
  return { spec, run: run as CliCommand["run"] };
}

export function group(summary: string, commands: Record<string, CliCommand>): CliGroup {
  return { summary, commands };
}

/** `log-level` → `logLevel`, as commander keys option values. */
function camel(name: string): string {
  return name.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());
}

/**
 * Adds `cli` as the subcommand `name` of `parent`; when it runs, its exit code goes to
 * `onExit`. Flags named `no-x` are commander's negations of `x` and read back by their name.
 */
export function addCommand(
  parent: Commander,
  name: string,
  cli: CliCommand,
  ctx: CliContext,
  onExit: (code: CliExitCode) => void,
): void {
  const sub = parent.command(name).description(cli.spec.summary).allowExcessArguments(false);
  cli.spec.positionals.forEach((p, i) => {
    sub.argument(i < cli.spec.required ? `<${p}>` : `[${p}]`);
  });
  for (const [flag, option] of Object.entries(cli.spec.options)) {
    const short = option.short === undefined ? "" : `-${option.short}, `;
    const value =
      option.type === "boolean" ? "" : ` <${flag === "description" ? "TEXT" : "VALUE"}>`;
    const added = new Option(`${short}--${flag}${value}`, option.description ?? "");
    if (option.type === "strings") {
      added.argParser((item: string, previous: string[] | undefined) => [
        ...(previous ?? []),
        item,
      ]);
    }
    sub.addOption(added);
  }
  sub.option("--json", "print the coordinator's answer as JSON");
  sub.action(async (...args: unknown[]) => {
    const self = args[args.length - 1] as Commander;
    const opts = self.opts<Record<string, string | string[] | boolean | undefined>>();
    const values: Record<string, string | string[] | boolean | undefined> = {
      json: opts.json === true,
    };
    for (const flag of Object.keys(cli.spec.options)) {
      values[flag] = flag.startsWith("no-")
        ? opts[camel(flag.slice(3))] === false || undefined
        : opts[camel(flag)];
    }
    const positionals = self.processedArgs.filter((a): a is string => typeof a === "string");
    onExit(await cli.run(ctx, { values: values as Values<OptionsSpec>, positionals }));
  });
}

/** A commander error as the CLI reports it: help and version are not errors at all. */
export function commanderOutcome(error: CommanderError): "printed" | UsageError {
  if (error.code === "commander.helpDisplayed" || error.code === "commander.version") {
    return "printed";
  }
  const text = error.message
    .replace(/^error: /, "")
    .replace(/\n+/g, " ")
    .trim();
  return new UsageError(`${text} (see outpost --help)`);
}

export { CommanderError };

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

/** A flag that takes a whole number (`--max-agents 4`), or undefined when not given. */
export function countFlag(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) {
    return undefined;
  }
  if (!/^\d+$/.test(value)) {
    throw new UsageError(`${flag} must be a whole number`);
  }
  return Number(value);
}
