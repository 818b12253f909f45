import { must } from "../api.ts";
import { command, group } from "../args.ts";
import { CLI_EXIT, UsageError } from "../errors.ts";
import type { Workspace } from "../models.ts";
import { cell, json, table } from "../output.ts";
import {
  categoryFlag,
  deleteQuery,
  deleteVariableOptions,
  setVariableOptions,
  variableBody,
} from "./variable-args.ts";
import { effectiveVars } from "./varsets.ts";

const settings = {
  description: { type: "string", description: "what the workspace is for" },
  pool: { type: "string", description: "agent pool (id or name) the runs go to" },
  project: { type: "string", description: "project (id or name) the workspace belongs to" },
  "execution-mode": { type: "string", description: "agent or local" },
  engine: { type: "string", description: "terraform, tofu or pulumi" },
  "engine-version": {
    type: "string",
    description: 'latest (the default), 1.9.5, "~> 1.9" or ">= 1.6, < 2.0"; ^3.150 for Pulumi',
  },
  "stack-name": {
    type: "string",
    description: "the Pulumi stack (dev, or org/project/dev); Pulumi workspaces need one",
  },
  "working-directory": { type: "string", description: "inside the configuration" },
  "auto-apply": { type: "boolean", description: "apply without confirmation" },
  "no-auto-apply": { type: "boolean", description: "wait for confirmation" },
  "workload-identity": {
    type: "boolean",
    description: "hand every job (not a fork's) a signed OIDC token for cloud credentials",
  },
  "no-workload-identity": { type: "boolean", description: "hand jobs no workload identity" },
  "workload-identity-audience": {
    type: "string",
    description: "that token's aud (e.g. sts.amazonaws.com); empty for the issuer URL",
  },
  assessments: { type: "boolean", description: "check for drift on an interval" },
  "no-assessments": { type: "boolean", description: "stop checking for drift" },
  "assessment-interval": {
    type: "string",
    description: "minutes between drift checks, 60 to 10080 (default 1440, daily)",
  },
  "auto-remediate": { type: "boolean", description: "queue a plan when drift is found" },
  "no-auto-remediate": { type: "boolean", description: "only report drift" },
  tag: {
    type: "strings",
    description: "a tag, repeatable; on update the tags given replace the workspace's tags",
  },
} as const;

type SettingsValues = {
  description?: string;
  pool?: string;
  project?: string;
  "execution-mode"?: string;
  engine?: string;
  "engine-version"?: string;
  "stack-name"?: string;
  "working-directory"?: string;
  "auto-apply"?: boolean;
  "no-auto-apply"?: boolean;
  "workload-identity"?: boolean;
  "no-workload-identity"?: boolean;
  "workload-identity-audience"?: string;
  assessments?: boolean;
  "no-assessments"?: boolean;
  "assessment-interval"?: string;
  "auto-remediate"?: boolean;
  "no-auto-remediate"?: boolean;
  tag?: string[];
};

/** The JSON body for the given flags; the coordinator validates the values. */
function settingsBody(values: SettingsValues) {
  const mode = values["execution-mode"];
  const engine = values.engine;
  return {
    ...(values.description === undefined ? {} : { description: values.description }),
    ...(values.pool === undefined ? {} : { poolId: values.pool }),
    ...(values.project === undefined ? {} : { projectId: values.project }),
    // Passed as given: the coordinator answers 400 naming the allowed values.
    ...(mode === undefined ? {} : { executionMode: mode as Workspace["executionMode"] }),
    ...(engine === undefined ? {} : { engine: engine as Workspace["engine"] }),
    ...(values["engine-version"] === undefined ? {} : { engineVersion: values["engine-version"] }),
    ...(values["stack-name"] === undefined ? {} : { stackName: values["stack-name"] }),
    ...(values["working-directory"] === undefined
      ? {}
      : { workingDirectory: values["working-directory"] }),
    ...(values["auto-apply"] || values["no-auto-apply"]
      ? { autoApply: values["auto-apply"] === true }
      : {}),
    ...(values["workload-identity"] || values["no-workload-identity"]
      ? { workloadIdentity: values["workload-identity"] === true }
      : {}),
    ...workloadAudience(values["workload-identity-audience"]),
    ...assessmentSettings(values),
    ...(values.tag === undefined ? {} : { tags: values.tag }),
  };
}

