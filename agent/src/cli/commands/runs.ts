import { ProtocolError } from "../../client/http.ts";
import { must, seg, type UserApi } from "../api.ts";
import type { components, operations } from "../api-types.ts";
import { command, group } from "../args.ts";
import type { CliContext } from "../context.ts";
import { CLI_EXIT, type CliExitCode, UsageError } from "../errors.ts";
import { describeEnd, exitCodeFor, followLog, getRun, runUrl, waitFor } from "../follow.ts";
import type { Run } from "../models.ts";
import { cell, json, table } from "../output.ts";
import { packConfiguration } from "../pack.ts";
import { describeRun } from "./run-text.ts";

const QUEUED = ["pending", "plan_queued"];
const BEFORE_APPLY = ["confirmed", "apply_queued"];

type ConfigurationVersion = components["schemas"]["ConfigurationVersion"];

/**
 * Packs DIR (default `.`), uploads it, queues a run and follows it: the plan log live, then, if
 * confirmed (`--confirm`/`--auto-approve`, or the workspace auto-applies), the apply log. Exit
 * code from how the run ended (0 applied/planned, 1 errored, 3 canceled/discarded). The first
 * Ctrl-C cancels the run and keeps following; a second one stops following.
 */
export const run = command(
  {
    summary: "upload DIR, queue a run and follow it (plan, then apply when confirmed)",
    options: {
      workspace: {
        type: "string",
        short: "w",
        description: "workspace id or name (or OUTPOST_WORKSPACE)",
      },
      message: { type: "string", short: "m", description: "the run's message" },
      "plan-only": { type: "boolean", description: "a speculative plan, never applied" },
      destroy: { type: "boolean", description: "a destroy run" },
      refresh: {
        type: "boolean",
        description: "a refresh run: record drift in the state, change nothing else",
      },
      confirm: { type: "boolean", description: "confirm the plan and apply it" },
      "auto-approve": { type: "boolean", description: "same as --confirm" },
      "no-follow": { type: "boolean", description: "print the run id and return" },
    },
    positionals: ["DIR"],
    required: 0,
  },
  async (ctx, { values, positionals }) => {
    const workspace = values.workspace ?? ctx.env.OUTPOST_WORKSPACE;
    if (!workspace) {
      throw new UsageError("missing --workspace (or OUTPOST_WORKSPACE) (see outpost run --help)");
    }
    if (values["plan-only"] && (values.confirm || values["auto-approve"] || values.destroy)) {
      throw new UsageError(
        "--plan-only cannot be combined with --confirm, --auto-approve or --destroy",
      );
    }
    const dir = positionals[0] ?? ".";
    const packed = await packConfiguration(dir);
    const api = await ctx.api();
    const upload = await api.raw(
      "POST",
      `/api/v1/workspaces/${seg(workspace)}/configuration-versions`,
      {
        body: packed.archive,
        headers: { "content-type": "application/gzip" },
        timeoutMs: 10 * 60_000,
      },
    );
    const cv = (await upload.json().catch((error: unknown) => {
      throw new ProtocolError(`configuration upload: the answer is not JSON (${String(error)})`);
    })) as ConfigurationVersion;
    ctx.err.write(
      `Uploaded ${dir} as ${cv.id} (${packed.entries.length} entries, ${packed.archive.length} bytes)\n`,
    );
    const queued = await must(
      api.client.POST("/api/v1/workspaces/{workspaceId}/runs", {
        params: { path: { workspaceId: workspace } },
        body: {
          operation: values["plan-only"]
            ? "plan"
            : values.destroy
              ? "destroy"
              : values.refresh
                ? "refresh"
                : "apply",
          isSpeculative: values["plan-only"] === true,
          message: values.message ?? `Queued with outpost run from ${dir}`,
          configurationVersionId: cv.id,
        },
      }),
    );
    ctx.err.write(`Queued run ${queued.id}: ${runUrl(api.address, queued.id)}\n`);
    if (values["no-follow"]) {
      ctx.out.write(values.json ? json(queued) : `${queued.id}\n`);
      return CLI_EXIT.ok;
    }
    return followRun(ctx, api, queued.id, {
      confirm: values.confirm === true || values["auto-approve"] === true,
      json: values.json === true,
      showPlan: true,
    });
  },
);

