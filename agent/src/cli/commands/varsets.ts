/**
 * `outpost varsets …`: variable sets, whose variables reach every workspace (global), the
 * workspaces of the projects they are applied to, and the workspaces they are applied to by name.
 * A set is named by its `varset_…` id or its name everywhere.
 */
import { done, must } from "../api.ts";
import { command, group } from "../args.ts";
import type { CliContext } from "../context.ts";
import { CLI_EXIT, UsageError } from "../errors.ts";
import type { EffectiveVariable, VariableSet } from "../models.ts";
import { cell, json, table } from "../output.ts";
import {
  categoryFlag,
  deleteQuery,
  deleteVariableOptions,
  setVariableOptions,
  variableBody,
} from "./variable-args.ts";

const varset = (positionals: string[]) => ({
  params: { path: { varsetId: positionals[0] ?? "" } },
});

function reach(set: VariableSet): string {
  if (set.global) {
    return "every workspace";
  }
  const names = [
    ...set.projects.map((p) => `project ${p.name}`),
    ...set.workspaces.map((w) => `workspace ${w.name}`),
  ];
  return names.join(", ") || "-";
}

const list = command(
  { summary: "list variable sets", options: {}, positionals: [], required: 0 },
  async (ctx, { values }) => {
    const api = await ctx.api();
    const all: VariableSet[] = [];
    let cursor: string | null = null;
    do {
      const query: { limit: number; cursor?: string } = { limit: 100 };
      if (cursor !== null) {
        query.cursor = cursor;
      }
      const page = await must(api.client.GET("/api/v1/variable-sets", { params: { query } }));
      all.push(...page.variableSets);
      cursor = page.nextCursor;
    } while (cursor !== null);
    ctx.out.write(
      values.json
        ? json(all)
        : table([
            ["ID", "NAME", "PRIORITY", "VARIABLES", "APPLIED TO"],
            ...all.map((s) => [
              s.id,
              s.name,
              String(s.priority),
              String(s.variableCount),
              reach(s),
            ]),
          ]),
    );
    return CLI_EXIT.ok;
  },
);