/** The drift detection flags; the coordinator checks the interval's range. */
function assessmentSettings(values: SettingsValues) {
  const interval = values["assessment-interval"];
  if (interval !== undefined && !/^\d+$/.test(interval)) {
    throw new UsageError(
      `--assessment-interval must be a whole number of minutes, not ${interval}`,
    );
  }
  return {
    ...(values.assessments || values["no-assessments"]
      ? { assessmentsEnabled: values.assessments === true }
      : {}),
    ...(interval === undefined ? {} : { assessmentIntervalMinutes: Number(interval) }),
    ...(values["auto-remediate"] || values["no-auto-remediate"]
      ? { autoRemediate: values["auto-remediate"] === true }
      : {}),
  };
}

/** The drift line: the last verdict, and how the next check comes. */
function drift(ws: Workspace): string {
  const last = ws.lastAssessmentAt ? ` (checked ${ws.lastAssessmentAt})` : "";
  const every = ws.assessmentsEnabled
    ? `assessments every ${ws.assessmentIntervalMinutes} min${ws.autoRemediate ? ", auto-remediate" : ""}`
    : "assessments off";
  return `${ws.driftStatus}${last}; ${every}`;
}

/** `--workload-identity-audience ""` goes back to the default (the issuer URL). */
function workloadAudience(value: string | undefined) {
  if (value === undefined) {
    return {};
  }
  return { workloadIdentityAudience: value.trim() === "" ? null : value };
}

function describe(ws: Workspace): string {
  const lock = ws.lock ? `locked by ${ws.lock.lockedBy}: ${ws.lock.reason}` : "unlocked";
  return (
    `${ws.name} (${ws.id})\n` +
    `project: ${ws.projectId}\n` +
    `execution: ${ws.executionMode}${ws.poolId ? ` on ${ws.poolId}` : ""}\n` +
    `engine: ${ws.engine} ${ws.engineVersion}\n` +
    `working directory: ${ws.workingDirectory || "(root)"}\n` +
    `auto-apply: ${ws.autoApply}\n` +
    `tags: ${ws.tags?.length ? ws.tags.join(", ") : "(none)"}\n` +
    `workload identity: ${ws.workloadIdentity ? `on, audience ${ws.workloadIdentityAudience ?? "(the issuer URL)"}` : "off"}\n` +
    `drift: ${drift(ws)}\n` +
    `lock: ${lock}\n` +
    `current run: ${cell(ws.currentRunId)}\n`
  );
}

const workspace = (positionals: string[]) => ({
  params: { path: { workspaceId: positionals[0] ?? "" } },
});

const list = command(
  {
    summary: "list workspaces",
    options: { project: { type: "string", description: "only this project's (id or name)" } },
    positionals: [],
    required: 0,
  },
  async (ctx, { values }) => {
    const api = await ctx.api();
    const all: Workspace[] = [];
    let cursor: string | null = null;
    do {
      const query: { limit: number; cursor?: string; projectId?: string } = { limit: 100 };
      if (values.project !== undefined) {
        query.projectId = values.project;
      }
      if (cursor !== null) {
        query.cursor = cursor;
      }
      const page = await must(api.client.GET("/api/v1/workspaces", { params: { query } }));
      all.push(...page.workspaces);
      cursor = page.nextCursor;
    } while (cursor !== null);
    ctx.out.write(
      values.json
        ? json(all)
        : table([
            ["ID", "NAME", "MODE", "ENGINE", "AUTO-APPLY", "DRIFT", "CURRENT RUN"],
            ...all.map((w) => [
              w.id,
              w.name,
              w.executionMode,
              `${w.engine} ${w.engineVersion}`,
              String(w.autoApply),
              w.driftStatus,
              cell(w.currentRunId),
            ]),
          ]),
    );
    return CLI_EXIT.ok;
  },
);

const show = command(
  {
    summary: "show a workspace (by id or name)",
    options: {},
    positionals: ["WORKSPACE"],
    required: 1,
  },
  async (ctx, { values, positionals }) => {
    const ws = await must(
      (await ctx.api()).client.GET("/api/v1/workspaces/{workspaceId}", workspace(positionals)),
    );
    ctx.out.write(values.json ? json(ws) : describe(ws));
    return CLI_EXIT.ok;
  },
);

const create = command(
  {
    summary: "create a workspace",
    options: settings,
    positionals: ["NAME"],
    required: 1,
  },
  async (ctx, { values, positionals }) => {
    const ws = await must(
      (await ctx.api()).client.POST("/api/v1/workspaces", {
        body: { name: positionals[0] ?? "", ...settingsBody(values) },
      }),
    );
    ctx.out.write(values.json ? json(ws) : `${ws.id}\n`);
    const engine = `${ws.engine} ${ws.engineVersion}`;
    ctx.err.write(`Created workspace ${ws.name} (${ws.executionMode}, ${engine})\n`);
    return CLI_EXIT.ok;
  },
);

