import { must, UserApi } from "../api.ts";
import { command } from "../args.ts";
import { Credentials, configFile, removeCredentials, saveCredentials } from "../config-store.ts";
import { CLI_EXIT, UsageError } from "../errors.ts";
import { json } from "../output.ts";

/**
 * Checks an org token against the coordinator and saves address and token in the 0600 config
 * file. The token is never taken from the command line (it would show in `ps` and shell history).
 */
export const login = command(
  {
    summary: "check an org token (stdin, OUTPOST_TOKEN or a prompt) and save the login",
    options: { address: { type: "string", description: "the coordinator's base URL" } },
    positionals: [],
    required: 0,
  },
  async (ctx, { values }) => {
    const address = values.address ?? ctx.env.OUTPOST_ADDRESS;
    if (address === undefined) {
      throw new UsageError("missing --address (outpost login --address URL)");
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
      throw new UsageError(
        `${String(issue?.path[0] ?? "input")} ${issue?.message ?? "is invalid"}`,
      );
    }
    const org = await must(new UserApi(parsed.data).client.GET("/api/v1/organization"));
    const file = await saveCredentials(ctx.env, parsed.data);
    ctx.err.write(
      `Logged in to ${parsed.data.address} as ${org.role} of ${org.name}; saved in ${file}\n`,
    );
    return CLI_EXIT.ok;
  },
);

export const logout = command(
  { summary: "forget the saved login", options: {}, positionals: [], required: 0 },
  async (ctx) => {
    const removed = await removeCredentials(ctx.env);
    ctx.err.write(removed ? `Removed ${configFile(ctx.env)}\n` : "Not logged in\n");
    return CLI_EXIT.ok;
  },
);

export const whoami = command(
  {
    summary: "show the organization and role of the login",
    options: {},
    positionals: [],
    required: 0,
  },
  async (ctx, { values }) => {
    const api = await ctx.api();
    const org = await must(api.client.GET("/api/v1/organization"));
    ctx.out.write(
      values.json ? json(org) : `${org.name} (${org.id}) as ${org.role} on ${api.address}\n`,
    );
    return CLI_EXIT.ok;
  },
);