const show = command(
  {
    summary: "show a variable set with its variables",
    options: {},
    positionals: ["VARSET"],
    required: 1,
  },
  async (ctx, { values, positionals }) => {
    const api = await ctx.api();
    const [set, { variables }] = await Promise.all([
      must(api.client.GET("/api/v1/variable-sets/{varsetId}", varset(positionals))),
      must(api.client.GET("/api/v1/variable-sets/{varsetId}/vars", varset(positionals))),
    ]);
    if (values.json) {
      ctx.out.write(json({ ...set, variables }));
      return CLI_EXIT.ok;
    }
    ctx.out.write(
      `${set.name} (${set.id})${set.priority ? " priority" : ""}\n` +
        `${set.description ? `${set.description}\n` : ""}` +
        `applied to: ${reach(set)}\n\n`,
    );
    ctx.out.write(
      table([
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
  },
);

const flags = {
  description: { type: "string", description: "what the set is for" },
  global: { type: "boolean", description: "apply to every workspace of the organization" },
  "no-global": { type: "boolean", description: "apply only where applied by name or project" },
  priority: { type: "boolean", description: "win over the workspaces' own variables" },
  "no-priority": { type: "boolean", description: "rank below the workspaces' own variables" },
} as const;

function setBody(values: {
  description?: string;
  global?: boolean;
  "no-global"?: boolean;
  priority?: boolean;
  "no-priority"?: boolean;
}) {
  return {
    ...(values.description === undefined ? {} : { description: values.description }),
    ...(values.global || values["no-global"] ? { global: values.global === true } : {}),
    ...(values.priority || values["no-priority"] ? { priority: values.priority === true } : {}),
  };
}

const create = command(
  { summary: "create a variable set", options: flags, positionals: ["NAME"], required: 1 },
  async (ctx, { values, positionals }) => {
    const set = await must(
      (await ctx.api()).client.POST("/api/v1/variable-sets", {
        body: { name: positionals[0] ?? "", ...setBody(values) },
      }),
    );
    ctx.out.write(values.json ? json(set) : `${set.id}\n`);
    ctx.err.write(`Created variable set ${set.name}\n`);
    return CLI_EXIT.ok;
  },
);

const update = command(
  {
    summary: "change a variable set's name, description, global or priority",
    options: { ...flags, name: { type: "string", description: "new name" } },
    positionals: ["VARSET"],
    required: 1,
  },
  async (ctx, { values, positionals }) => {
    const body = {
      ...(values.name === undefined ? {} : { name: values.name }),
      ...setBody(values),
    };
    if (Object.keys(body).length === 0) {
      throw new UsageError("nothing to change: give at least one flag");
    }
    const set = await must(
      (await ctx.api()).client.PATCH("/api/v1/variable-sets/{varsetId}", {
        ...varset(positionals),
        body,
      }),
    );
    ctx.out.write(values.json ? json(set) : `${set.id}\n`);
    return CLI_EXIT.ok;
  },
);

const remove = command(
  { summary: "delete a variable set", options: {}, positionals: ["VARSET"], required: 1 },
  async (ctx, { positionals }) => {
    await done(
      (await ctx.api()).client.DELETE("/api/v1/variable-sets/{varsetId}", varset(positionals)),
    );
    ctx.err.write(`Deleted variable set ${positionals[0] ?? ""}\n`);
    return CLI_EXIT.ok;
  },
);

const set = command(
  {
    summary: "set a variable of the set; VALUE - reads it from stdin",
    options: setVariableOptions,
    positionals: ["VARSET", "KEY", "VALUE"],
    required: 3,
  },
  async (ctx, { values, positionals }) => {
    const [varsetId = "", key = "", given = ""] = positionals;
    const variable = await must(
      (await ctx.api()).client.PUT("/api/v1/variable-sets/{varsetId}/vars/{key}", {
        params: { path: { varsetId, key } },
        body: await variableBody(ctx, values, given),
      }),
    );
    ctx.err.write(
      `Set ${variable.category} variable ${variable.key}${variable.sensitive ? " (sensitive)" : ""} in ${varsetId}\n`,
    );
    return CLI_EXIT.ok;
  },
);

const unset = command(
  {
    summary: "delete a variable of the set",
    options: deleteVariableOptions,
    positionals: ["VARSET", "KEY"],
    required: 2,
  },
  async (ctx, { values, positionals }) => {
    const variable = await must(
      (await ctx.api()).client.DELETE("/api/v1/variable-sets/{varsetId}/vars/{key}", {
        params: {
          path: { varsetId: positionals[0] ?? "", key: positionals[1] ?? "" },
          ...deleteQuery(categoryFlag(values.category)),
        },
      }),
    );
    ctx.err.write(`Deleted ${variable.category} variable ${variable.key}\n`);
    return CLI_EXIT.ok;
  },
);

const target = {
  project: { type: "string", description: "a project (id or name)" },
  workspace: { type: "string", description: "a workspace (id or name)" },
} as const;

function targetOf(values: { project?: string; workspace?: string }) {
  if ((values.project === undefined) === (values.workspace === undefined)) {
    throw new UsageError("give exactly one of --project or --workspace");
  }
  return values.project === undefined
    ? { workspaceId: values.workspace ?? "" }
    : { projectId: values.project };
}

/** Applies or unapplies the set, by the route of the target's kind. */
async function link(
  ctx: CliContext,
  method: "PUT" | "DELETE",
  varsetId: string,
  to: { projectId: string } | { workspaceId: string },
): Promise<VariableSet> {
  const { client } = await ctx.api();
  if ("projectId" in to) {
    const params = { params: { path: { varsetId, projectId: to.projectId } } };
    const path = "/api/v1/variable-sets/{varsetId}/projects/{projectId}";
    return must(method === "PUT" ? client.PUT(path, params) : client.DELETE(path, params));
  }
  const params = { params: { path: { varsetId, workspaceId: to.workspaceId } } };
  const path = "/api/v1/variable-sets/{varsetId}/workspaces/{workspaceId}";
  return must(method === "PUT" ? client.PUT(path, params) : client.DELETE(path, params));
}

const apply = command(
  {
    summary: "apply the set to a project's workspaces or to one workspace",
    options: target,
    positionals: ["VARSET"],
    required: 1,
  },
  async (ctx, { values, positionals }) => {
    const updated = await link(ctx, "PUT", positionals[0] ?? "", targetOf(values));
    ctx.out.write(values.json ? json(updated) : "");
    ctx.err.write(`Variable set ${updated.name} applies to ${reach(updated)}\n`);
    return CLI_EXIT.ok;
  },
);

const unapply = command(
  {
    summary: "stop applying the set to a project or a workspace",
    options: target,
    positionals: ["VARSET"],
    required: 1,
  },
  async (ctx, { values, positionals }) => {
    const updated = await link(ctx, "DELETE", positionals[0] ?? "", targetOf(values));
    ctx.out.write(values.json ? json(updated) : "");
    ctx.err.write(`Variable set ${updated.name} applies to ${reach(updated)}\n`);
    return CLI_EXIT.ok;
  },
);

export const varsets = group("variable sets", {
  list,
  show,
  create,
  update,
  delete: remove,
  set,
  unset,
  apply,
  unapply,
});

function sourceName(v: EffectiveVariable): string {
  const s = v.source;
  return s.type === "workspace" ? "workspace" : `${s.priority ? "priority " : ""}set ${s.name}`;
}

/** `outpost vars effective WORKSPACE`: what a run of the workspace gets, with each source. */
export const effectiveVars = command(
  {
    summary: "list what a run of the workspace gets, each variable with its source",
    options: {},
    positionals: ["WORKSPACE"],
    required: 1,
  },
  async (ctx, { values, positionals }) => {
    const answer = await must(
      (await ctx.api()).client.GET("/api/v1/workspaces/{workspaceId}/effective-variables", {
        params: { path: { workspaceId: positionals[0] ?? "" } },
      }),
    );
    ctx.out.write(
      values.json
        ? json(answer)
        : table([
            ["KEY", "CATEGORY", "VALUE", "SOURCE"],
            ...answer.variables.map((v) => [
              v.key,
              v.category,
              v.sensitive ? "(sensitive)" : cell(v.value),
              sourceName(v),
            ]),
          ]),
    );
    return CLI_EXIT.ok;
  },
);