/** POSTs a run action (confirm, discard, cancel, force-cancel) and returns the run. */
function runAction(
  api: UserApi,
  runId: string,
  action: "confirm" | "discard" | "cancel" | "force-cancel",
): Promise<Run> {
  const params = { params: { path: { runId } } };
  switch (action) {
    case "confirm":
      return must(api.client.POST("/api/v1/runs/{runId}/confirm", params));
    case "discard":
      return must(api.client.POST("/api/v1/runs/{runId}/discard", params));
    case "cancel":
      return must(api.client.POST("/api/v1/runs/{runId}/cancel", params));
    case "force-cancel":
      return must(api.client.POST("/api/v1/runs/{runId}/force-cancel", params));
  }
}

/** Follows a run from wherever it is to where it stops; see {@link run}. */
async function followRun(
  ctx: CliContext,
  api: UserApi,
  runId: string,
  options: { confirm: boolean; json: boolean; showPlan: boolean },
): Promise<CliExitCode> {
  let interrupts = 0;
  const stopListening = ctx.onInterrupt(() => {
    interrupts += 1;
    if (interrupts > 1) {
      ctx.err.write(`\nStopped following; run ${runId} continues on the coordinator\n`);
      ctx.exit(CLI_EXIT.interrupted);
    }
    ctx.err.write(`\nCanceling run ${runId} (Ctrl-C again to stop following)…\n`);
    runAction(api, runId, "cancel").catch((error: unknown) => {
      ctx.err.write(`Cancel refused: ${error instanceof Error ? error.message : String(error)}\n`);
    });
  });
  try {
    if (options.showPlan) {
      await waitFor(api, runId, (r) => !QUEUED.includes(r.status), ctx);
      await followLog(api, runId, "plan", ctx);
    }
    let current = await waitFor(
      api,
      runId,
      (r) => ![...QUEUED, "planning"].includes(r.status),
      ctx,
    );
    if (current.status === "planned" && current.isAutoApply) {
      current = await waitFor(api, runId, (r) => r.status !== "planned", ctx);
    } else if (current.status === "planned" && options.confirm) {
      current = await runAction(api, runId, "confirm");
      ctx.err.write(`Confirmed run ${runId}; applying\n`);
    }
    if ([...BEFORE_APPLY, "applying", "applied"].includes(current.status)) {
      await waitFor(api, runId, (r) => !BEFORE_APPLY.includes(r.status), ctx);
      await followLog(api, runId, "apply", ctx);
      current = await waitFor(api, runId, (r) => r.isTerminal, ctx);
    }
    return finish(ctx, current, options.json);
  } finally {
    stopListening();
  }
}

function finish(ctx: CliContext, run: Run, asJson: boolean): CliExitCode {
  if (asJson) {
    ctx.out.write(json(run));
  }
  ctx.err.write(`${describeEnd(run)}\n`);
  return exitCodeFor(run);
}

export const confirm = command(
  {
    summary: "confirm a planned run",
    options: { follow: { type: "boolean", description: "follow the apply" } },
    positionals: ["RUN_ID"],
    required: 1,
  },
  async (ctx, { values, positionals }) => {
    const runId = positionals[0] ?? "";
    const api = await ctx.api();
    const confirmed = await runAction(api, runId, "confirm");
    if (!values.follow) {
      return finishQuietly(ctx, api, confirmed, values.json === true);
    }
    ctx.err.write(`Confirmed run ${runId}: ${runUrl(api.address, runId)}\n`);
    return followRun(ctx, api, runId, {
      confirm: false,
      json: values.json === true,
      showPlan: false,
    });
  },
);

export const discard = command(
  { summary: "discard a planned run", options: {}, positionals: ["RUN_ID"], required: 1 },
  async (ctx, { values, positionals }) => {
    const api = await ctx.api();
    const discarded = await runAction(api, positionals[0] ?? "", "discard");
    return finishQuietly(ctx, api, discarded, values.json === true);
  },
);

export const cancel = command(
  {
    summary: "cancel a run (--force: kill it, 10 s after a cancel)",
    options: { force: { type: "boolean", description: "force-cancel" } },
    positionals: ["RUN_ID"],
    required: 1,
  },
  async (ctx, { values, positionals }) => {
    const action = values.force ? "force-cancel" : "cancel";
    const api = await ctx.api();
    const canceled = await runAction(api, positionals[0] ?? "", action);
    return finishQuietly(ctx, api, canceled, values.json === true);
  },
);

const ACTION_DONE: Partial<Record<Run["status"], string>> = {
  confirmed: "confirmed; its apply is queued",
  apply_queued: "confirmed; its apply is queued",
  discarded: "discarded",
  canceled: "canceled",
  force_canceled: "force-canceled",
};

