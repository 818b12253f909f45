import { seg } from "../api.ts";
import { parseCommand, secondsFlag } from "../args.ts";
import type { Command } from "../context.ts";
import { CLI_EXIT } from "../errors.ts";
import { cell, json, table } from "../output.ts";
import {
  AgentToken,
  AgentTokenList,
  CreatedAgentToken,
  Pool,
  PoolDetail,
  PoolList,
} from "../schemas.ts";
import { group } from "./group.ts";

const liveness = {
  "unknown-after": { type: "string" },
  "errored-after": { type: "string" },
  retention: { type: "string" },
} as const;

function livenessBody(values: {
  "unknown-after"?: string;
  "errored-after"?: string;
  retention?: string;
}) {
  const body: Record<string, number> = {};
  const unknown = secondsFlag(values["unknown-after"], "--unknown-after");
  const errored = secondsFlag(values["errored-after"], "--errored-after");
  const retention = secondsFlag(values.retention, "--retention");
  if (unknown !== undefined) {
    body.unknownAfterSeconds = unknown;
  }
  if (errored !== undefined) {
    body.erroredAfterSeconds = errored;
  }
  if (retention !== undefined) {
    body.retentionSeconds = retention;
  }
  return body;
}

const list: Command = async (ctx, args) => {
  const { values } = parseCommand(args, {
    usage: "outpost pools list [--json]",
    options: {},
    positionals: [],
    required: 0,
  });
  const { pools } = await (await ctx.api()).call("GET", "/api/v1/pools", PoolList);
  ctx.out.write(
    values.json
      ? json(pools)
      : table([
          ["ID", "NAME", "DESCRIPTION"],
          ...pools.map((p) => [p.id, p.name, cell(p.description)]),
        ]),
  );
  return CLI_EXIT.ok;
};

const create: Command = async (ctx, args) => {
  const usage =
    "outpost pools create NAME [--description TEXT] [--unknown-after S] [--errored-after S] [--retention S]";
  const { values, positionals } = parseCommand(args, {
    usage,
    options: { description: { type: "string" }, ...liveness },
    positionals: ["NAME"],
    required: 1,
  });
  const pool = await (await ctx.api()).call("POST", "/api/v1/pools", Pool, {
    name: positionals[0],
    ...(values.description === undefined ? {} : { description: values.description }),
    ...livenessBody(values),
  });
  ctx.out.write(values.json ? json(pool) : `${pool.id}\n`);
  ctx.err.write(`Created pool ${pool.name}\n`);
  return CLI_EXIT.ok;
};

const update: Command = async (ctx, args) => {
  const usage =
    "outpost pools update POOL_ID [--name NAME] [--description TEXT] [--unknown-after S] [--errored-after S] [--retention S]";
  const { values, positionals } = parseCommand(args, {
    usage,
    options: { name: { type: "string" }, description: { type: "string" }, ...liveness },
    positionals: ["POOL_ID"],
    required: 1,
  });
  const pool = await (await ctx.api()).call(
    "PATCH",
    `/api/v1/pools/${seg(positionals[0] ?? "")}`,
    Pool,
    {
      ...(values.name === undefined ? {} : { name: values.name }),
      ...(values.description === undefined ? {} : { description: values.description }),
      ...livenessBody(values),
    },
  );
  ctx.out.write(values.json ? json(pool) : `${pool.id}\n`);
  return CLI_EXIT.ok;
};

const show: Command = async (ctx, args) => {
  const { values, positionals } = parseCommand(args, {
    usage: "outpost pools show POOL_ID [--json]",
    options: {},
    positionals: ["POOL_ID"],
    required: 1,
  });
  const pool = await (await ctx.api()).call(
    "GET",
    `/api/v1/pools/${seg(positionals[0] ?? "")}`,
    PoolDetail,
  );
  if (values.json) {
    ctx.out.write(json(pool));
    return CLI_EXIT.ok;
  }
  ctx.out.write(
    `${pool.name} (${pool.id})\n` +
      `liveness: unknown after ${pool.unknownAfterSeconds}s, errored after ${pool.erroredAfterSeconds}s, listed ${pool.retentionSeconds}s after going offline\n` +
      `workspaces: ${pool.workspaces.map((w) => w.name).join(", ") || "-"}\n\n`,
  );
  ctx.out.write(
    table([
      ["AGENT", "NAME", "STATUS", "VERSION", "JOBS", "LAST CONTACT"],
      ...pool.agents.map((a) => [
        a.id,
        cell(a.name),
        a.status,
        a.version,
        `${a.runningJobs.length}/${a.capacity}`,
        a.lastContactAt,
      ]),
    ]),
  );
  return CLI_EXIT.ok;
};

const remove: Command = async (ctx, args) => {
  const { positionals } = parseCommand(args, {
    usage: "outpost pools delete POOL_ID",
    options: {},
    positionals: ["POOL_ID"],
    required: 1,
  });
  await (await ctx.api()).callNoContent("DELETE", `/api/v1/pools/${seg(positionals[0] ?? "")}`);
  ctx.err.write(`Deleted pool ${positionals[0]}\n`);
  return CLI_EXIT.ok;
};

export const pools = group("pools", { list, create, show, update, delete: remove });

const tokenList: Command = async (ctx, args) => {
  const { values, positionals } = parseCommand(args, {
    usage: "outpost agent-tokens list POOL_ID [--json]",
    options: {},
    positionals: ["POOL_ID"],
    required: 1,
  });
  const { tokens } = await (await ctx.api()).call(
    "GET",
    `/api/v1/pools/${seg(positionals[0] ?? "")}/tokens`,
    AgentTokenList,
  );
  ctx.out.write(
    values.json
      ? json(tokens)
      : table([
          ["ID", "DESCRIPTION", "CREATED", "LAST USED"],
          ...tokens.map((t) => [t.id, t.description, t.createdAt, cell(t.lastUsedAt)]),
        ]),
  );
  return CLI_EXIT.ok;
};

const tokenCreate: Command = async (ctx, args) => {
  const { values, positionals } = parseCommand(args, {
    usage: "outpost agent-tokens create POOL_ID --description TEXT [--json]",
    options: { description: { type: "string" } },
    positionals: ["POOL_ID"],
    required: 1,
  });
  const token = await (await ctx.api()).call(
    "POST",
    `/api/v1/pools/${seg(positionals[0] ?? "")}/tokens`,
    CreatedAgentToken,
    { description: values.description ?? "created with the outpost CLI" },
  );
  // The secret alone on stdout, so `OUTPOST_TOKEN=$(outpost agent-tokens create …)` works.
  ctx.out.write(values.json ? json(token) : `${token.token}\n`);
  ctx.err.write(`Created agent token ${token.id}; the secret is shown only this once\n`);
  return CLI_EXIT.ok;
};

const tokenRevoke: Command = async (ctx, args) => {
  const { values, positionals } = parseCommand(args, {
    usage: "outpost agent-tokens revoke POOL_ID TOKEN_ID [--json]",
    options: {},
    positionals: ["POOL_ID", "TOKEN_ID"],
    required: 2,
  });
  const token = await (await ctx.api()).call(
    "DELETE",
    `/api/v1/pools/${seg(positionals[0] ?? "")}/tokens/${seg(positionals[1] ?? "")}`,
    AgentToken,
  );
  ctx.out.write(values.json ? json(token) : "");
  ctx.err.write(`Revoked agent token ${token.id}; its agents are told to exit\n`);
  return CLI_EXIT.ok;
};

export const agentTokens = group("agent-tokens", {
  list: tokenList,
  create: tokenCreate,
  revoke: tokenRevoke,
});
