/**
 * One run: status and why it waits, the status timeline, the plan summary, the actions the
 * viewer's role allows, and the plan/apply log tails (ANSI colours as classes, text escaped).
 * The summary, timeline and actions are also the fragments of the live endpoint.
 */
import { canForceCancel, planCancel, type RunAction } from "../../runs/model.ts";
import type { presentRun } from "../../runs/present.ts";
import type { RunRow } from "../../runs/queries.ts";
import { parseAnsi } from "../ansi.ts";
import { Badge, Csrf, Layout, Notice, Time, type Viewer, viewerMay } from "../layout.tsx";
import { VcsFeedback } from "./vcs-feedback.tsx";

type Run = ReturnType<typeof presentRun>;

export type LogTail = { phase: "plan" | "apply"; text: string; nextOffset: number };

/**
 * What an empty log shows instead of a bare box: what the phase waits for. Null once the log
 * has text.
 */
export function logPlaceholder(run: Run, phase: "plan" | "apply"): string | null {
  const status = run.status;
  if (run.isTerminal) {
    return `No ${phase} log: the run ended (${status.replaceAll("_", " ")}) before this phase wrote any.`;
  }
  if (phase === "apply") {
    if (status === "planned") {
      return "Waiting for confirmation: the apply starts once someone confirms the plan.";
    }
    if (["pending", "plan_queued", "planning"].includes(status)) {
      return "The apply runs after the plan (and its confirmation, unless the workspace auto-applies).";
    }
  }
  if (run.waitingReason) {
    return `Waiting: ${run.waitingReason}.`;
  }
  return `The ${phase} has started; its output appears here as the agent sends it.`;
}

/** The placeholder inside an empty log box; the page script removes it when text arrives. */
export function LogPlaceholder(props: { run: Run; phase: "plan" | "apply" }) {
  const text = logPlaceholder(props.run, props.phase);
  return text ? (
    <span class="log-placeholder" id={`log-${props.phase}-placeholder`} data-placeholder="">
      {text}
    </span>
  ) : null;
}

/** Log text as escaped spans; only class names from the fixed ANSI set are emitted. */
export function LogText(props: { text: string }) {
  return (
    <>
      {parseAnsi(props.text).map((s) =>
        s.classes ? <span class={s.classes}>{s.text}</span> : s.text,
      )}
    </>
  );
}

/** Who queued, confirmed, discarded and canceled the run, by name (never a token id). */
function People(props: { run: Run }) {
  const rows = [
    ["Queued by", props.run.createdBy],
    ["Confirmed by", props.run.confirmedBy],
    ["Discarded by", props.run.discardedBy],
    ["Canceled by", props.run.canceledBy],
  ] as const;
  return (
    <>
      {rows.map(([label, actor]) =>
        actor ? (
          <>
            <dt>{label}</dt>
            <dd class="actor">
              {actor.name} <span class="muted">({actorWords(actor.type)})</span>
            </dd>
          </>
        ) : null,
      )}
    </>
  );
}

/** The kind of an actor in words. */
export function actorWords(type: string): string {
  const words: Record<string, string> = {
    user: "person",
    team: "team token",
    "org-token": "org token",
    vcs: "VCS",
    schedule: "schedule",
    run: "run",
    agent: "agent",
    system: "Outpost",
  };
  return words[type] ?? type;
}

/** What a run without a plan summary says: still to come, or why it never came. */
function noPlanText(run: Run): string {
  if (!run.isTerminal) {
    return "not planned yet";
  }
  const who = run.canceledBy ? ` by ${run.canceledBy.name}` : "";
  return run.status === "canceled" || run.status === "force_canceled"
    ? `none: the run was canceled${who} before its plan finished`
    : `none: the run ended (${run.status.replaceAll("_", " ")}) without a plan`;
}

/** The run's words for a title: "Plan and apply on network-prod", never a bare id. */
export function runTitle(run: Run, workspaceName: string): string {
  const words: Record<string, string> = {
    apply: "Plan and apply",
    plan: "Plan",
    destroy: "Destroy",
    refresh: "Refresh",
  };
  const operation = run.isSpeculative ? "Plan" : (words[run.operation] ?? run.operation);
  return `${operation} on ${workspaceName}`;
}

export function RunSummary(props: {
  run: Run;
  now: number;
  /** Pool id → name, so the pool a job ran in reads by name. */
  poolNames?: ReadonlyMap<string, string>;
}) {
  const { run } = props;
  const plan = run.planSummary as {
    adds?: number;
    changes?: number;
    destroys?: number;
    replaces?: number;
    sames?: number;
    hasChanges?: boolean;
  } | null;
  return (
    <dl class="facts">
      <dt>Status</dt>
      <dd>
        <Badge status={run.status} />
        {run.cancelRequestedAt ? (
          <span>
            {" "}
            cancel requested at <Time iso={run.cancelRequestedAt} now={props.now} />
          </span>
        ) : null}
      </dd>
      {run.statusReason && run.statusReason !== run.status.replaceAll("_", " ") ? (
        <>
          <dt>Reason</dt>
          <dd>{run.statusReason}</dd>
        </>
      ) : null}
      <dt>Why it waits</dt>
      <dd>{run.waitingReason ?? <span class="muted">not waiting</span>}</dd>
      <People run={run} />
      <dt>Plan</dt>
      <dd>
        {plan ? (
          plan.hasChanges === false ? (
            "No changes."
          ) : (
            `${plan.adds ?? 0} to add, ${plan.changes ?? 0} to change, ${plan.destroys ?? 0} to destroy` +
            (plan.replaces === undefined ? "" : `, ${plan.replaces} to replace`) +
            (plan.sames === undefined ? "" : `, ${plan.sames} unchanged`)
          )
        ) : (
          <span class="muted">{noPlanText(run)}</span>
        )}
      </dd>
      {run.jobs.map((job) => (
        <>
          <dt>{job.phase === "plan" ? "Plan ran on" : "Apply ran on"}</dt>
          <dd>
            agent{" "}
            <span class="mono">
              {job.agent.name ? `${job.agent.name} (${job.agent.id})` : job.agent.id}
            </span>{" "}
            v{job.agent.version} in pool{" "}
            <a href={`/ui/pools/${job.poolId}`}>{props.poolNames?.get(job.poolId) ?? job.poolId}</a>
            , isolation {job.agent.isolation}
            {job.engineVersion ? `, engine ${job.engineVersion}` : ""} · started{" "}
            <Time iso={job.startedAt} now={props.now} />
          </dd>
        </>
      ))}
      {run.planSha256 ? (
        <>
          <dt>Plan file</dt>
          <dd>
            SHA-256 <span class="mono">{run.planSha256}</span>; the apply runs only this plan
          </dd>
        </>
      ) : null}
    </dl>
  );
}

