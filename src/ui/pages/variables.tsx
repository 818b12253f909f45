/** Variables: a workspace's table and form, and what a run gets with each value's source. */
import type { EffectiveVariable } from "../../variables/effective.ts";
import type { VariableSource } from "../../variables/precedence.ts";
import type { Variable } from "../../variables/service.ts";
import { Csrf, type Viewer } from "../layout.tsx";

/** The variables; a sensitive value is never rendered, only described as write-only. */
export function VariablesTable(props: {
  viewer: Viewer;
  workspaceId: string;
  variables: Variable[];
  isAdmin: boolean;
}) {
  if (props.variables.length === 0) {
    return <p class="muted">No variables.</p>;
  }
  return (
    <table aria-labelledby="vars-heading">
      <thead>
        <tr>
          <th scope="col">Key</th>
          <th scope="col">Category</th>
          <th scope="col">Value</th>
          <th scope="col">Description</th>
          {props.isAdmin ? <th scope="col">Delete</th> : null}
        </tr>
      </thead>
      <tbody>
        {props.variables.map((v) => (
          <tr>
            <td class="mono">{v.key}</td>
            <td>{v.category}</td>
            <td class="mono">
              {v.sensitive ? <span class="muted">sensitive (write-only)</span> : v.value}
              {v.hcl ? <span class="muted"> (HCL)</span> : null}
            </td>
            <td>{v.description}</td>
            {props.isAdmin ? (
              <td>
                <form
                  method="post"
                  action={`/ui/workspaces/${props.workspaceId}/vars/${v.category}/${encodeURIComponent(v.key)}/delete`}
                >
                  <Csrf token={props.viewer.csrf} />
                  <button
                    type="submit"
                    class="danger"
                    aria-label={`Delete ${v.category} variable ${v.key}`}
                  >
                    Delete
                  </button>
                </form>
              </td>
            ) : null}
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** Sets (creates or replaces) a variable; a sensitive value can be written, never read. */
export function VariableForm(props: { viewer: Viewer; workspaceId: string }) {
  return (
    <form method="post" action={`/ui/workspaces/${props.workspaceId}/vars`}>
      <Csrf token={props.viewer.csrf} />
      <fieldset>
        <legend>Set a variable (replaces one with the same key and category)</legend>
        <div class="row">
          <div>
            <label for="var-key">Key</label>
            <input id="var-key" name="key" required maxlength={128} />
          </div>
          <div>
            <label for="var-value">Value</label>
            <input id="var-value" name="value" autocomplete="off" />
          </div>
          <div>
            <label for="var-category">Category</label>
            <select id="var-category" name="category">
              <option value="terraform">terraform</option>
              <option value="env">env</option>
            </select>
          </div>
          <div>
            <label for="var-description">Description</label>
            <input id="var-description" name="description" maxlength={500} />
          </div>
          <label class="check">
            <input type="checkbox" name="sensitive" value="on" /> Sensitive
          </label>
          <label class="check">
            <input type="checkbox" name="hcl" value="on" /> HCL
          </label>
          <button type="submit">Save variable</button>
        </div>
      </fieldset>
    </form>
  );
}

/** Where a variable comes from, as words: the workspace, or which set and how it reaches it. */
export function SourceText(props: { source: VariableSource }) {
  const s = props.source;
  if (s.type === "workspace") {
    return <span>workspace</span>;
  }
  const how = { global: "global", project: "through the project", workspace: "applied here" }[
    s.scope
  ];
  return (
    <span>
      {s.priority ? "priority " : ""}set <a href={`/ui/variable-sets/${s.id}`}>{s.name}</a> ({how})
    </span>
  );
}

/**
 * What a run of the workspace gets, by the same merge the job lease uses, each with its source;
 * a sensitive value is never rendered.
 */
export function EffectiveVariablesTable(props: { variables: EffectiveVariable[] }) {
  if (props.variables.length === 0) {
    return <p class="muted">A run gets no variables.</p>;
  }
  return (
    <table aria-labelledby="effective-heading">
      <thead>
        <tr>
          <th scope="col">Key</th>
          <th scope="col">Category</th>
          <th scope="col">Value</th>
          <th scope="col">Source</th>
        </tr>
      </thead>
      <tbody>
        {props.variables.map((v) => (
          <tr>
            <td class="mono">{v.key}</td>
            <td>{v.category}</td>
            <td class="mono">
              {v.sensitive ? <span class="muted">sensitive (write-only)</span> : v.value}
            </td>
            <td>
              <SourceText source={v.source} />
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