/** Reports an action's result with the run's URL; the action succeeded, so the exit is 0. */
function finishQuietly(ctx: CliContext, api: UserApi, run: Run, asJson: boolean): CliExitCode {
  ctx.out.write(asJson ? json(run) : "");
  const what = ACTION_DONE[run.status] ?? `now ${run.status.replaceAll("_", " ")}`;
  const pending =
    run.cancelRequestedAt && !run.isTerminal ? " (canceling: the engine was told to stop)" : "";
  ctx.err.write(`Run ${run.id} ${what}${pending}: ${runUrl(api.address, run.id)}\n`);
  return CLI_EXIT.ok;
}

export const logs = command(
  {
    summary: "print a run's log",
    options: {
      phase: { type: "string", description: "plan (default) or apply" },
      follow: { type: "boolean", short: "f", description: "keep printing until the phase ends" },
    },
    positionals: ["RUN_ID"],
    required: 1,
  },
  async (ctx, { values, positionals }) => {
    const phase = values.phase ?? "plan";
    if (phase !== "plan" && phase !== "apply") {
      throw new UsageError("--phase must be plan or apply");
    }
    const runId = positionals[0] ?? "";
    const api = await ctx.api();
    await followLog(api, runId, phase, ctx, { follow: values.follow === true });
    if (!values.follow) {
      return CLI_EXIT.ok;
    }
    const last = await getRun(api, runId);
    return last.isTerminal ? exitCodeFor(last) : CLI_EXIT.ok;
  },
);

type ListFilter = "status" | "source" | "project" | "pool" | "agent";

const runsList = command(
  {
    summary: "list the organization's runs, newest first (a workspace's with WORKSPACE)",
    options: {
      status: { type: "string", description: "only runs in this status (e.g. planned)" },
      source: {
        type: "string",
        description: "api, cli, ui, github, gitlab, schedule, run-trigger",
      },
      project: {
        type: "string",
        description: "only runs of the workspaces in this project (id or name)",
      },
      pool: { type: "string", description: "only runs of this agent pool (pool_…)" },
      agent: { type: "string", description: "only runs an agent (agt_…) ran a phase of" },
      limit: { type: "string", description: "how many runs (1-100, default 50)" },
    },
    positionals: ["WORKSPACE"],
    required: 0,
  },
  async (ctx, { values, positionals }) => {
    const limit = values.limit === undefined ? 50 : Number(values.limit);
    if (!Number.isInteger(limit) || limit < 1 || limit > 100) {
      throw new UsageError("--limit must be a whole number from 1 to 100");
    }
    const filters: Partial<Record<ListFilter, string>> = {
      status: values.status,
      source: values.source,
      project: values.project,
      pool: values.pool,
      agent: values.agent,
    };
    const query = {
      limit,
      ...(positionals[0] ? { workspaceId: positionals[0] } : {}),
      ...(filters.status ? { status: filters.status } : {}),
      ...(filters.source ? { source: filters.source } : {}),
      ...(filters.project ? { projectId: filters.project } : {}),
      ...(filters.pool ? { poolId: filters.pool } : {}),
      ...(filters.agent ? { agentId: filters.agent } : {}),
      // The coordinator checks the names and answers a sentence for a wrong one.
    } as NonNullable<operations["listRuns"]["parameters"]["query"]>;
    const { runs } = await must(
      (await ctx.api()).client.GET("/api/v1/runs", { params: { query } }),
    );
    ctx.out.write(
      values.json
        ? json(runs)
        : table([
            ["ID", "WORKSPACE", "STATUS", "OPERATION", "SOURCE", "AGENTS", "CREATED", "WHY"],
            ...runs.map((r) => [
              r.id,
              r.workspaceId,
              r.status,
              r.operation,
              r.source,
              cell(r.jobs.map((j) => `${j.phase}:${j.agent.name ?? j.agent.id}`).join(" ")),
              cell(r.createdAt),
              cell(r.waitingReason ?? r.statusReason),
            ]),
          ]),
    );
    return CLI_EXIT.ok;
  },
);

const runsShow = command(
  {
    summary: "show a run: status, why it waits, plan, which agent ran it, its dashboard URL",
    options: {},
    positionals: ["RUN_ID"],
    required: 1,
  },
  async (ctx, { values, positionals }) => {
    const api = await ctx.api();
    const shown = await getRun(api, positionals[0] ?? "");
    ctx.out.write(values.json ? json(shown) : describeRun(shown, api.address));
    return CLI_EXIT.ok;
  },
);

export const runs = group("runs", { list: runsList, show: runsShow });
