import { Command, CommanderError, Option } from "commander";
import { UserError } from "../errors.ts";
import { AGENT_VERSION } from "../version.ts";
import { SETTINGS, type SettingSpec, TOKEN_ENV, TOKEN_TFC_ENV } from "./settings.ts";

/** What the command line asked for: flag values by flag name, or text to print and exit 0. */
export type ParsedFlags =
  | { kind: "run"; values: Record<string, string | string[] | boolean | undefined> }
  | { kind: "print"; text: string };

const LONG_FLAGS = new Set<string>([...SETTINGS.map((s) => s.flag), "help", "version"]);

/**
 * Terraform Cloud's agent takes Go-style single-dash flags (`-single`, `-log-level=debug`,
 * `-name x`); they are read as their double-dash twins. Short flags (`-h`) stay as they are.
 */
export function normalizeArgv(argv: readonly string[]): string[] {
  return argv.map((arg) => {
    const match = /^-([a-z][a-z-]+)(=.*)?$/.exec(arg);
    return match?.[1] && LONG_FLAGS.has(match[1]) ? `-${arg}` : arg;
  });
}

function option(spec: SettingSpec): Option {
  const text = spec.arg === undefined ? `--${spec.flag}` : `--${spec.flag} <${spec.arg}>`;
  const aliases = spec.tfcEnv === undefined ? "" : `, ${spec.tfcEnv.join(", ")}`;
  const opt = new Option(text, `${spec.description} [${spec.env}${aliases}; ${spec.defaultText}]`);
  if (spec.kind === "list") {
    opt.argParser((value: string, previous: string[] | undefined) => [...(previous ?? []), value]);
  }
  return opt;
}

function program(out: { text: string }): Command {
  const command = new Command("outpost-agent")
    .description(
      "Runs Terraform, OpenTofu and Pulumi jobs for an Outpost coordinator; makes outbound requests only.",
    )
    .version(AGENT_VERSION, "--version", "print the version and exit")
    .helpOption("-h, --help", "print this help and exit")
    .allowExcessArguments(false)
    .showSuggestionAfterError(true)
    .exitOverride()
    .configureOutput({
      writeOut: (text) => {
        out.text += text;
      },
      // Errors become one UserError line; commander's own printing is not wanted.
      writeErr: () => {},
    })
    .addHelpText(
      "after",
      `\nThe agent token: ${TOKEN_ENV} (alias ${TOKEN_TFC_ENV}) or --token-file; it is removed from the\nenvironment once read. Flags win over variables, variables over the config file.`,
    );
  for (const spec of SETTINGS) {
    command.addOption(option(spec));
  }
  return command;
}

/**
 * Parses the command line with commander. `--help` and `--version` come back as text to print;
 * an unknown flag, a missing value or a stray argument throws {@link UserError} in one line.
 */
export function parseFlags(argv: readonly string[]): ParsedFlags {
  const out = { text: "" };
  const command = program(out);
  try {
    command.parse(normalizeArgv(argv), { from: "user" });
  } catch (error) {
    if (error instanceof CommanderError) {
      if (error.code === "commander.helpDisplayed" || error.code === "commander.version") {
        return { kind: "print", text: out.text };
      }
      // One line: commander puts its "(Did you mean --name?)" on a line of its own.
      const message = error.message
        .replace(/^error: /, "")
        .split("\n")
        .join(" ")
        .trim();
      throw new UserError(message || "bad flags");
    }
    throw error;
  }
  const values: Record<string, string | string[] | boolean | undefined> = {};
  const parsed = command.opts<Record<string, string | string[] | boolean | undefined>>();
  for (const spec of SETTINGS) {
    values[spec.flag] = parsed[camel(spec.flag)];
  }
  return { kind: "run", values };
}

/** `log-level` → `logLevel`, as commander names option values. */
export function camel(name: string): string {
  return name.replace(/[-_]([a-z])/g, (_, c: string) => c.toUpperCase());
}
