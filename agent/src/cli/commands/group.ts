import type { Command } from "../context.ts";
import { CLI_EXIT, UsageError } from "../errors.ts";

/** A command made of subcommands (`outpost pools list`); no or unknown subcommand is a usage error. */
export function group(name: string, commands: Record<string, Command>): Command {
  const names = Object.keys(commands).join("|");
  return async (ctx, args) => {
    const [sub, ...rest] = args;
    if (sub === "--help" || sub === "-h") {
      ctx.out.write(`usage: outpost ${name} ${names} …\n`);
      return CLI_EXIT.ok;
    }
    const command = sub === undefined ? undefined : commands[sub];
    if (command === undefined) {
      const what =
        sub === undefined ? "missing subcommand" : `unknown subcommand ${JSON.stringify(sub)}`;
      throw new UsageError(`${what} (usage: outpost ${name} ${names} …)`);
    }
    return command(ctx, rest);
  };
}
