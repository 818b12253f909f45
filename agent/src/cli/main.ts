import { Command as Commander } from "commander";
import { AGENT_VERSION } from "../version.ts";
import {
  addCommand,
  type CliCommand,
  type CliGroup,
  CommanderError,
  commanderOutcome,
} from "./args.ts";
import { admin } from "./commands/admin.ts";
import { assessments } from "./commands/assessments.ts";
import { login, logout, whoami } from "./commands/auth.ts";
import { notifications } from "./commands/notifications.ts";
import { oidcTrusts } from "./commands/oidc-trusts.ts";
import { outputs } from "./commands/outputs.ts";
import { agentTokens, pools } from "./commands/pools.ts";
import { projects } from "./commands/projects.ts";
import { cancel, confirm, discard, logs, run, runs } from "./commands/runs.ts";
import { schedules } from "./commands/schedules.ts";
import { state } from "./commands/state.ts";
import { varsets } from "./commands/varsets.ts";
import { vars, workspaces } from "./commands/workspaces.ts";
import type { CliContext } from "./context.ts";
import { CLI_EXIT, type CliExitCode } from "./errors.ts";

const COMMANDS: Record<string, CliCommand | CliGroup> = {
  login,
  logout,
  whoami,
  pools,
  "agent-tokens": agentTokens,
  "oidc-trusts": oidcTrusts,
  projects,
  workspaces,
  vars,
  varsets,
  assessments,
  schedules,
  notifications,
  run,
  runs,
  confirm,
  discard,
  cancel,
  logs,
  state,
  outputs,
  admin,
};

const EPILOGUE = `
OUTPOST_ADDRESS and OUTPOST_TOKEN override the saved login (for CI).
Exit codes: 0 ok, 1 run errored, 2 usage, 3 run canceled or discarded, 4 request refused or
coordinator unreachable, 130 interrupted.`;

/** The command tree, with help and errors going through `ctx`. */
function program(ctx: CliContext, onExit: (code: CliExitCode) => void): Commander {
  const root = new Commander("outpost")
    .description(
      "Administers an Outpost coordinator for Terraform, OpenTofu and Pulumi: pools, agent tokens, projects, workspaces, variables and variable sets, runs, state, keys.",
    )
    .version(AGENT_VERSION, "--version", "print the version and exit")
    .addHelpText("after", EPILOGUE)
    .showSuggestionAfterError(true)
    .exitOverride()
    .configureOutput({
      writeOut: (text) => ctx.out.write(text),
      writeErr: (text) => ctx.err.write(text),
      // Errors become one `outpost: …` line in the bin; commander prints none itself.
      outputError: () => {},
    });
  for (const [name, entry] of Object.entries(COMMANDS)) {
    if ("commands" in entry) {
      const sub = root.command(name).description(entry.summary).exitOverride();
      for (const [subName, cli] of Object.entries(entry.commands)) {
        addCommand(sub, subName, cli, ctx, onExit);
      }
    } else {
      addCommand(root, name, entry, ctx, onExit);
    }
  }
  return root;
}

/**
 * Runs one CLI invocation (commander parses commands, flags, `--help` and `--version`).
 * Usage mistakes throw UsageError; other errors propagate to the bin, which prints one line.
 */
export async function runCli(ctx: CliContext, argv: string[]): Promise<CliExitCode> {
  let exitCode: CliExitCode = CLI_EXIT.ok;
  const root = program(ctx, (code) => {
    exitCode = code;
  });
  if (argv.length === 0) {
    root.outputHelp({ error: true });
    return CLI_EXIT.usage;
  }
  try {
    await root.parseAsync(argv, { from: "user" });
  } catch (error) {
    if (!(error instanceof CommanderError)) {
      throw error;
    }
    const outcome = commanderOutcome(error);
    if (outcome === "printed") {
      return CLI_EXIT.ok;
    }
    throw outcome;
  }
  return exitCode;
}
