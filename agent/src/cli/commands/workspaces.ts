import { seg } from "../api.ts";
import { parseCommand } from "../args.ts";
import type { Command } from "../context.ts";
import { CLI_EXIT, UsageError } from "../errors.ts";
import { cell, json, table } from "../output.ts";
import { Variable, VariableList, Workspace, WorkspaceList } from "../schemas.ts";
import { group } from "./group.ts";

const settings = {
  description: { type: "string" },
  pool: { type: "string" },
  "execution-mode": { type: "string" },
  engine: { type: "string" },
  "engine-version": { type: "string" },
  "working-directory": { type: "string" },
  "auto-apply": { type: "boolean" },
  "no-auto-apply": { type: "boolean" },
} as const;
const SETTINGS_USAGE =
  "[--pool POOL_ID] [--execution-mode agent|local] [--engine terraform|tofu] [--engine-version V] [--working-directory DIR] [--auto-apply|--no-auto-apply] [--description TEXT]";

type SettingsValues = {
  description?: string;
  pool?: string;
  "execution-mode"?: string;
  engine?: string;
  "engine-version"?: string;
  "working-directory"?: string;
  "auto-apply"?: boolean;
  "no-auto-apply"?: boolean;
};

/** The JSON body for the given flags; the coordinator validates the values. */
function settingsBody(values: SettingsValues): Record<string, unknown> {
  if (values["auto-apply"] && values["no-auto-apply"]) {
    throw new UsageError("--auto-apply and --no-auto-apply exclude each other");
  }
  const body: Record<string, unknown> = {};
  const map = [
    ["description", "description"],
    ["pool", "poolId"],
    ["execution-mode", "executionMode"],
    ["engine", "engine"],
    ["engine-version", "engineVersion"],
    ["working-directory", "workingDirectory"],
  ] as const;
  for (const [flag, field] of map) {
    if (values[flag] !== undefined) {
      body[field] = values[flag];
    }
  }
  if (values["auto-apply"] || values["no-auto-apply"]) {
    body.autoApply = values["auto-apply"] === true;
  }
  return body;
}

function describe(ws: Workspace): string {
  const lock = ws.lock ? `locked by ${ws.lock.lockedBy}: ${ws.lock.reason}` : "unlocked";
  return (
    `${ws.name} (${ws.id})\n` +
    `execution: ${ws.executionMode}${ws.poolId ? ` on ${ws.poolId}` : ""}\n` +
    `engine: ${ws.engine} ${ws.engineVersion}\n` +
    `working directory: ${ws.workingDirectory || "(root)"}\n` +
    `auto-apply: ${ws.autoApply}\n` +
    `lock: ${lock}\n` +
    `current run: ${cell(ws.currentRunId)}\n`
  );
}

const list: Command = async (ctx, args) => {
  const { values } = parseCommand(args, {
    usage: "outpost workspaces list [--json]",
    options: {},
    positionals: [],
    required: 0,
  });
  const api = await ctx.api();
  const all: Workspace[] = [];
  let cursor: string | null = null;
  do {
    const path: string = `/api/v1/workspaces?limit=100${cursor ? `&cursor=${seg(cursor)}` : ""}`;
    const page = await api.call("GET", path, WorkspaceList);
    all.push(...page.workspaces);
    cursor = page.nextCursor;
  } while (cursor !== null);
  ctx.out.write(
    values.json
      ? json(all)
      : table([
          ["ID", "NAME", "MODE", "ENGINE", "AUTO-APPLY", "CURRENT RUN"],
          ...all.map((w) => [
            w.id,
            w.name,
            w.executionMode,
            `${w.engine} ${w.engineVersion}`,
            String(w.autoApply),
            cell(w.currentRunId),
          ]),
        ]),
  );
  return CLI_EXIT.ok;
};

const show: Command = async (ctx, args) => {
  const { values, positionals } = parseCommand(args, {
    usage: "outpost workspaces show WORKSPACE [--json]",
    options: {},
    positionals: ["WORKSPACE"],
    required: 1,
  });
  const ws = await (await ctx.api()).call(
    "GET",
    `/api/v1/workspaces/${seg(positionals[0] ?? "")}`,
    Workspace,
  );
  ctx.out.write(values.json ? json(ws) : describe(ws));
  return CLI_EXIT.ok;
};

const create: Command = async (ctx, args) => {
  const { values, positionals } = parseCommand(args, {
    usage: `outpost workspaces create NAME --engine-version V ${SETTINGS_USAGE}`,
    options: settings,
    positionals: ["NAME"],
    required: 1,
  });
  if (values["engine-version"] === undefined) {
    throw new UsageError("missing --engine-version (e.g. --engine-version 1.9.5)");
  }
  const ws = await (await ctx.api()).call("POST", "/api/v1/workspaces", Workspace, {
    name: positionals[0],
    ...settingsBody(values),
  });
  ctx.out.write(values.json ? json(ws) : `${ws.id}\n`);
  ctx.err.write(`Created workspace ${ws.name}\n`);
  return CLI_EXIT.ok;
};

