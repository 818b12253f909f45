/**
 * The run page, its live JSON endpoint (status fragments and log tails from byte offsets), and
 * the run actions, each through the same service function and role as `/api/v1/runs/…`.
 */
import { z } from "@hono/zod-openapi";
import { type Context, Hono } from "hono";
import {
  decideProject,
  decideWorkspace,
  type Grants,
  type WorkspaceAction,
  workspaceRefusal,
} from "../authz/model.ts";
import { actorOf } from "../authz/principal.ts";
import { readableWorkspaces } from "../authz/queries.ts";
import { grantsOn, grantsOnProject } from "../authz/service.ts";
import { runs } from "../db/schema.ts";
import { ApiError, valueOrThrow } from "../errors.ts";
import { listPools } from "../pools/service.ts";
import { resolveProject } from "../projects/service.ts";
import { runLog } from "../runs/blobs.ts";
import { listRunJobs } from "../runs/job-records.ts";
import { listRuns } from "../runs/list.ts";
import {
  isPhaseOver,
  jobId,
  RUN_ACTIONS,
  RUN_SOURCES,
  RUN_STATUSES,
  TERMINAL_STATUSES,
} from "../runs/model.ts";
import { presentRun } from "../runs/present.ts";
import { getRun, type RunRow } from "../runs/queries.ts";
import { cancelRun, confirmRun, discardRun, forceCancelRun } from "../runs/service.ts";
import { whyWaiting } from "../runs/why.ts";
import { presentFeedback } from "../vcs-feedback/present.ts";
import { feedbackOfRun } from "../vcs-feedback/queries.ts";
import type { WorkspaceRow } from "../workspaces/queries.ts";
import { getWorkspacesByIds } from "../workspaces/queries.ts";
import { resolveWorkspace } from "../workspaces/service.ts";
import { idOf, noticeText, readForm, redirectWithNotice, viewerOf } from "./forms.ts";
import { RunListPage } from "./pages/run-list.tsx";
import {
  type LogTail,
  LogText,
  logPlaceholder,
  RunActions,
  RunPage,
  RunSummary,
  Timeline,
} from "./pages/runs.tsx";
import type { UiEnv } from "./session.ts";

/** Bytes of log one page load or one poll reads at most. */
const LOG_READ_BYTES = 256 * 1024;

/**
 * The action notice while it is still news: "the apply is queued" stops being true once the apply
 * runs, and every notice once the run has ended (the page then says what happened).
 */
function noticeFor(c: Context<UiEnv>, row: RunRow): string | undefined {
  return isNoticeStale(row) ? undefined : noticeText(c, NOTICES);
}

function isNoticeStale(row: RunRow): boolean {
  return row.status === "applying" || TERMINAL_STATUSES.includes(row.status);
}

const NOTICES = {
  confirm: "Confirmed: the apply is queued.",
  discard: "The run was discarded.",
  cancel: "Cancel requested.",
  "force-cancel": "The run was force-canceled.",
};

/**
 * The run of the page and its workspace once `may` allowed `action` there; a run of a workspace
 * the viewer cannot see is not found.
 */
async function runOf(
  c: Context<UiEnv>,
  action: WorkspaceAction = "workspace.read",
): Promise<{ row: RunRow; workspace: WorkspaceRow; grants: Grants }> {
  const id = idOf(c, "runId", "run");
  const run = await getRun(c.var.db, c.var.session.orgId, id);
  const workspace = run && (await resolveWorkspace(c.var.db, c.var.session.orgId, run.workspaceId));
  const grants = workspace ? await grantsOn(c.var.db, c.var.session.principal, workspace) : null;
  const decision = grants ? decideWorkspace(grants, action) : "not_found";
  if (!run || !workspace || !grants || decision === "not_found") {
    throw new ApiError("NOT_FOUND", `run ${id} not found`);
  }
  if (decision === "forbidden") {
    throw new ApiError("FORBIDDEN", workspaceRefusal(action, workspace.name));
  }
  return { row: run, workspace, grants };
}

function phasesOf(run: RunRow): ("plan" | "apply")[] {
  return run.isSpeculative ? ["plan"] : ["plan", "apply"];
}

/**
 * Log text from `offset`, cut after the last complete line while the phase may still write, so
 * no line (or UTF-8 sequence) is split between two reads.
 */
