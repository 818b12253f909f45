/** `outpost schedules create|list|delete`: cron schedules of a workspace (docs/workspaces.md). */
import { done, must } from "../api.ts";
import { command, group } from "../args.ts";
import { CLI_EXIT } from "../errors.ts";
import { cell, json, table } from "../output.ts";

const OPERATIONS = ["plan", "apply", "refresh", "destroy"] as const;
type Operation = (typeof OPERATIONS)[number];

const create = command(
  {
    summary: "queue a run on a cron schedule",
    options: {
      cron: { type: "string", description: 'five fields, e.g. "0 6 * * 1-5"' },
      timezone: { type: "string", description: "IANA time zone (default UTC)" },
      operation: { type: "string", description: "plan, apply, refresh or destroy" },
    },
    positionals: ["WORKSPACE"],
    required: 1,
  },
  async (ctx, { values, positionals }) => {
    const schedule = await must(
      (await ctx.api()).client.POST("/api/v1/workspaces/{workspaceId}/schedules", {
        params: { path: { workspaceId: positionals[0] ?? "" } },
        body: {
          cron: values.cron ?? "",
          // Passed as given: the coordinator answers 400 naming the allowed values.
          operation: (values.operation ?? "plan") as Operation,
          ...(values.timezone === undefined ? {} : { timezone: values.timezone }),
        },
      }),
    );
    ctx.out.write(values.json ? json(schedule) : `${schedule.id}\n`);
    ctx.err.write(`Next ${schedule.operation} at ${cell(schedule.nextRunAt)}\n`);
    return CLI_EXIT.ok;
  },
);

const list = command(
  { summary: "list a workspace's schedules", options: {}, positionals: ["WORKSPACE"], required: 1 },
  async (ctx, { values, positionals }) => {
    const { schedules } = await must(
      (await ctx.api()).client.GET("/api/v1/workspaces/{workspaceId}/schedules", {
        params: { path: { workspaceId: positionals[0] ?? "" } },
      }),
    );
    ctx.out.write(
      values.json
        ? json(schedules)
        : table([
            ["ID", "CRON", "TIMEZONE", "OPERATION", "NEXT", "LAST"],
            ...schedules.map((s) => [
              s.id,
              s.cron,
              s.timezone,
              s.operation,
              cell(s.nextRunAt),
              s.lastOccurrence ? `${s.lastOccurrence.status} ${s.lastOccurrence.at}` : "-",
            ]),
          ]),
    );
    return CLI_EXIT.ok;
  },
);

const remove = command(
  {
    summary: "delete a schedule",
    options: {},
    positionals: ["WORKSPACE", "SCHEDULE"],
    required: 2,
  },
  async (ctx, { positionals }) => {
    await done(
      (await ctx.api()).client.DELETE("/api/v1/workspaces/{workspaceId}/schedules/{scheduleId}", {
        params: { path: { workspaceId: positionals[0] ?? "", scheduleId: positionals[1] ?? "" } },
      }),
    );
    ctx.err.write(`Deleted schedule ${positionals[1]}\n`);
    return CLI_EXIT.ok;
  },
);

export const schedules = group("cron schedules of a workspace", { create, list, delete: remove });
