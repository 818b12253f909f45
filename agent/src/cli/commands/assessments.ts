/** `outpost assessments start|list WORKSPACE`: drift checks of a workspace (docs/workspaces.md). */
import { must } from "../api.ts";
import { command, group } from "../args.ts";
import { CLI_EXIT } from "../errors.ts";
import { cell, json, table } from "../output.ts";

const workspace = (positionals: string[]) => ({
  params: { path: { workspaceId: positionals[0] ?? "" } },
});

const start = command(
  {
    summary: "check a workspace for drift now (a refresh-only plan that changes nothing)",
    options: {},
    positionals: ["WORKSPACE"],
    required: 1,
  },
  async (ctx, { values, positionals }) => {
    const assessment = await must(
      (await ctx.api()).client.POST(
        "/api/v1/workspaces/{workspaceId}/assessments",
        workspace(positionals),
      ),
    );
    ctx.out.write(values.json ? json(assessment) : `${assessment.id}\n`);
    ctx.err.write(`Started assessment ${assessment.id} (run ${assessment.runId})\n`);
    return CLI_EXIT.ok;
  },
);

const list = command(
  {
    summary: "list a workspace's assessments, newest first",
    options: {},
    positionals: ["WORKSPACE"],
    required: 1,
  },
  async (ctx, { values, positionals }) => {
    const page = await must(
      (await ctx.api()).client.GET("/api/v1/workspaces/{workspaceId}/assessments", {
        params: { path: { workspaceId: positionals[0] ?? "" }, query: { limit: 100 } },
      }),
    );
    ctx.out.write(
      values.json
        ? json(page.assessments)
        : table([
            ["ID", "STATUS", "DRIFTED", "RUN", "CREATED", "REASON"],
            ...page.assessments.map((a) => [
              a.id,
              a.status,
              a.driftedResources.join(", ") || "-",
              a.runId,
              a.createdAt,
              cell(a.reason),
            ]),
          ]),
    );
    return CLI_EXIT.ok;
  },
);

export const assessments = group("workspace drift checks", { start, list });