async function readTail(
  c: Context<UiEnv>,
  run: RunRow,
  phase: "plan" | "apply",
  offset: number,
): Promise<LogTail & { isDone: boolean }> {
  const log = runLog(c.env, run.workspaceId);
  const read = await log.read(jobId(run.id, phase), offset, LOG_READ_BYTES);
  let bytes = new Uint8Array(read.data);
  const over = read.isComplete || isPhaseOver(run.status, phase);
  if (!read.isComplete && bytes.byteLength > 0) {
    const lastNewline = bytes.lastIndexOf(10);
    bytes = lastNewline < 0 ? new Uint8Array() : bytes.subarray(0, lastNewline + 1);
  }
  return {
    phase,
    text: new TextDecoder().decode(bytes),
    nextOffset: offset + bytes.byteLength,
    isDone: over && bytes.byteLength === 0,
  };
}

const actor = (c: Context<UiEnv>) => actorOf(c.var.session.principal);

/** The org's pools by id, for naming the pool a job ran in (as the workspace page: org roles). */
async function poolNamesOf(c: Context<UiEnv>): Promise<Map<string, string>> {
  const { principal, orgId } = c.var.session;
  const pools = principal.role === null ? [] : await listPools(c.var.db, orgId);
  return new Map(pools.map((p) => [p.id, p.name]));
}

/** Each action with what `may` must allow and what it does. */
const actions = {
  confirm: {
    needs: "run.confirm",
    run: (c: Context<UiEnv>, run: RunRow, workspace: WorkspaceRow) =>
      confirmRun(c.var.deps, run, workspace, actor(c)),
  },
  discard: {
    needs: "run.discard",
    run: (c: Context<UiEnv>, run: RunRow) => discardRun(c.var.deps, run, actor(c)),
  },
  cancel: {
    needs: "run.cancel",
    run: (c: Context<UiEnv>, run: RunRow) => cancelRun(c.var.deps, run, actor(c)),
  },
  "force-cancel": {
    needs: "run.cancel",
    run: (c: Context<UiEnv>, run: RunRow) => forceCancelRun(c.var.deps, run, actor(c)),
  },
} as const satisfies Record<string, { needs: WorkspaceAction; run: unknown }>;

const ListQuery = z.object({
  status: z.enum(RUN_STATUSES).optional(),
  source: z.enum(RUN_SOURCES).optional(),
  workspace: z.string().max(200).optional(),
  project: z.string().max(200).optional(),
  pool: z
    .string()
    .regex(/^pool_[a-z2-7]{26}$/, "must be a pool_ id")
    .optional(),
  agent: z
    .string()
    .regex(/^agt_[a-z2-7]{26}$/, "must be an agt_ id")
    .optional(),
  cursor: z.string().max(1000).optional(),
});

/** Empty form fields are no filter. */
function filledQuery(c: Context<UiEnv>) {
  return Object.fromEntries(Object.entries(c.req.query()).filter(([, value]) => value !== ""));
}

/** The project a filter names, if the viewer may read it; otherwise 404 like a missing one. */
async function readableProject(c: Context<UiEnv>, ref: string) {
  const { principal, orgId } = c.var.session;
  const project = await resolveProject(c.var.db, orgId, ref);
  const grants = project ? await grantsOnProject(c.var.db, principal, project) : null;
  if (!project || !grants || decideProject(grants, "project.read") !== "allow") {
    throw new ApiError("NOT_FOUND", `project ${ref} not found`);
  }
  return project;
}