const update = command(
  {
    summary: "change a workspace's settings",
    options: { ...settings, name: { type: "string", description: "new name" } },
    positionals: ["WORKSPACE"],
    required: 1,
  },
  async (ctx, { values, positionals }) => {
    const body = {
      ...(values.name === undefined ? {} : { name: values.name }),
      ...settingsBody(values),
    };
    if (Object.keys(body).length === 0) {
      throw new UsageError("nothing to change: give at least one setting flag");
    }
    const ws = await must(
      (await ctx.api()).client.PATCH("/api/v1/workspaces/{workspaceId}", {
        ...workspace(positionals),
        body,
      }),
    );
    ctx.out.write(values.json ? json(ws) : describe(ws));
    return CLI_EXIT.ok;
  },
);

const remove = command(
  { summary: "delete a workspace", options: {}, positionals: ["WORKSPACE"], required: 1 },
  async (ctx, { positionals }) => {
    const ws = await must(
      (await ctx.api()).client.DELETE("/api/v1/workspaces/{workspaceId}", workspace(positionals)),
    );
    ctx.err.write(`Deleted workspace ${ws.name}\n`);
    return CLI_EXIT.ok;
  },
);

const lock = command(
  {
    summary: "lock a workspace: new runs wait",
    options: { reason: { type: "string", description: "shown to whoever waits" } },
    positionals: ["WORKSPACE"],
    required: 1,
  },
  async (ctx, { positionals, values }) => {
    const ws = await must(
      (await ctx.api()).client.POST("/api/v1/workspaces/{workspaceId}/lock", {
        ...workspace(positionals),
        body: { reason: values.reason ?? "locked with the outpost CLI" },
      }),
    );
    ctx.err.write(`Locked workspace ${ws.name}\n`);
    return CLI_EXIT.ok;
  },
);

const unlock = command(
  {
    summary: "unlock a workspace",
    options: {
      force: { type: "boolean", description: "also a lock held by someone else (admin)" },
    },
    positionals: ["WORKSPACE"],
    required: 1,
  },
  async (ctx, { positionals, values }) => {
    const ws = await must(
      (await ctx.api()).client.POST("/api/v1/workspaces/{workspaceId}/unlock", {
        params: {
          path: { workspaceId: positionals[0] ?? "" },
          ...(values.force ? { query: { force: "true" } } : {}),
        },
      }),
    );
    ctx.err.write(`Unlocked workspace ${ws.name}\n`);
    return CLI_EXIT.ok;
  },
);

export const workspaces = group("workspaces", {
  list,
  show,
  create,
  update,
  delete: remove,
  lock,
  unlock,
});

const varsList = command(
  { summary: "list a workspace's variables", options: {}, positionals: ["WORKSPACE"], required: 1 },
  async (ctx, { values, positionals }) => {
    const { variables } = await must(
      (await ctx.api()).client.GET("/api/v1/workspaces/{workspaceId}/vars", workspace(positionals)),
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
  },
);

const varsSet = command(
  {
    summary: "set a variable; VALUE - reads it from stdin",
    options: setVariableOptions,
    positionals: ["WORKSPACE", "KEY", "VALUE"],
    required: 3,
  },
  async (ctx, { values, positionals }) => {
    const [workspaceId = "", key = "", given = ""] = positionals;
    const variable = await must(
      (await ctx.api()).client.PUT("/api/v1/workspaces/{workspaceId}/vars/{key}", {
        params: { path: { workspaceId, key } },
        body: await variableBody(ctx, values, given),
      }),
    );
    ctx.err.write(
      `Set ${variable.category} variable ${variable.key}${variable.sensitive ? " (sensitive)" : ""}\n`,
    );
    return CLI_EXIT.ok;
  },
);

const varsDelete = command(
  {
    summary: "delete a variable",
    options: deleteVariableOptions,
    positionals: ["WORKSPACE", "KEY"],
    required: 2,
  },
  async (ctx, { values, positionals }) => {
    const variable = await must(
      (await ctx.api()).client.DELETE("/api/v1/workspaces/{workspaceId}/vars/{key}", {
        params: {
          path: { workspaceId: positionals[0] ?? "", key: positionals[1] ?? "" },
          ...deleteQuery(categoryFlag(values.category)),
        },
      }),
    );
    ctx.err.write(`Deleted ${variable.category} variable ${variable.key}\n`);
    return CLI_EXIT.ok;
  },
);

export const vars = group("workspace variables", {
  list: varsList,
  set: varsSet,
  delete: varsDelete,
  effective: effectiveVars,
});
