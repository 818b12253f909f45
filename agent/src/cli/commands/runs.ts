import { readJson } from "../../client/http.ts";
import { seg, type UserApi } from "../api.ts";
import { parseCommand } from "../args.ts";
import type { CliContext, Command } from "../context.ts";
import { CLI_EXIT, type CliExitCode, UsageError } from "../errors.ts";
import { describeEnd, exitCodeFor, followLog, getRun, waitFor } from "../follow.ts";
import { cell, json, table } from "../output.ts";
import { packConfiguration } from "../pack.ts";
import { ConfigurationVersion, Run, RunList } from "../schemas.ts";
import { group } from "./group.ts";

const RUN_USAGE =
  "outpost run [DIR] --workspace WS [--message TEXT] [--plan-only] [--destroy] [--confirm|--auto-approve] [--no-follow]";
const QUEUED = ["pending", "plan_queued"];
const BEFORE_APPLY = ["confirmed", "apply_queued"];

/**
 * Packs DIR (default `.`), uploads it, queues a run and follows it: the plan log live, then, if
 * confirmed (`--confirm`/`--auto-approve`, or the workspace auto-applies), the apply log. Exit
 * code from how the run ended (0 applied/planned, 1 errored, 3 canceled/discarded). The first
 * Ctrl-C cancels the run and keeps following; a second one stops following.
 */
export const run: Command = async (ctx, args) => {
  const { values, positionals } = parseCommand(args, {
    usage: RUN_USAGE,
    options: {
      workspace: { type: "string", short: "w" },
      message: { type: "string", short: "m" },
      "plan-only": { type: "boolean" },
      destroy: { type: "boolean" },
      confirm: { type: "boolean" },
      "auto-approve": { type: "boolean" },
      "no-follow": { type: "boolean" },
    },
    positionals: ["DIR"],
    required: 0,
  });
  const workspace = values.workspace ?? ctx.env.OUTPOST_WORKSPACE;
  if (!workspace) {
    throw new UsageError(`missing --workspace (or OUTPOST_WORKSPACE) (usage: ${RUN_USAGE})`);
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
  const cv = await readJson(upload, ConfigurationVersion, "configuration upload");
  ctx.err.write(
    `Uploaded ${dir} as ${cv.id} (${packed.entries.length} entries, ${packed.archive.length} bytes)\n`,
  );
  const queued = await api.call("POST", `/api/v1/workspaces/${seg(workspace)}/runs`, Run, {
    operation: values["plan-only"] ? "plan" : values.destroy ? "destroy" : "apply",
    isSpeculative: values["plan-only"] === true,
    message: values.message ?? `Queued with outpost run from ${dir}`,
    configurationVersionId: cv.id,
  });
  ctx.err.write(`Queued run ${queued.id} in ${api.address}\n`);
  if (values["no-follow"]) {
    ctx.out.write(values.json ? json(queued) : `${queued.id}\n`);
    return CLI_EXIT.ok;
  }
  return followRun(ctx, api, queued.id, {
    confirm: values.confirm === true || values["auto-approve"] === true,
    json: values.json === true,
    showPlan: true,
  });
};

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
    api.call("POST", `/api/v1/runs/${seg(runId)}/cancel`, Run).catch((error: unknown) => {
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
      current = await api.call("POST", `/api/v1/runs/${seg(runId)}/confirm`, Run);
      ctx.err.write(`Confirmed run ${runId}\n`);
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

const oneRun = (usage: string, extra: Record<string, { type: "boolean" }> = {}) => ({
  usage,
  options: extra,
  positionals: ["RUN_ID"],
  required: 1,
});

export const confirm: Command = async (ctx, args) => {
  const { values, positionals } = parseCommand(
    args,
    oneRun("outpost confirm RUN_ID [--follow]", { follow: { type: "boolean" } }),
  );
  const runId = positionals[0] ?? "";
  const api = await ctx.api();
  const confirmed = await api.call("POST", `/api/v1/runs/${seg(runId)}/confirm`, Run);
  ctx.err.write(`Confirmed run ${runId}\n`);
  if (!values.follow) {
    return finishQuietly(ctx, confirmed, values.json === true);
  }
  return followRun(ctx, api, runId, {
    confirm: false,
    json: values.json === true,
    showPlan: false,
  });
};

export const discard: Command = async (ctx, args) => {
  const { values, positionals } = parseCommand(args, oneRun("outpost discard RUN_ID"));
  const discarded = await (await ctx.api()).call(
    "POST",
    `/api/v1/runs/${seg(positionals[0] ?? "")}/discard`,
    Run,
  );
  return finishQuietly(ctx, discarded, values.json === true);
};

export const cancel: Command = async (ctx, args) => {
  const { values, positionals } = parseCommand(
    args,
    oneRun("outpost cancel RUN_ID [--force]", { force: { type: "boolean" } }),
  );
  const action = values.force ? "force-cancel" : "cancel";
  const canceled = await (await ctx.api()).call(
    "POST",
    `/api/v1/runs/${seg(positionals[0] ?? "")}/${action}`,
    Run,
  );
  return finishQuietly(ctx, canceled, values.json === true);
};

/** Reports an action's result; the action succeeded, so the exit code is 0. */
function finishQuietly(ctx: CliContext, run: Run, asJson: boolean): CliExitCode {
  ctx.out.write(asJson ? json(run) : "");
  ctx.err.write(`Run ${run.id} is ${run.status}\n`);
  return CLI_EXIT.ok;
}

export const logs: Command = async (ctx, args) => {
  const { values, positionals } = parseCommand(args, {
    usage: "outpost logs RUN_ID [--phase plan|apply] [--follow]",
    options: { phase: { type: "string" }, follow: { type: "boolean", short: "f" } },
    positionals: ["RUN_ID"],
    required: 1,
  });
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
};

const runsList: Command = async (ctx, args) => {
  const { values, positionals } = parseCommand(args, {
    usage: "outpost runs list WORKSPACE [--json]",
    options: {},
    positionals: ["WORKSPACE"],
    required: 1,
  });
  const { runs } = await (await ctx.api()).call(
    "GET",
    `/api/v1/workspaces/${seg(positionals[0] ?? "")}/runs?limit=50`,
    RunList,
  );
  ctx.out.write(
    values.json
      ? json(runs)
      : table([
          ["ID", "STATUS", "OPERATION", "CREATED", "WHY"],
          ...runs.map((r) => [
            r.id,
            r.status,
            r.operation,
            cell(r.createdAt),
            cell(r.waitingReason ?? r.statusReason),
          ]),
        ]),
  );
  return CLI_EXIT.ok;
};

const runsShow: Command = async (ctx, args) => {
  const { values, positionals } = parseCommand(args, oneRun("outpost runs show RUN_ID [--json]"));
  const shown = await getRun(await ctx.api(), positionals[0] ?? "");
  ctx.out.write(
    values.json
      ? json(shown)
      : `${shown.id}: ${shown.status}${shown.statusReason ? ` (${shown.statusReason})` : ""}\n` +
          (shown.waitingReason ? `waiting: ${shown.waitingReason}\n` : "") +
          (shown.planSummary ? `plan: ${JSON.stringify(shown.planSummary)}\n` : ""),
  );
  return CLI_EXIT.ok;
};

export const runs = group("runs", { list: runsList, show: runsShow });
