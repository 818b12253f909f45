/**
 * Workspaces: the list, and one workspace with its execution mode and pool, lock, current run,
 * recent runs and variables (sensitive values are write-only: never rendered, only replaced).
 */
import type { presentPool } from "../../pools/model.ts";
import type { presentRun } from "../../runs/present.ts";
import type { EffectiveVariable } from "../../variables/effective.ts";
import type { Variable } from "../../variables/service.ts";
import type { Workspace } from "../../workspaces/service.ts";
import { Badge, Csrf, Layout, Notice, Time, type Viewer, viewerMay } from "../layout.tsx";
import { WorkloadIdentityForm, workloadIdentityText } from "./oidc.tsx";
import { type TeamAccessEntry, TeamAccessSection } from "./team-access.tsx";
import { EffectiveVariablesTable, VariableForm, VariablesTable } from "./variables.tsx";

type Pool = ReturnType<typeof presentPool>;
type Run = ReturnType<typeof presentRun>;

function PoolName(props: { poolId: string | null; pools: Pool[] }) {
  if (!props.poolId) {
    return <span class="muted">none</span>;
  }
  const pool = props.pools.find((p) => p.id === props.poolId);
  return <a href={`/ui/pools/${props.poolId}`}>{pool ? pool.name : props.poolId}</a>;
}

function Lock(props: { workspace: Workspace; now: number }) {
  const lock = props.workspace.lock;
  if (!lock) {
    return <span>unlocked</span>;
  }
  return (
    <span>
      locked by{" "}
      {lock.holderKind === "run" ? (
        <a class="mono" href={`/ui/runs/${lock.lockedBy}`}>
          {lock.lockedBy}
        </a>
      ) : (
        <span class="mono">{lock.lockedBy}</span>
      )}
      {lock.reason ? ` (${lock.reason})` : ""} since <Time iso={lock.lockedAt} now={props.now} />
    </span>
  );
}

const DRIFT_LABELS: Record<Workspace["driftStatus"], string> = {
  unknown: "not checked",
  no_drift: "no drift",
  drifted: "drifted",
  errored: "check failed",
};

/** The workspace's drift status from its last assessment, as a badge. */
export function DriftBadge(props: { workspace: Workspace }) {
  const status = props.workspace.driftStatus;
  return (
    <span class={`badge drift-${status}`} data-drift={status}>
      {DRIFT_LABELS[status]}
    </span>
  );
}

function Drift(props: { workspace: Workspace; now: number }) {
  const ws = props.workspace;
  return (
    <span>
      <DriftBadge workspace={ws} />
      {ws.lastAssessmentAt ? (
        <>
          {" "}
          checked <Time iso={ws.lastAssessmentAt} now={props.now} />
        </>
      ) : null}
      {ws.assessmentsEnabled
        ? `; assessed every ${ws.assessmentIntervalMinutes} min${ws.autoRemediate ? ", drift queues a plan" : ""}`
        : "; assessments off"}
    </span>
  );
}

