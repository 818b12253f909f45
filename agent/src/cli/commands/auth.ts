import { must, UserApi } from "../api.ts";
import { command } from "../args.ts";
import {
  Credentials,
  configFile,
  insecureHttpFromEnv,
  loadCredentials,
  removeCredentials,
  saveCredentials,
} from "../config-store.ts";
import type { CliContext } from "../context.ts";
import { CLI_EXIT, UsageError } from "../errors.ts";
import { json } from "../output.ts";
import { ssoLogin } from "./sso-login.ts";

/**
 * Checks a token against the coordinator and saves address and token in the 0600 config file.
 * The token is never taken from the command line (it would show in `ps` and shell history).
 * With `--sso`, the browser signs in instead and the CLI receives a personal token.
 */
export const login = command(
  {
    summary:
      "sign in through the browser (--sso), or check a token (stdin, OUTPOST_TOKEN or a prompt), and save the login",
    options: {
      address: { type: "string", description: "the coordinator's base URL" },
      sso: {
        type: "boolean",
        description: "sign in through the organization's provider in a browser (prints an address)",
      },
      "insecure-http": {
        type: "boolean",
        description:
          "allow (and remember) a plain-http address that is not loopback: the token crosses the network unencrypted",
      },
    },
    positionals: [],
    required: 0,
  },
  async (ctx, { values }) => {
    const address = values.address ?? ctx.env.OUTPOST_ADDRESS;
    if (address === undefined) {
      throw new UsageError("missing --address (outpost login --address URL)");
    }
    // Before asking for a token: a mistaken address is the first thing to fix.
    const base = Credentials.shape.address.safeParse(address);
    if (!base.success) {
      throw new UsageError(`address ${base.error.issues[0]?.message ?? "is invalid"}`);
    }
    const insecureHttp = values["insecure-http"] === true || insecureHttpFromEnv(ctx.env);
    if (values.sso) {
      return ssoLogin(ctx, address, insecureHttp);
    }
    const token =
      ctx.env.OUTPOST_TOKEN ||
      (await ctx.readStdin())?.trim() ||
      (await ctx.promptSecret(`Org token for ${address}: `))?.trim();
    if (!token) {
      throw new UsageError("no token given: pipe it on stdin or set OUTPOST_TOKEN");
    }
    const parsed = Credentials.safeParse({
      address,
      token,
      ...(insecureHttp ? { insecureHttp } : {}),
    });
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw new UsageError(
        `${String(issue?.path[0] ?? "input")} ${issue?.message ?? "is invalid"}`,
      );
    }
    const org = await must(new UserApi(parsed.data).client.GET("/api/v1/organization"));
    const file = await saveCredentials(ctx.env, parsed.data);
    ctx.err.write(
      `Logged in to ${parsed.data.address} as ${org.role ?? "no role"} of ${org.name}; saved in ${file}\n`,
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

/** Who the login is: for a person, their email, name and teams; always the org and role. */
export const whoami = command(
  {
    summary: "show who the login is: the person (email, teams) or token, the organization and role",
    options: {},
    positionals: [],
    required: 0,
  },
  async (ctx, { values }) => {
    const api = await ctx.api();
    const org = await must(api.client.GET("/api/v1/organization"));
    const role = org.role ?? "no organization role";
    if (!(await loginToken(ctx)).startsWith("op_user_")) {
      ctx.out.write(
        values.json ? json(org) : `${org.name} (${org.id}) as ${role} on ${api.address}\n`,
      );
      return CLI_EXIT.ok;
    }
    const me = await must(api.client.GET("/api/v1/user"));
    const who = me.name ? `${me.name} <${me.email}>` : me.email;
    const teams =
      me.teams.length === 0 ? "no teams" : `teams ${me.teams.map((t) => t.name).join(", ")}`;
    ctx.out.write(
      values.json
        ? json({ user: me, organization: org })
        : `${who} in ${org.name} (${org.id}) as ${role}, ${teams}, on ${api.address}\n`,
    );
    return CLI_EXIT.ok;
  },
);

async function loginToken(ctx: CliContext): Promise<string> {
  return (await loadCredentials(ctx.env)).token;
}