const update: Command = async (ctx, args) => {
  const { values, positionals } = parseCommand(args, {
    usage: `outpost workspaces update WORKSPACE [--name NAME] ${SETTINGS_USAGE}`,
    options: { ...settings, name: { type: "string" } },
    positionals: ["WORKSPACE"],
    required: 1,
  });
  const body = {
    ...(values.name === undefined ? {} : { name: values.name }),
    ...settingsBody(values),
  };
  if (Object.keys(body).length === 0) {
    throw new UsageError("nothing to change: give at least one setting flag");
  }
  const ws = await (await ctx.api()).call(
    "PATCH",
    `/api/v1/workspaces/${seg(positionals[0] ?? "")}`,
    Workspace,
    body,
  );
  ctx.out.write(values.json ? json(ws) : describe(ws));
  return CLI_EXIT.ok;
};

const remove: Command = async (ctx, args) => {
  const { positionals } = parseCommand(args, {
    usage: "outpost workspaces delete WORKSPACE",
    options: {},
    positionals: ["WORKSPACE"],
    required: 1,
  });
  const ws = await (await ctx.api()).call(
    "DELETE",
    `/api/v1/workspaces/${seg(positionals[0] ?? "")}`,
    Workspace,
  );
  ctx.err.write(`Deleted workspace ${ws.name}\n`);
  return CLI_EXIT.ok;
};

const lock: Command = async (ctx, args) => {
  const { positionals, values } = parseCommand(args, {
    usage: "outpost workspaces lock WORKSPACE --reason TEXT",
    options: { reason: { type: "string" } },
    positionals: ["WORKSPACE"],
    required: 1,
  });
  const ws = await (await ctx.api()).call(
    "POST",
    `/api/v1/workspaces/${seg(positionals[0] ?? "")}/lock`,
    Workspace,
    { reason: values.reason ?? "locked with the outpost CLI" },
  );
  ctx.err.write(`Locked workspace ${ws.name}\n`);
  return CLI_EXIT.ok;
};

const unlock: Command = async (ctx, args) => {
  const { positionals, values } = parseCommand(args, {
    usage: "outpost workspaces unlock WORKSPACE [--force]",
    options: { force: { type: "boolean" } },
    positionals: ["WORKSPACE"],
    required: 1,
  });
  const force = values.force ? "?force=true" : "";
  const ws = await (await ctx.api()).call(
    "POST",
    `/api/v1/workspaces/${seg(positionals[0] ?? "")}/unlock${force}`,
    Workspace,
  );
  ctx.err.write(`Unlocked workspace ${ws.name}\n`);
  return CLI_EXIT.ok;
};

export const workspaces = group("workspaces", {
  list,
  show,
  create,
  update,
  delete: remove,
  lock,
  unlock,
});

const varsList: Command = async (ctx, args) => {
  const { values, positionals } = parseCommand(args, {
    usage: "outpost vars list WORKSPACE [--json]",
    options: {},
    positionals: ["WORKSPACE"],
    required: 1,
  });
  const { variables } = await (await ctx.api()).call(
    "GET",
    `/api/v1/workspaces/${seg(positionals[0] ?? "")}/vars`,
    VariableList,
  );
  ctx.out.write(
    values.json
      ? json(variables)
      : table([
          ["KEY", "CATEGORY", "VALUE", "HCL"],
          ...variables.map((v) => [
            v.key,
            v.category,
            v.sensitive ? "(sensitive)" : cell(v.value),
            String(v.hcl),
          ]),
        ]),
  );
  return CLI_EXIT.ok;
};

const varsSet: Command = async (ctx, args) => {
  const usage =
    "outpost vars set WORKSPACE KEY VALUE|- [--env] [--hcl] [--sensitive] [--description TEXT] (- reads the value from stdin)";
  const { values, positionals } = parseCommand(args, {
    usage,
    options: {
      env: { type: "boolean" },
      hcl: { type: "boolean" },
      sensitive: { type: "boolean" },
      description: { type: "string" },
    },
    positionals: ["WORKSPACE", "KEY", "VALUE"],
    required: 3,
  });
  const [workspace = "", key = "", given = ""] = positionals;
  // A secret on the command line lands in shell history; `-` takes it from stdin instead.
  const value = given === "-" ? ((await ctx.readStdin()) ?? "").replace(/\r?\n$/, "") : given;
  const variable = await (await ctx.api()).call(
    "PUT",
    `/api/v1/workspaces/${seg(workspace)}/vars/${seg(key)}`,
    Variable,
    {
      value,
      category: values.env ? "env" : "terraform",
      hcl: values.hcl === true,
      sensitive: values.sensitive === true,
      ...(values.description === undefined ? {} : { description: values.description }),
    },
  );
  ctx.err.write(
    `Set ${variable.category} variable ${variable.key}${variable.sensitive ? " (sensitive)" : ""}\n`,
  );
  return CLI_EXIT.ok;
};

const varsDelete: Command = async (ctx, args) => {
  const { values, positionals } = parseCommand(args, {
    usage: "outpost vars delete WORKSPACE KEY [--category env|terraform]",
    options: { category: { type: "string" } },
    positionals: ["WORKSPACE", "KEY"],
    required: 2,
  });
  const query = values.category === undefined ? "" : `?category=${seg(values.category)}`;
  const variable = await (await ctx.api()).call(
    "DELETE",
    `/api/v1/workspaces/${seg(positionals[0] ?? "")}/vars/${seg(positionals[1] ?? "")}${query}`,
    Variable,
  );
  ctx.err.write(`Deleted ${variable.category} variable ${variable.key}\n`);
  return CLI_EXIT.ok;
};

export const vars = group("vars", { list: varsList, set: varsSet, delete: varsDelete });
