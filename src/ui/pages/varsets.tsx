/**
 * Variable sets: the list with where each applies, and the editor of one set (its settings, its
 * variables, where it is applied). A sensitive value is write-only here as everywhere.
 */

import type { Variable } from "../../variables/service.ts";
import type { VariableSet } from "../../varsets/model.ts";
import { Csrf, Layout, Notice, type Viewer } from "../layout.tsx";
import { VariableForm, VariablesTable } from "./variables.tsx";

type Named = { id: string; name: string };

function Reach(props: { set: VariableSet }) {
  const { set } = props;
  if (set.global) {
    return <span>every workspace (global)</span>;
  }
  const parts = [
    ...set.projects.map((p) => ({ href: `/ui/projects/${p.id}`, text: `project ${p.name}` })),
    ...set.workspaces.map((w) => ({ href: `/ui/workspaces/${w.id}`, text: `workspace ${w.name}` })),
  ];
  if (parts.length === 0) {
    return <span class="muted">nowhere yet</span>;
  }
  return (
    <>
      {parts.map((p, i) => (
        <>
          {i > 0 ? ", " : ""}
          <a href={p.href}>{p.text}</a>
        </>
      ))}
    </>
  );
}

/** Name, description and the two flags, for creating a set or changing one. */
function SetFields(props: { set?: VariableSet }) {
  return (
    <div class="row">
      {props.set ? null : (
        <div>
          <label for="set-name">Name</label>
          <input id="set-name" name="name" required maxlength={90} />
        </div>
      )}
      <div>
        <label for="set-description">Description</label>
        <input
          id="set-description"
          name="description"
          maxlength={1000}
          value={props.set?.description ?? ""}
        />
      </div>
      <label class="check">
        <input type="checkbox" name="global" value="on" checked={props.set?.global ?? false} />{" "}
        Global (every workspace)
      </label>
      <label class="check">
        <input type="checkbox" name="priority" value="on" checked={props.set?.priority ?? false} />{" "}
        Priority (wins over workspace variables)
      </label>
    </div>
  );
}

export function VariableSetsPage(props: {
  viewer: Viewer;
  sets: VariableSet[];
  mayManage: boolean;
  error?: string | undefined;
}) {
  return (
    <Layout title="Variable sets" section="variable-sets" viewer={props.viewer}>
      {props.error ? <Notice kind="error">{props.error}</Notice> : null}
      {props.sets.length === 0 ? (
        <p class="muted">No variable sets yet.</p>
      ) : (
        <table>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Priority</th>
              <th scope="col">Variables</th>
              <th scope="col">Applied to</th>
            </tr>
          </thead>
          <tbody>
            {props.sets.map((s) => (
              <tr>
                <td>
                  <a href={`/ui/variable-sets/${s.id}`}>{s.name}</a>
                </td>
                <td>{s.priority ? "yes" : "no"}</td>
                <td>{s.variableCount}</td>
                <td>
                  <Reach set={s} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {props.mayManage ? (
        <form method="post" action="/ui/variable-sets">
          <Csrf token={props.viewer.csrf} />
          <fieldset>
            <legend>New variable set</legend>
            <SetFields />
            <button type="submit">Create variable set</button>
          </fieldset>
        </form>
      ) : null}
    </Layout>
  );
}

/** Where the set applies, with forms to apply it further or take it away. */
function Targets(props: {
  viewer: Viewer;
  set: VariableSet;
  projects: Named[];
  workspaces: Named[];
}) {
  const { set } = props;
  const base = `/ui/variable-sets/${set.id}`;
  const linked = [
    ...set.projects.map((p) => ({ type: "project", ...p })),
    ...set.workspaces.map((w) => ({ type: "workspace", ...w })),
  ];
  return (
    <>
      <ul>
        {linked.map((t) => (
          <li>
            {t.type} {t.name}{" "}
            <form method="post" action={`${base}/unapply/${t.type}/${t.id}`} class="inline">
              <Csrf token={props.viewer.csrf} />
              <button type="submit" class="secondary">
                Stop applying
              </button>
            </form>
          </li>
        ))}
      </ul>
      <form method="post" action={`${base}/apply`}>
        <Csrf token={props.viewer.csrf} />
        <fieldset>
          <legend>Apply to a project or a workspace</legend>
          <div class="row">
            <select id="apply-target" name="target" aria-label="Project or workspace">
              {props.projects.map((p) => (
                <option value={`project:${p.id}`}>project {p.name}</option>
              ))}
              {props.workspaces.map((w) => (
                <option value={`workspace:${w.id}`}>workspace {w.name}</option>
              ))}
            </select>
            <button type="submit">Apply</button>
          </div>
        </fieldset>
      </form>
    </>
  );
}

export function VariableSetPage(props: {
  viewer: Viewer;
  set: VariableSet;
  variables: Variable[];
  projects: Named[];
  workspaces: Named[];
  mayManage: boolean;
  notice?: string | undefined;
}) {
  const { set, viewer } = props;
  const base = `/ui/variable-sets/${set.id}`;
  return (
    <Layout title={`Variable set ${set.name}`} section="variable-sets" viewer={viewer}>
      {props.notice ? <Notice kind="ok">{props.notice}</Notice> : null}
      <p>{set.description}</p>
      <dl class="facts">
        <dt>Id</dt>
        <dd class="mono">{set.id}</dd>
        <dt>Priority</dt>
        <dd>{set.priority ? "yes: wins over the workspaces' own variables" : "no"}</dd>
        <dt>Applied to</dt>
        <dd>
          <Reach set={set} />
        </dd>
      </dl>
      <h2 id="set-vars-heading">Variables</h2>
      <VariablesTable
        viewer={viewer}
        base={base}
        variables={props.variables}
        mayEdit={props.mayManage}
        labelledBy="set-vars-heading"
      />
      {props.mayManage ? (
        <>
          <VariableForm viewer={viewer} base={base} idPrefix="set-var" />
          {set.global ? null : (
            <>
              <h2>Where it applies</h2>
              <Targets
                viewer={viewer}
                set={set}
                projects={props.projects}
                workspaces={props.workspaces}
              />
            </>
          )}
          <form method="post" action={`${base}/settings`}>
            <Csrf token={viewer.csrf} />
            <fieldset>
              <legend>Settings (making it global drops its project and workspace links)</legend>
              <SetFields set={set} />
              <button type="submit">Save settings</button>
            </fieldset>
          </form>
          <form method="post" action={`${base}/delete`}>
            <Csrf token={viewer.csrf} />
            <button type="submit" class="danger">
              Delete variable set
            </button>
          </form>
        </>
      ) : null}
    </Layout>
  );
}