export function Timeline(props: { run: Run; now: number }) {
  const entries = Object.entries(props.run.statusTimestamps)
    .filter((e): e is [string, string] => typeof e[1] === "string")
    .sort((a, b) => a[1].localeCompare(b[1]));
  return (
    <ol class="timeline">
      {entries.map(([status, at]) => (
        <li class={status === props.run.status ? "current" : undefined}>
          <Badge status={status} /> <Time iso={at} now={props.now} />
        </li>
      ))}
    </ol>
  );
}

/** The buttons this viewer may use on this run now; the server checks both again on submit. */
export function RunActions(props: { viewer: Viewer; row: RunRow }) {
  const { row, viewer } = props;
  const mayApply = viewerMay(viewer, "run.confirm");
  const mayCancel = viewerMay(viewer, "run.cancel");
  if (!mayApply && !mayCancel) {
    return <p class="muted">Your access can view runs but not act on them.</p>;
  }
  const status = row.status;
  const actions: { action: RunAction; label: string; danger?: boolean }[] = [];
  if (status === "planned" && mayApply) {
    actions.push({ action: "confirm", label: "Confirm and apply" });
  }
  if (status === "planned" && viewerMay(viewer, "run.discard")) {
    actions.push({ action: "discard", label: "Discard", danger: true });
  }
  if (mayCancel && planCancel(status, row.cancelRequestedAt).kind !== "refused") {
    actions.push({ action: "cancel", label: "Cancel run", danger: true });
  }
  const force = canForceCancel(status, row.cancelRequestedAt, props.viewer.now);
  if (mayCancel && force.ok) {
    actions.push({ action: "force-cancel", label: "Force cancel", danger: true });
  }
  if (actions.length === 0) {
    return (
      <p class="muted">
        {!force.ok && force.reason === "too_soon"
          ? "Canceling: force cancel becomes available 10 s after the cancel."
          : "No actions available."}
      </p>
    );
  }
  return (
    <div class="row">
      {actions.map((a) => (
        <form method="post" action={`/ui/runs/${row.id}/${a.action}`} class="inline">
          <Csrf token={viewer.csrf} />
          <button type="submit" class={a.danger ? "danger" : undefined}>
            {a.label}
          </button>
        </form>
      ))}
    </div>
  );
}

export function RunPage(props: {
  viewer: Viewer;
  run: Run;
  row: RunRow;
  workspaceName: string;
  logs: LogTail[];
  feedback?: Parameters<typeof VcsFeedback>[0]["feedback"];
  poolNames?: ReadonlyMap<string, string>;
  notice?: string | undefined;
  error?: string | undefined;
}) {
  const { run } = props;
  return (
    <Layout title={runTitle(run, props.workspaceName)} section="workspaces" viewer={props.viewer}>
      {props.error ? <Notice kind="error">{props.error}</Notice> : null}
      <div id="run-notice">{props.notice ? <Notice kind="ok">{props.notice}</Notice> : null}</div>
      <p>
        Run <span class="mono">{run.id}</span> · Workspace{" "}
        <a href={`/ui/workspaces/${run.workspaceId}`}>{props.workspaceName}</a> · {run.operation}
        {run.isSpeculative ? " (speculative)" : ""} · queued{" "}
        <Time iso={run.createdAt} now={props.viewer.now} />
        {run.message ? ` · ${run.message}` : ""}
      </p>
      <div data-live={`/ui/runs/${run.id}/live.json`} data-interval="1000">
        <div id="run-summary" aria-live="polite">
          <RunSummary run={run} now={props.viewer.now} poolNames={props.poolNames} />
        </div>
        <h2>Actions</h2>
        <div id="run-actions">
          <RunActions viewer={props.viewer} row={props.row} />
        </div>
        <h2>Timeline</h2>
        <div id="run-timeline">
          <Timeline run={run} now={props.viewer.now} />
        </div>
        <VcsFeedback feedback={props.feedback ?? []} now={props.viewer.now} />
        {props.logs.map((log) => (
          <section>
            <h2 id={`log-${log.phase}-heading`}>
              {log.phase === "plan" ? "Plan log" : "Apply log"}
            </h2>
            <pre
              class="log"
              role="log"
              id={`log-${log.phase}`}
              data-log={log.phase}
              data-offset={String(log.nextOffset)}
              tabindex={0}
              aria-labelledby={`log-${log.phase}-heading`}
            >
              {log.text === "" ? (
                <LogPlaceholder run={run} phase={log.phase} />
              ) : (
                <LogText text={log.text} />
              )}
            </pre>
          </section>
        ))}
      </div>
    </Layout>
  );
}
