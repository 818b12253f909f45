import { HelpRequested } from "./args.ts";
import { login, logout, whoami } from "./commands/auth.ts";
import { agentTokens, pools } from "./commands/pools.ts";
import { cancel, confirm, discard, logs, run, runs } from "./commands/runs.ts";
import { vars, workspaces } from "./commands/workspaces.ts";
import type { CliContext, Command } from "./context.ts";
import { CLI_EXIT, type CliExitCode, UsageError } from "./errors.ts";

export const CLI_USAGE = `Usage: outpost COMMAND [args] [--json]

  login --address URL            save the coordinator address and an org token (from stdin,
                                 OUTPOST_TOKEN or a prompt) in ~/.config/outpost/config.json
  logout | whoami
  pools list|create|show|update|delete
  agent-tokens list|create|revoke POOL_ID …
  workspaces list|show|create|update|delete|lock|unlock
  vars list|set|delete WORKSPACE …
  run [DIR] -w WORKSPACE [--plan-only] [--destroy] [--confirm|--auto-approve] [--no-follow]
  runs list WORKSPACE | runs show RUN_ID
  confirm RUN_ID [--follow] | discard RUN_ID | cancel RUN_ID [--force]
  logs RUN_ID [--phase plan|apply] [--follow]

OUTPOST_ADDRESS and OUTPOST_TOKEN override the saved login (for CI).
Exit codes: 0 ok, 1 run errored, 2 usage, 3 run canceled or discarded, 4 request refused or
coordinator unreachable, 130 interrupted.`;

const COMMANDS: Record<string, Command> = {
  login,
  logout,
  whoami,
  pools,
  "agent-tokens": agentTokens,
  workspaces,
  vars,
  run,
  runs,
  confirm,
  discard,
  cancel,
  logs,
};

/** Runs one CLI invocation; errors propagate to the bin, which prints them as one line. */
export async function runCli(ctx: CliContext, argv: string[]): Promise<CliExitCode> {
  const [name, ...args] = argv;
  if (name === undefined || name === "help" || name === "--help" || name === "-h") {
    ctx.out.write(`${CLI_USAGE}\n`);
    return name === undefined ? CLI_EXIT.usage : CLI_EXIT.ok;
  }
  const command = COMMANDS[name];
  if (command === undefined) {
    throw new UsageError(`unknown command ${JSON.stringify(name)} (see outpost --help)`);
  }
  try {
    return await command(ctx, args);
  } catch (error) {
    if (error instanceof HelpRequested) {
      ctx.out.write(`${error.message}\n`);
      return CLI_EXIT.ok;
    }
    throw error;
  }
}
