/**
 * A workspace's state page: current outputs (sensitive values hidden unless an admin revealed
 * them), the version history with downloads and admin rollback behind a typed confirmation,
 * and the difference between two versions' outputs.
 */
import type { OutputChange, PresentedOutput } from "../../state/outputs.ts";
import type { PresentedVersion } from "../../state/versions.ts";
import { Badge, Csrf, Layout, Notice, Time, type Viewer, viewerMay } from "../layout.tsx";

const HIDDEN = "(sensitive, hidden)";

function show(value: unknown): string {
  return typeof value === "string" ? value : (JSON.stringify(value, null, 2) ?? "null");
}

function OutputsTable(props: { outputs: Record<string, PresentedOutput>; isRevealed: boolean }) {
  const names = Object.keys(props.outputs).sort();
  if (names.length === 0) {
    return <p class="muted">The current state has no outputs.</p>;
  }
  return (
    <div class="table-scroll">
      <table>
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Type</th>
            <th scope="col">Value</th>
          </tr>
        </thead>
        <tbody>
          {names.map((name) => {
            const output = props.outputs[name];
            const hidden = output?.sensitive === true && !props.isRevealed;
            return (
              <tr>
                <td class="mono">{name}</td>
                <td class="mono">{show(output?.type ?? null)}</td>
                <td>
                  {hidden ? (
                    <span class="muted">{HIDDEN}</span>
                  ) : (
                    <pre class="value mono">{show(output?.value)}</pre>
                  )}
                  {output?.sensitive ? <span class="badge">sensitive</span> : null}
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}

function RollbackForm(props: { workspaceId: string; version: PresentedVersion; csrf: string }) {
  const expected = `serial ${props.version.serial}`;
  const id = `rollback-${props.version.id}`;
  return (
    <form
      method="post"
      action={`/ui/workspaces/${props.workspaceId}/state/versions/${props.version.id}/rollback`}
      data-typed-confirm=""
      class="rollback"
    >
      <Csrf token={props.csrf} />
      <label for={id}>
        Type <code>{expected}</code> to roll back
      </label>
      <div class="row">
        <input id={id} name="confirm" autocomplete="off" data-expected={expected} required />
        <button type="submit" class="danger">
          Roll back
        </button>
      </div>
    </form>
  );
}

function writer(version: PresentedVersion) {
  if (version.runId) {
    return (
      <span>
        {version.createdBy?.name ?? "a run"} through{" "}
        <a href={`/ui/runs/${version.runId}`}>{version.runId}</a>
      </span>
    );
  }
  const restored = version.restoredFromId ? ` (rollback to ${version.restoredFromId})` : "";
  return <span>{`${version.createdBy?.name ?? "unknown"}${restored}`}</span>;
}

function VersionsTable(props: {
  workspaceId: string;
  versions: PresentedVersion[];
  isAdmin: boolean;
  csrf: string;
  now: number;
}) {
  if (props.versions.length === 0) {
    return <p class="muted">No state has been written yet.</p>;
  }
  return (
    <div class="table-scroll">
      <table>
        <thead>
          <tr>
            <th scope="col">Serial</th>
            <th scope="col">Lineage</th>
            <th scope="col">Written</th>
            <th scope="col">By</th>
            <th scope="col">Size</th>
            <th scope="col">Actions</th>
          </tr>
        </thead>
        <tbody>
          {props.versions.map((v) => (
            <tr>
              <td>
                {v.serial} {v.isCurrent ? <Badge status="current" /> : null}
                {v.discardedAt ? <Badge status="deleted" /> : null}
              </td>
              <td class="mono" title={v.lineage}>
                {v.lineage.slice(0, 8)}
              </td>
              <td>
                <Time iso={v.createdAt} now={props.now} />
              </td>
              <td>{writer(v)}</td>
              <td>{`${v.sizeBytes.toLocaleString("en")} B`}</td>
              <td>
                <a
                  href={`/ui/workspaces/${props.workspaceId}/state/versions/${v.id}/download`}
                  download=""
                >
                  Download
                </a>
                {props.isAdmin && !v.isCurrent && !v.discardedAt ? (
                  <RollbackForm workspaceId={props.workspaceId} version={v} csrf={props.csrf} />
                ) : null}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

function DiffForm(props: {
  workspaceId: string;
  versions: PresentedVersion[];
  from?: string | undefined;
  to?: string | undefined;
}) {
  const option = (v: PresentedVersion, selected: string | undefined) => (
    <option value={v.id} selected={v.id === selected}>
      {`serial ${v.serial}${v.isCurrent ? " (current)" : ""}`}
    </option>
  );
  return (
    <form method="get" action={`/ui/workspaces/${props.workspaceId}/state`} class="row">
      <div>
        <label for="diff-from">From</label>
        <select id="diff-from" name="from">
          {props.versions.map((v) => option(v, props.from ?? props.versions[1]?.id))}
        </select>
      </div>
      <div>
        <label for="diff-to">To</label>
        <select id="diff-to" name="to">
          {props.versions.map((v) => option(v, props.to ?? props.versions[0]?.id))}
        </select>
      </div>
      <button type="submit" class="secondary">
        Compare outputs
      </button>
    </form>
  );
}

function DiffTable(props: { changes: OutputChange[] }) {
  if (props.changes.length === 0) {
    return <p class="muted">Neither version has outputs.</p>;
  }
  const cellOf = (change: OutputChange, side: "before" | "after") => {
    const absent = side === "before" ? change.change === "added" : change.change === "removed";
    if (absent) {
      return <span class="muted">—</span>;
    }
    return change.sensitive ? (
      <span class="muted">{HIDDEN}</span>
    ) : (
      <pre class="value mono">{show(change[side])}</pre>
    );
  };
  return (
    <div class="table-scroll">
      <table id="outputs-diff">
        <thead>
          <tr>
            <th scope="col">Output</th>
            <th scope="col">Change</th>
            <th scope="col">Before</th>
            <th scope="col">After</th>
          </tr>
        </thead>
        <tbody>
          {props.changes.map((change) => (
            <tr class={`change-${change.change}`}>
              <td class="mono">{change.name}</td>
              <td>{change.change}</td>
              <td>{cellOf(change, "before")}</td>
              <td>{cellOf(change, "after")}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

export type StatePageProps = {
  viewer: Viewer;
  workspace: { id: string; name: string };
  outputs: { outputs: Record<string, PresentedOutput>; isRevealed: boolean; status: string | null };
  versions: PresentedVersion[];
  /** The current version's resource addresses; a sentence when unreadable; null without state. */
  resources: string[] | string | null;
  nextCursor: string | null;
  diff: { from: string; to: string; changes: OutputChange[] } | null;
  notice?: string | undefined;
};

/** The current state's resource addresses, as `terraform state list` prints them. */
function ResourceList(props: { resources: string[] | string | null }) {
  if (props.resources === null) {
    return <p class="muted">No state yet.</p>;
  }
  if (typeof props.resources === "string") {
    return <p class="muted">{props.resources}</p>;
  }
  if (props.resources.length === 0) {
    return <p class="muted">The current state holds no resources.</p>;
  }
  return (
    <ul class="resources">
      {props.resources.map((address) => (
        <li>
          <code>{address}</code>
        </li>
      ))}
    </ul>
  );
}

export function StatePage(props: StatePageProps) {
  // Offered only when there is something to reveal.
  const hasSensitive = Object.values(props.outputs.outputs).some((o) => o?.sensitive === true);
  const mayReveal = hasSensitive && viewerMay(props.viewer, "state.reveal");
  const mayRollBack = viewerMay(props.viewer, "state.rollback");
  const base = `/ui/workspaces/${props.workspace.id}`;
  return (
    <Layout title={`State of ${props.workspace.name}`} section="workspaces" viewer={props.viewer}>
      <p>
        <a href={base}>← Workspace {props.workspace.name}</a>
      </p>
      {props.notice ? <Notice kind="ok">{props.notice}</Notice> : null}
      <h2>Current outputs</h2>
      {props.outputs.status === "encrypted" ? (
        <Notice>The state is encrypted by the client; its outputs cannot be read here.</Notice>
      ) : null}
      <OutputsTable outputs={props.outputs.outputs} isRevealed={props.outputs.isRevealed} />
      {mayReveal && !props.outputs.isRevealed ? (
        <form method="post" action={`${base}/state/reveal`} class="inline">
          <Csrf token={props.viewer.csrf} />
          <button type="submit" class="secondary">
            Reveal sensitive values (recorded in the audit log)
          </button>
        </form>
      ) : null}
      <h2>Resources</h2>
      <ResourceList resources={props.resources} />
      <h2>Versions</h2>
      <VersionsTable
        workspaceId={props.workspace.id}
        versions={props.versions}
        isAdmin={mayRollBack}
        csrf={props.viewer.csrf}
        now={props.viewer.now}
      />
      {props.nextCursor ? (
        <p>
          <a href={`${base}/state?cursor=${encodeURIComponent(props.nextCursor)}`}>
            Older versions
          </a>
        </p>
      ) : null}
      {props.versions.length > 1 ? (
        <>
          <h2>Compare outputs</h2>
          <DiffForm
            workspaceId={props.workspace.id}
            versions={props.versions}
            from={props.diff?.from}
            to={props.diff?.to}
          />
          {props.diff ? <DiffTable changes={props.diff.changes} /> : null}
        </>
      ) : null}
    </Layout>
  );
}
