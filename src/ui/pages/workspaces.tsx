/**
 * Workspaces: the list, and one workspace with its execution mode and pool, lock, current run,
 * recent runs and variables (sensitive values are write-only: never rendered, only replaced).
 */
import type { ConfigurationVersion } from "../../configuration-versions/service.ts";
import type { EngineVersionOffer } from "../../pools/engine-versions.ts";
import type { presentPool } from "../../pools/model.ts";
import type { presentRun } from "../../runs/present.ts";
import type { EffectiveVariable } from "../../variables/effective.ts";
import type { Variable } from "../../variables/service.ts";
import type { Workspace } from "../../workspaces/service.ts";
import { Badge, Csrf, Layout, Notice, Time, type Viewer, viewerMay } from "../layout.tsx";
import { WorkloadIdentityForm, workloadIdentityText } from "./oidc.tsx";
import { type TeamAccessEntry, TeamAccessSection } from "./team-access.tsx";
import { UploadConfigurationForm } from "./upload-forms.tsx";
import { EffectiveVariablesTable, VariableForm, VariablesTable } from "./variables.tsx";
import {
  BackendBlock,
  ConfigureWorkspaceForm,
  CreateWorkspaceForm,
  DeleteWorkspaceForm,
  QueueRunForm,
} from "./workspace-forms.tsx";

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

export function WorkspacesPage(props: {
  viewer: Viewer;
  workspaces: Workspace[];
  pools: Pool[];
  /** The projects the viewer may create workspaces in; null when it may not create any. */
  projects: { id: string; name: string }[] | null;
  /** The engine versions the pools' agents reported, for the version field's suggestions. */
  engineVersions: EngineVersionOffer[];
  notice?: string | undefined;
}) {
  return (
    <Layout title="Workspaces" section="workspaces" viewer={props.viewer}>
      {props.notice ? <Notice kind="ok">{props.notice}</Notice> : null}
      {props.workspaces.length === 0 ? (
        <p class="muted">No workspaces yet.</p>
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
      {props.projects ? (
        <CreateWorkspaceForm
          viewer={props.viewer}
          pools={props.pools}
          projects={props.projects}
          engineVersions={props.engineVersions}
        />
      ) : null}
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
  projects: { id: string; name: string }[];
  /** The engine versions the pools' agents reported, for the version field's suggestions. */
  engineVersions: EngineVersionOffer[];
  /** The newest configurations first; a queued run uses the first unless another is chosen. */
  configurations: ConfigurationVersion[];
  /** This coordinator's origin, for the backend block. */
  origin: string;
  notice?: string | undefined;
  error?: string | undefined;
}) {
  const { workspace: ws, viewer } = props;
  const isAdmin = viewerMay(viewer, "workspace.update");
  const mayQueue = viewerMay(viewer, "run.queue");
  const mayLock = viewerMay(viewer, "workspace.lock");
  const mayEditVariables = viewerMay(viewer, "variables.write");
  const mayUpload = viewerMay(viewer, "configuration.upload");
  const mayDelete = viewerMay(viewer, "workspace.delete");
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
            <QueueRunForm viewer={viewer} workspace={ws} configurations={props.configurations} />
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
      {ws.executionMode === "local" ? <BackendBlock workspace={ws} origin={props.origin} /> : null}
      {mayUpload ? <UploadConfigurationForm viewer={viewer} workspace={ws} /> : null}
      {isAdmin ? (
        <ConfigureWorkspaceForm
          viewer={viewer}
          workspace={ws}
          pools={props.pools}
          projects={props.projects}
          engineVersions={props.engineVersions}
        />
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
        base={`/ui/workspaces/${ws.id}`}
        variables={props.variables}
        mayEdit={mayEditVariables}
        labelledBy="vars-heading"
      />
      {mayEditVariables ? (
        <VariableForm viewer={viewer} base={`/ui/workspaces/${ws.id}`} idPrefix="var" />
      ) : null}
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
      {mayDelete ? <DeleteWorkspaceForm viewer={viewer} workspace={ws} /> : null}
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
