/**
 * Every run of the organization the viewer may read, newest first: filters (status, workspace,
 * project, pool, agent, source) as a GET form, so a filtered list is a link; pending runs say why they
 * wait, and each run names the agents of its phases.
 */

import { RUN_SOURCES, RUN_STATUSES } from "../../runs/model.ts";
import type { presentRun } from "../../runs/present.ts";
import { Badge, Layout, Time, type Viewer } from "../layout.tsx";

type Run = ReturnType<typeof presentRun>;

export type RunListFilters = {
  status?: string | undefined;
  workspace?: string | undefined;
  project?: string | undefined;
  pool?: string | undefined;
  agent?: string | undefined;
  source?: string | undefined;
};

function Choice(props: {
  name: string;
  label: string;
  value?: string | undefined;
  options: readonly string[];
}) {
  return (
    <label>
      {props.label}{" "}
      <select name={props.name}>
        <option value="">any</option>
        {props.options.map((o) => (
          <option value={o} selected={o === props.value}>
            {o}
          </option>
        ))}
      </select>
    </label>
  );
}

function Text(props: {
  name: string;
  label: string;
  value?: string | undefined;
  placeholder: string;
}) {
  return (
    <label>
      {props.label}{" "}
      <input
        type="text"
        name={props.name}
        value={props.value ?? ""}
        placeholder={props.placeholder}
      />
    </label>
  );
}

/** The link to the next page: the same filters and the cursor. */
function nextHref(filters: RunListFilters, cursor: string): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(filters)) {
    if (value) {
      params.set(key, value);
    }
  }
  params.set("cursor", cursor);
  return `/ui/runs?${params.toString()}`;
}

export function RunListPage(props: {
  viewer: Viewer;
  runs: Run[];
  workspaceNames: Map<string, string>;
  filters: RunListFilters;
  nextCursor: string | null;
}) {
  const { filters } = props;
  return (
    <Layout title="Runs" section="runs" viewer={props.viewer}>
      <form method="get" action="/ui/runs" class="filters" aria-label="Filter runs">
        <Choice name="status" label="Status" value={filters.status} options={RUN_STATUSES} />
        <Choice name="source" label="Source" value={filters.source} options={RUN_SOURCES} />
        <Text
          name="workspace"
          label="Workspace"
          value={filters.workspace}
          placeholder="name or ws_…"
        />
        <Text name="project" label="Project" value={filters.project} placeholder="name or prj_…" />
        <Text name="pool" label="Pool" value={filters.pool} placeholder="pool_…" />
        <Text name="agent" label="Agent" value={filters.agent} placeholder="agt_…" />
        <button type="submit">Filter</button>
      </form>
      {props.runs.length === 0 ? (
        <p class="muted">No runs match.</p>
      ) : (
        <table aria-label="Runs">
          <thead>
            <tr>
              <th scope="col">Run</th>
              <th scope="col">Workspace</th>
              <th scope="col">Status</th>
              <th scope="col">Operation</th>
              <th scope="col">Source</th>
              <th scope="col">Agents</th>
              <th scope="col">Why it waits</th>
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
                  <a href={`/ui/workspaces/${r.workspaceId}`}>
                    {props.workspaceNames.get(r.workspaceId) ?? r.workspaceId}
                  </a>
                </td>
                <td>
                  <Badge status={r.status} />
                </td>
                <td>
                  {r.operation}
                  {r.isSpeculative ? " (speculative)" : ""}
                </td>
                <td>{r.source}</td>
                <td>
                  {r.jobs.length === 0 ? (
                    <span class="muted">none yet</span>
                  ) : (
                    r.jobs.map((j) => (
                      <div>
                        {j.phase}: <span class="mono">{j.agent.name ?? j.agent.id}</span>
                      </div>
                    ))
                  )}
                </td>
                <td>{r.waitingReason ?? <span class="muted">—</span>}</td>
                <td>
                  <Time iso={r.createdAt} now={props.viewer.now} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {props.nextCursor ? (
        <p>
          <a href={nextHref(filters, props.nextCursor)}>Older runs</a>
        </p>
      ) : null}
    </Layout>
  );
}