export const runPages = new Hono<UiEnv>()
  .get("/", async (c) => {
    const parsed = ListQuery.safeParse(filledQuery(c));
    if (!parsed.success) {
      throw new ApiError(
        "BAD_REQUEST",
        `invalid filter: ${parsed.error.issues[0]?.path.join(".")} ${parsed.error.issues[0]?.message}`,
      );
    }
    const query = parsed.data;
    const { principal, orgId } = c.var.session;
    const workspace = query.workspace
      ? await resolveWorkspace(c.var.db, orgId, query.workspace)
      : undefined;
    const grants = workspace ? await grantsOn(c.var.db, principal, workspace) : undefined;
    if (
      query.workspace &&
      (!workspace || !grants || decideWorkspace(grants, "workspace.read") !== "allow")
    ) {
      throw new ApiError("NOT_FOUND", `workspace ${query.workspace} not found`);
    }
    const project = query.project ? await readableProject(c, query.project) : undefined;
    const page = valueOrThrow(
      await listRuns(
        c.var.deps,
        {
          orgId,
          visible: readableWorkspaces(c.var.db, principal, runs.workspaceId),
          ...(workspace ? { workspaceId: workspace.id } : {}),
          ...(project ? { projectId: project.id } : {}),
          ...(query.status ? { status: query.status } : {}),
          ...(query.source ? { source: query.source } : {}),
          ...(query.pool ? { poolId: query.pool } : {}),
          ...(query.agent ? { agentId: query.agent } : {}),
        },
        { limit: 50, cursor: query.cursor },
      ),
    );
    const names = await getWorkspacesByIds(c.var.db, [
      ...new Set(page.runs.map((r) => r.workspaceId)),
    ]);
    return c.html(
      <RunListPage
        viewer={viewerOf(c)}
        runs={page.runs}
        workspaceNames={new Map(names.map((w) => [w.id, w.name]))}
        filters={query}
        nextCursor={page.nextCursor}
      />,
    );
  })
  .get("/:runId", async (c) => {
    const { row, workspace, grants } = await runOf(c);
    const [waiting, logs, jobs, feedback] = await Promise.all([
      whyWaiting(c.var.deps, row),
      Promise.all(phasesOf(row).map((phase) => readTail(c, row, phase, 0))),
      listRunJobs(c.var.db, [row.id]),
      feedbackOfRun(c.var.db, row.id),
    ]);
    return c.html(
      <RunPage
        viewer={viewerOf(c, grants)}
        run={presentRun(row, waiting, jobs.get(row.id))}
        row={row}
        workspaceName={workspace.name}
        logs={logs}
        feedback={presentFeedback(feedback)}
        poolNames={await poolNamesOf(c)}
        notice={noticeFor(c, row)}
      />,
    );
  })
  .get("/:runId/live.json", async (c) => {
    const { row } = await runOf(c);
    const offsets = z
      .strictObject({
        planOffset: z.coerce.number().int().min(0).default(0),
        applyOffset: z.coerce.number().int().min(0).default(0),
      })
      .safeParse(c.req.query());
    if (!offsets.success) {
      throw new ApiError("BAD_REQUEST", "planOffset and applyOffset must be whole byte offsets");
    }
    const [waiting, jobs] = await Promise.all([
      whyWaiting(c.var.deps, row),
      listRunJobs(c.var.db, [row.id]),
    ]);
    const run = presentRun(row, waiting, jobs.get(row.id));
    const viewer = viewerOf(c);
    const logs = await Promise.all(
      phasesOf(row).map((phase) =>
        readTail(
          c,
          row,
          phase,
          phase === "plan" ? offsets.data.planOffset : offsets.data.applyOffset,
        ),
      ),
    );
    const poolNames = await poolNamesOf(c);
    const [summary, actionsHtml, timeline, ...logHtml] = await Promise.all([
      (<RunSummary run={run} now={viewer.now} poolNames={poolNames} />).toString(),
      (<RunActions viewer={viewer} row={row} />).toString(),
      (<Timeline run={run} now={viewer.now} />).toString(),
      ...logs.map((log) => (<LogText text={log.text} />).toString()),
    ]);
    // While a log is still empty its placeholder follows the run (queued → waiting → started);
    // rendered through JSX like every fragment, so a pool name in the reason stays text.
    const placeholders = Object.fromEntries(
      await Promise.all(
        phasesOf(row).map(async (phase) => [
          `log-${phase}-placeholder`,
          await (logPlaceholder(run, phase) ?? "").toString(),
        ]),
      ),
    );
    c.header("Cache-Control", "no-store");
    return c.json({
      status: row.status,
      fragments: {
        "run-summary": summary,
        "run-actions": actionsHtml,
        "run-timeline": timeline,
        // A stale notice goes; a current one is left as the page rendered it.
        ...(isNoticeStale(row) ? { "run-notice": "" } : {}),
        ...placeholders,
      },
      logs: logs.map((log, i) => ({
        phase: log.phase,
        nextOffset: log.nextOffset,
        html: logHtml[i] ?? "",
      })),
      done: run.isTerminal && logs.every((log) => log.isDone),
    });
  })
  .post("/:runId/:action{confirm|discard|cancel|force-cancel}", async (c) => {
    const action = z.enum(RUN_ACTIONS).parse(c.req.param("action"));
    const { row, workspace } = await runOf(c, actions[action].needs);
    await readForm(c, z.strictObject({}));
    valueOrThrow(await actions[action].run(c, row, workspace));
    return redirectWithNotice(c, `/ui/runs/${row.id}`, action);
  });
