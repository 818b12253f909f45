import { UserApi } from "../api.ts";
import { parseCommand } from "../args.ts";
import { Credentials, configFile, removeCredentials, saveCredentials } from "../config-store.ts";
import type { Command } from "../context.ts";
import { CLI_EXIT, UsageError } from "../errors.ts";
import { json } from "../output.ts";
import { Organization } from "../schemas.ts";

const LOGIN_USAGE = "outpost login --address URL (token from stdin, OUTPOST_TOKEN, or a prompt)";

/**
 * Checks an org token against the coordinator and saves address and token in the 0600 config
 * file. The token is never taken from the command line (it would show in `ps` and shell history).
 */
export const login: Command = async (ctx, args) => {
  const { values } = parseCommand(args, {
    usage: LOGIN_USAGE,
    options: { address: { type: "string" } },
    positionals: [],
    required: 0,
  });
  const address = values.address ?? ctx.env.OUTPOST_ADDRESS;
  if (address === undefined) {
    throw new UsageError(`missing --address (usage: ${LOGIN_USAGE})`);
  }
  const token =
    ctx.env.OUTPOST_TOKEN ||
    (await ctx.readStdin())?.trim() ||
    (await ctx.promptSecret(`Org token for ${address}: `))?.trim();
  if (!token) {
    throw new UsageError("no token given: pipe it on stdin or set OUTPOST_TOKEN");
  }
  const parsed = Credentials.safeParse({ address, token });
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new UsageError(`${String(issue?.path[0] ?? "input")} ${issue?.message ?? "is invalid"}`);
  }
  const org = await new UserApi(parsed.data).call("GET", "/api/v1/organization", Organization);
  const file = await saveCredentials(ctx.env, parsed.data);
  ctx.err.write(
    `Logged in to ${parsed.data.address} as ${org.role} of ${org.name}; saved in ${file}\n`,
  );
  return CLI_EXIT.ok;
};

export const logout: Command = async (ctx, args) => {
  parseCommand(args, { usage: "outpost logout", options: {}, positionals: [], required: 0 });
  const removed = await removeCredentials(ctx.env);
  ctx.err.write(removed ? `Removed ${configFile(ctx.env)}\n` : "Not logged in\n");
  return CLI_EXIT.ok;
};

export const whoami: Command = async (ctx, args) => {
  const { values } = parseCommand(args, {
    usage: "outpost whoami [--json]",
    options: {},
    positionals: [],
    required: 0,
  });
  const api = await ctx.api();
  const org = await api.call("GET", "/api/v1/organization", Organization);
  ctx.out.write(
    values.json ? json(org) : `${org.name} (${org.id}) as ${org.role} on ${api.address}\n`,
  );
  return CLI_EXIT.ok;
};
