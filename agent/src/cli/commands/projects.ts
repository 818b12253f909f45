/**
 * `outpost projects …`: projects group workspaces; a team's access to a project counts on every
 * workspace in it. A project is named by its `prj_…` id or its name everywhere.
 */
import { done, must } from "../api.ts";
import { command, group } from "../args.ts";
import { CLI_EXIT, UsageError } from "../errors.ts";
import type { Project } from "../models.ts";
import { json, table } from "../output.ts";

const project = (positionals: string[]) => ({
  params: { path: { projectId: positionals[0] ?? "" } },
});

const list = command(
  { summary: "list projects", options: {}, positionals: [], required: 0 },
  async (ctx, { values }) => {
    const api = await ctx.api();
    const all: Project[] = [];
    let cursor: string | null = null;
    do {
      const query: { limit: number; cursor?: string } = { limit: 100 };
      if (cursor !== null) {
        query.cursor = cursor;
      }
      const page = await must(api.client.GET("/api/v1/projects", { params: { query } }));
      all.push(...page.projects);
      cursor = page.nextCursor;
    } while (cursor !== null);
    ctx.out.write(
      values.json
        ? json(all)
        : table([
            ["ID", "NAME", "WORKSPACES", "DESCRIPTION"],
            ...all.map((p) => [
              p.id,
              p.isDefault ? `${p.name} (default)` : p.name,
              String(p.workspaceCount),
              p.description,
            ]),
          ]),
    );
    return CLI_EXIT.ok;
  },
);

const show = command(
  {
    summary: "show a project with its workspaces and team access",
    options: {},
    positionals: ["PROJECT"],
    required: 1,
  },
  async (ctx, { values, positionals }) => {
    const api = await ctx.api();
    const [found, access, spaces] = await Promise.all([
      must(api.client.GET("/api/v1/projects/{projectId}", project(positionals))),
      must(api.client.GET("/api/v1/projects/{projectId}/team-access", project(positionals))),
      must(
        api.client.GET("/api/v1/workspaces", {
          params: { query: { projectId: positionals[0] ?? "", limit: 100 } },
        }),
      ),
    ]);
    if (values.json) {
      ctx.out.write(
        json({ ...found, teamAccess: access.teamAccess, workspaces: spaces.workspaces }),
      );
      return CLI_EXIT.ok;
    }
    const more = spaces.nextCursor === null ? "" : ", …";
    ctx.out.write(
      `${found.name} (${found.id})${found.isDefault ? " default project" : ""}\n` +
        `${found.description ? `${found.description}\n` : ""}` +
        `workspaces (${found.workspaceCount}): ${spaces.workspaces.map((w) => w.name).join(", ") || "-"}${more}\n\n`,
    );
    ctx.out.write(
      table([["TEAM", "ACCESS"], ...access.teamAccess.map((a) => [a.teamName, a.access])]),
    );
    return CLI_EXIT.ok;
  },
);

const create = command(
  {
    summary: "create a project",
    options: { description: { type: "string", description: "what the project holds" } },
    positionals: ["NAME"],
    required: 1,
  },
  async (ctx, { values, positionals }) => {
    const created = await must(
      (await ctx.api()).client.POST("/api/v1/projects", {
        body: {
          name: positionals[0] ?? "",
          ...(values.description === undefined ? {} : { description: values.description }),
        },
      }),
    );
    ctx.out.write(values.json ? json(created) : `${created.id}\n`);
    ctx.err.write(`Created project ${created.name}\n`);
    return CLI_EXIT.ok;
  },
);

const update = command(
  {
    summary: "rename or redescribe a project",
    options: {
      name: { type: "string", description: "new name" },
      description: { type: "string", description: "new description" },
    },
    positionals: ["PROJECT"],
    required: 1,
  },
  async (ctx, { values, positionals }) => {
    const body = {
      ...(values.name === undefined ? {} : { name: values.name }),
      ...(values.description === undefined ? {} : { description: values.description }),
    };
    if (Object.keys(body).length === 0) {
      throw new UsageError("nothing to change: give --name or --description");
    }
    const updated = await must(
      (await ctx.api()).client.PATCH("/api/v1/projects/{projectId}", {
        ...project(positionals),
        body,
      }),
    );
    ctx.out.write(values.json ? json(updated) : `${updated.id}\n`);
    return CLI_EXIT.ok;
  },
);

const remove = command(
  { summary: "delete an empty project", options: {}, positionals: ["PROJECT"], required: 1 },
  async (ctx, { positionals }) => {
    await done(
      (await ctx.api()).client.DELETE("/api/v1/projects/{projectId}", project(positionals)),
    );
    ctx.err.write(`Deleted project ${positionals[0] ?? ""}\n`);
    return CLI_EXIT.ok;
  },
);

const ACCESS_LEVELS = ["read", "plan", "write", "admin"] as const;
type AccessLevel = (typeof ACCESS_LEVELS)[number];

function accessLevel(value: string | undefined): AccessLevel {
  const level = ACCESS_LEVELS.find((l) => l === value);
  if (!level) {
    throw new UsageError(`--access must be one of ${ACCESS_LEVELS.join(", ")}`);
  }
  return level;
}

const grant = command(
  {
    summary: "give a team access to every workspace of the project",
    options: { access: { type: "string", description: "read, plan, write or admin" } },
    positionals: ["PROJECT", "TEAM_ID"],
    required: 2,
  },
  async (ctx, { values, positionals }) => {
    const access = accessLevel(values.access);
    const [projectId = "", teamId = ""] = positionals;
    const granted = await must(
      (await ctx.api()).client.PUT("/api/v1/projects/{projectId}/team-access/{teamId}", {
        params: { path: { projectId, teamId } },
        body: { access },
      }),
    );
    ctx.out.write(values.json ? json(granted) : "");
    ctx.err.write(
      `Team ${granted.teamName} has ${granted.access} access to project ${projectId}\n`,
    );
    return CLI_EXIT.ok;
  },
);

const revoke = command(
  {
    summary: "remove a team's access to the project",
    options: {},
    positionals: ["PROJECT", "TEAM_ID"],
    required: 2,
  },
  async (ctx, { positionals }) => {
    const [projectId = "", teamId = ""] = positionals;
    await done(
      (await ctx.api()).client.DELETE("/api/v1/projects/{projectId}/team-access/{teamId}", {
        params: { path: { projectId, teamId } },
      }),
    );
    ctx.err.write(`Removed team ${teamId}'s access to project ${projectId}\n`);
    return CLI_EXIT.ok;
  },
);

export const projects = group("projects and their team access", {
  list,
  show,
  create,
  update,
  delete: remove,
  grant,
  revoke,
});