export function WorkspacesPage(props: { viewer: Viewer; workspaces: Workspace[]; pools: Pool[] }) {
  return (
    <Layout title="Workspaces" section="workspaces" viewer={props.viewer}>
      {props.workspaces.length === 0 ? (
        <p class="muted">No workspaces yet. Create them with the API or the outpost CLI.</p>
      ) : (
        <table>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Execution mode</th>
              <th scope="col">Pool</th>
              <th scope="col">Lock</th>
              <th scope="col">Drift</th>
              <th scope="col">Current run</th>
            </tr>
          </thead>
          <tbody>
            {props.workspaces.map((w) => (
              <tr>
                <td>
                  <a href={`/ui/workspaces/${w.id}`}>{w.name}</a>
                </td>
                <td>{w.executionMode}</td>
                <td>
                  <PoolName poolId={w.poolId} pools={props.pools} />
                </td>
                <td>
                  <Lock workspace={w} now={props.viewer.now} />
                </td>
                <td>
                  <DriftBadge workspace={w} />
                </td>
                <td>
                  {w.currentRunId ? (
                    <a class="mono" href={`/ui/runs/${w.currentRunId}`}>
                      {w.currentRunId}
                    </a>
                  ) : (
                    <span class="muted">none</span>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </Layout>
  );
}

export function WorkspacePage(props: {
  viewer: Viewer;
  workspace: Workspace;
  pools: Pool[];
  runs: Run[];
  variables: Variable[];
  effectiveVariables: EffectiveVariable[];
  project: { id: string; name: string } | null;
  /** The scope rule's sentence when the workspace's pool no longer allows it, else null. */
  poolRefusal: string | null;
  teamAccess: TeamAccessEntry[];
  teams: { id: string; name: string }[];
  notice?: string | undefined;
  error?: string | undefined;
}) {
  const { workspace: ws, viewer } = props;
  const isAdmin = viewerMay(viewer, "workspace.update");
  const mayQueue = viewerMay(viewer, "run.queue");
  const mayLock = viewerMay(viewer, "workspace.lock");
  const mayEditVariables = viewerMay(viewer, "variables.write");
  return (
    <Layout title={`Workspace ${ws.name}`} section="workspaces" viewer={viewer}>
      {props.error ? <Notice kind="error">{props.error}</Notice> : null}
      {props.notice ? <Notice kind="ok">{props.notice}</Notice> : null}
      {props.poolRefusal ? (
        <Notice kind="error">
          {props.poolRefusal}: its runs error until the workspace gets another pool or the pool
          allows it again.
        </Notice>
      ) : null}
      <p>{ws.description}</p>
      <dl class="facts">
        <dt>Id</dt>
        <dd class="mono">{ws.id}</dd>
        <dt>Project</dt>
        <dd>
          {props.project ? (
            <a href={`/ui/projects/${props.project.id}`}>{props.project.name}</a>
          ) : (
            <span class="muted">none</span>
          )}
        </dd>
        <dt>Execution mode</dt>
        <dd>{ws.executionMode}</dd>
        <dt>Agent pool</dt>
        <dd>
          <PoolName poolId={ws.poolId} pools={props.pools} />
        </dd>
        <dt>Engine</dt>
        <dd>
          {ws.engine} {ws.engineVersion}
        </dd>
        {ws.stackName ? (
          <>
            <dt>Stack</dt>
            <dd class="mono">{ws.stackName}</dd>
          </>
        ) : null}
        <dt>State</dt>
        <dd>
          {ws.stateBackend === "workspace"
            ? "in the workspace's own backend (PULUMI_BACKEND_URL); Outpost keeps no checkpoint"
            : "kept by Outpost"}
        </dd>
        <dt>Auto-apply</dt>
        <dd>{ws.autoApply ? "yes" : "no"}</dd>
        <dt>Workload identity</dt>
        <dd>{workloadIdentityText(ws)}</dd>
        <dt>Drift</dt>
        <dd>
          <Drift workspace={ws} now={viewer.now} />
        </dd>
        <dt>Lock</dt>
        <dd>
          <Lock workspace={ws} now={viewer.now} />
        </dd>
        <dt>Current run</dt>
        <dd>
          {ws.currentRunId ? (
            <a class="mono" href={`/ui/runs/${ws.currentRunId}`}>
              {ws.currentRunId}
            </a>
          ) : (
            <span class="muted">none</span>
          )}
        </dd>
      </dl>
      {mayQueue || mayLock ? (
        <div class="row">
          {ws.executionMode === "agent" && mayQueue ? (
            <form method="post" action={`/ui/workspaces/${ws.id}/runs`}>
              <Csrf token={viewer.csrf} />
              <fieldset>
                <legend>Queue a run</legend>
                <div class="row">
                  <div>
                    <label for="run-operation">Operation</label>
                    <select id="run-operation" name="operation">
                      <option value="apply">plan and apply</option>
                      <option value="plan">plan only (speculative)</option>
                      <option value="destroy">destroy</option>
                      <option value="refresh">refresh (record drift only)</option>
                    </select>
                  </div>
                  <div>
                    <label for="run-message">Message</label>
                    <input id="run-message" name="message" maxlength={2000} />
                  </div>
                  <button type="submit">Queue run</button>
                </div>
              </fieldset>
            </form>
          ) : null}
          {mayLock ? (
            <form method="post" action={`/ui/workspaces/${ws.id}/${ws.lock ? "unlock" : "lock"}`}>
              <Csrf token={viewer.csrf} />
              <button type="submit" class="secondary">
                {ws.lock ? "Unlock workspace" : "Lock workspace"}
              </button>
            </form>
          ) : null}
        </div>
      ) : null}
      {isAdmin ? (
        <form method="post" action={`/ui/workspaces/${ws.id}/settings`}>
          <Csrf token={viewer.csrf} />
          <fieldset>
            <legend>Execution</legend>
            <div class="row">
              <div>
                <label for="ws-mode">Execution mode</label>
                <select id="ws-mode" name="executionMode">
                  <option value="agent" selected={ws.executionMode === "agent"}>
                    agent (runs on the pool)
                  </option>
                  <option value="local" selected={ws.executionMode === "local"}>
                    local (state only)
                  </option>
                </select>
              </div>
              <div>
                <label for="ws-pool">Agent pool</label>
                <select id="ws-pool" name="poolId">
                  <option value="">(none)</option>
                  {props.pools.map((p) => (
                    <option value={p.id} selected={p.id === ws.poolId}>
                      {p.name}
                    </option>
                  ))}
                </select>
              </div>
              <button type="submit">Save</button>
            </div>
          </fieldset>
        </form>
      ) : null}
      {isAdmin ? <WorkloadIdentityForm viewer={viewer} workspace={ws} /> : null}
      <p>
        <a href={`/ui/workspaces/${ws.id}/state`}>State and outputs</a>
        {isAdmin ? (
          <>
            {" · "}
            <a href={`/ui/workspaces/${ws.id}/notifications`}>Notifications</a>
            {" · "}
            <a href={`/ui/workspaces/${ws.id}/schedules`}>Schedules</a>
          </>
        ) : null}
      </p>
      <h2 id="runs-heading">Recent runs</h2>
      <RunsTable runs={props.runs} now={viewer.now} />
      <h2 id="vars-heading">Variables</h2>
      <VariablesTable
        viewer={viewer}
        workspaceId={ws.id}
        variables={props.variables}
        isAdmin={mayEditVariables}
      />
      {mayEditVariables ? <VariableForm viewer={viewer} workspaceId={ws.id} /> : null}
      <h2 id="effective-heading">What a run gets</h2>
      <p class="muted">
        The workspace's variables merged with the variable sets that reach it, by precedence.
      </p>
      <EffectiveVariablesTable variables={props.effectiveVariables} />
      <TeamAccessSection
        viewer={viewer}
        workspaceId={ws.id}
        teamAccess={props.teamAccess}
        teams={props.teams}
      />
    </Layout>
  );
}

function RunsTable(props: { runs: Run[]; now: number }) {
  if (props.runs.length === 0) {
    return <p class="muted">No runs yet.</p>;
  }
  return (
    <table aria-labelledby="runs-heading">
      <thead>
        <tr>
          <th scope="col">Run</th>
          <th scope="col">Status</th>
          <th scope="col">Operation</th>
          <th scope="col">Message</th>
          <th scope="col">Created</th>
        </tr>
      </thead>
      <tbody>
        {props.runs.map((r) => (
          <tr>
            <td>
              <a class="mono" href={`/ui/runs/${r.id}`}>
                {r.id}
              </a>
            </td>
            <td>
              <Badge status={r.status} />
            </td>
            <td>
              {r.operation}
              {r.isSpeculative ? " (speculative)" : ""}
            </td>
            <td>{r.message}</td>
            <td>
              <Time iso={r.createdAt} now={props.now} />
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
